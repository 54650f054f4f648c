"""The Train tab's pre-flight panel: what the run will cost before it starts.

It shows :class:`~workbench.tasks.preflight.Estimate` as the CLI's ``--dry-run`` prints it, and,
when the projected peak memory exceeds what is free, the warning with its two remedies as
buttons: train on a sample (sets the form's sample size to the suggested number of lines) or count
with the cluster recipe (says how). The estimate is computed off the GUI thread
(:mod:`workbench.ui.jobs`; the first one on a machine also calibrates it, a few seconds).
What it leaves out: deciding when to estimate (the panel asks before a long run) and the
estimate itself (:mod:`workbench.tasks.preflight`).
"""

from __future__ import annotations

import html

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QGroupBox, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from workbench.tasks.preflight import CLUSTER_RECIPE, Estimate, estimate, suggest_sample_lines
from workbench.tasks.spec import RunSpec
from workbench.ui import style
from workbench.ui.jobs import JobRunner


class PreflightPanel(QGroupBox):
    """Estimate button, the estimate's lines, and the memory warning with its remedies."""

    estimated = Signal(object)        # the Estimate (on the GUI thread)
    failed = Signal(str)
    sample_requested = Signal(int)    # lines: the "Train on a sample" remedy

    def __init__(self, parent: QWidget | None = None):
        super().__init__("Pre-flight", parent)
        self.setAccessibleName("Pre-flight estimate")
        self.jobs = JobRunner(self, max_threads=1)
        self.estimate: Estimate | None = None
        self.spec_key = ""  # the spec the estimate is of (its JSON)
        layout = QVBoxLayout(self)
        head = QHBoxLayout()
        self.estimate_button = QPushButton("Estimate cost")
        self.estimate_button.setToolTip("Read a sample of the corpus and project the distinct pre-tokens, the peak "
                                        "memory and the time of this run (as workbench train --dry-run)")
        head.addWidget(self.estimate_button)
        head.addStretch(1)
        layout.addLayout(head)
        self.text = QLabel("Shown before a long run; press Estimate cost for any run.")
        self.text.setWordWrap(True)
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.text.setAccessibleName("Estimate")
        layout.addWidget(self.text)
        self.warning = QLabel()
        self.warning.setWordWrap(True)
        self.warning.setAccessibleName("Memory warning")
        self.warning.setVisible(False)
        layout.addWidget(self.warning)
        remedies = QHBoxLayout()
        self.sample_button = QPushButton("Train on a sample")
        self.sample_button.setToolTip("Set Sample lines to a number whose projected peak fits in the free memory")
        self.cluster_button = QPushButton("Cluster recipe…")
        self.cluster_button.setToolTip(f"Count the corpus on a cluster ({CLUSTER_RECIPE}) and train from its table")
        remedies.addWidget(self.sample_button)
        remedies.addWidget(self.cluster_button)
        remedies.addStretch(1)
        self.remedies = QWidget()
        self.remedies.setLayout(remedies)
        remedies.setContentsMargins(0, 0, 0, 0)
        self.remedies.setVisible(False)
        layout.addWidget(self.remedies)
        self.sample_button.clicked.connect(self._sample)
        self.cluster_button.clicked.connect(self._cluster)

    def request(self, spec: RunSpec) -> None:
        """Estimate ``spec`` in the background; :attr:`estimated` or :attr:`failed` follows."""
        key = spec.to_json()
        self.spec_key = key
        self.estimate = None
        self.text.setText("Estimating: reading a sample of the corpus…")
        self.warning.setVisible(False)
        self.remedies.setVisible(False)
        self.estimate_button.setEnabled(False)

        def done(result: object) -> None:
            self.estimate_button.setEnabled(True)
            if key != self.spec_key or not isinstance(result, Estimate):
                return
            self.show_estimate(result, key)
            self.estimated.emit(result)

        def error(message: str) -> None:
            self.estimate_button.setEnabled(True)
            self.text.setText(f"Could not estimate: {html.escape(message)}")
            self.failed.emit(message)

        self.jobs.submit(lambda: estimate(spec), done, error, key="preflight")

    def is_fresh(self, spec: RunSpec) -> bool:
        return self.estimate is not None and self.spec_key == spec.to_json()

    def show_estimate(self, est: Estimate, key: str = "") -> None:
        self.estimate = est
        self.spec_key = key or self.spec_key
        lines = [line for line in est.text() if not line.startswith("warning:")]
        self.text.setText("<br>".join(html.escape(line) for line in lines))
        self.text.setTextFormat(Qt.TextFormat.RichText)
        warning = est.warning()
        self.warning.setVisible(bool(warning))
        self.remedies.setVisible(bool(warning))
        if warning:
            colour = style.error_colour().name()
            self.warning.setText(f"<b style='color:{colour}'>⚠ Not enough memory.</b> {html.escape(warning)}")

    def _sample(self) -> None:
        if self.estimate is not None:
            self.sample_requested.emit(suggest_sample_lines(self.estimate))

    def _cluster(self) -> None:
        self.warning.setText(self.warning.text() + "<br>" + html.escape(
            f"python {CLUSTER_RECIPE} FILES --out corpus.wordcounts.tsv --pretokenizer PRESET, then add "
            "corpus.wordcounts.tsv in the Corpus tab instead of the text files"))
        self.cluster_button.setEnabled(False)

    def shutdown(self) -> None:
        self.jobs.shutdown()
