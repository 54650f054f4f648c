"""The Train panel: settings form, Start/Pause/Resume/Cancel, live plots and the run history.

A run is a child process of the app's own entry point (``workbench train --spec RUN.json
--progress json``, see :class:`~workbench.ui.train.process.TrainingProcess`): the form and the
Corpus tab's files (each with the reader options it was checked with) make one
:class:`~workbench.tasks.spec.RunSpec`. A setting the spec refuses (:class:`ConfigError`, here or
from the child) is shown with its form control focused and marked. Its JSON lines give the run id and the
progress bar's numbers; the plotted points are read back from the project file
(``ProjectStore.steps(run_id, since_step=last)`` for merges, ``ProjectStore.run_steps`` for Unigram
steps and WordPiece scores — :func:`~workbench.tasks.train.step_value` says which) on a 100 ms
timer, so what the plots show is exactly what is stored. Selecting runs in the history overlays
their curves.

What it leaves out: training itself (the child does it) and the merge table (the Merges panel).
"""

from __future__ import annotations

import html
import logging
import time
from functools import partial
from pathlib import Path

from PySide6.QtCore import Qt, QTimer, Signal, Slot
from PySide6.QtWidgets import (
    QButtonGroup,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QFrame,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QRadioButton,
    QScrollArea,
    QSizePolicy,
    QSpinBox,
    QSplitter,
    QStackedWidget,
    QStyle,
    QVBoxLayout,
    QWidget,
)

from workbench.core.pretokenize import PRESETS
from workbench.core.superbpe import transition_step
from workbench.errors import ConfigError, WorkbenchError
from workbench.store import RunInfo
from workbench.tasks import preflight
from workbench.tasks.models import FAMILIES, ModelFamily, ProgressRule, family
from workbench.tasks.sample_report import has_sampled_runs, sample_overlaps_at
from workbench.tasks.spec import ModelOption, RunSpec, check_option_value
from workbench.tasks.train import step_value
from workbench.ui import style, text
from workbench.ui.dialogs import fit_title
from workbench.ui.empty_state import EmptyState
from workbench.ui.jobs import JobRunner, SplitPreviewer
from workbench.ui.project_session import ProjectSession, open_read
from workbench.ui.settings import AppSettings
from workbench.ui.train.extend_form import ExtendBox, ExtensionReport
from workbench.ui.train.plots import StoredCurve, TrainingPlots, stored_curve
from workbench.ui.train.preflight_panel import PreflightPanel
from workbench.ui.train.process import (
    TrainingProcess,
    TrainOutcome,
    extend_command,
    spec_command,
    write_spec,
)
from workbench.ui.train.run_history import RunHistory
from workbench.ui.train.special_roles import SpecialRolesBox

PRESET_LABELS = {
    "gpt2": "GPT-2 — words, numbers, punctuation; spaces kept",
    "cl100k": "GPT-4 cl100k — digits in groups of 3",
    "o200k": "GPT-4o o200k — case-aware words",
    "whitespace": "Whitespace — words and punctuation; spaces dropped",
    "digits": "GPT-2 with single digits",
    "none": "None — each line/document is one piece",
    "metaspace": "Metaspace — ▁ marks spaces (SentencePiece)",
}
NORMALIZER_CHOICES = ("none", "nfc", "nfkc", "lower", "strip-accents", "nfkc,lower", "bert", "bert-lower")
DEFAULT_SAMPLE = "Hello world! Tokenizers split 12345 words — Привет, 世界 👋"
POLL_MS = 100
PLOT_POINTS = 20_000  # at most this many steps of a stored run are read for its curves
MERGES_REFRESH_S = 0.5
SETTLE_S = 30.0  # how long a finished run is read again for its last batches (the writer's own retry limit)

log = logging.getLogger(__name__)


def ask(parent: QWidget, title: str, message: str, buttons, default) -> QMessageBox.StandardButton:
    """A modal question; one place so tests can answer it."""
    box = QMessageBox(QMessageBox.Icon.Question, title, message, buttons, parent)
    box.setDefaultButton(default)
    fit_title(box)
    return QMessageBox.StandardButton(box.exec())


def _corpus_bytes(spec: RunSpec) -> int:
    """The corpus files' size on disk (a file that cannot be read counts 0: the run will say why)."""
    total = 0
    for f in spec.files:
        try:
            total += Path(f.path).expanduser().stat().st_size
        except OSError:
            pass
    return total


def _legacy_model(saved: dict) -> str:
    """The model a form state saved before the model was kept was set up for: the family whose
    own units, pre-tokenizer and tie-break it holds (a Unigram form came back as BPE with
    Unigram's settings, and F5 trained what nobody chose), else BPE."""
    for fam in FAMILIES.values():
        if fam.name != "bpe" and all(saved.get(k) == fam.defaults[k] for k in ("units", "pretokenizer", "tie_break")):
            return fam.name
    return "bpe"


#: What the empty plot area says in each mode (its button starts that mode's run).
_EMPTY_BODY = {
    "train": "Set up the run on the left and press Train. The curves fill in while it trains; select finished "
             "runs below to compare them.",
    "extend": "Pick the tokenizer to extend on the left and press Extend. The new merges are plotted after the "
              "base's as they are made.",
}


class TrainingPanel(QWidget):
    """Settings, controls, live plots and history for the project the session has open."""

    run_started = Signal(int)            # run id
    run_finished = Signal(int, str)      # run id (0 if none was created), status
    steps_arrived = Signal(int)          # run id: new merges are in the store (rate-limited)
    training_changed = Signal(bool)      # a child process is running
    message = Signal(str)                # a status-bar line
    curve_read = Signal(int)             # run id: a stored run's points arrived from the worker (tests wait on it)

    def __init__(self, session: ProjectSession, corpus_panel=None, settings: AppSettings | None = None,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.session = session
        self.corpus = corpus_panel
        self.settings = settings or AppSettings()
        self.process = TrainingProcess(self)
        self.live_run: int | None = None
        self.target = 0
        self._target_vocab = 0
        self._first_vocab = 0
        self._rule = family("bpe").progress  # how the run in progress tells its progress (its family's)
        self._shown_model = "bpe"  # the model the form was last set up for (its defaults, its rows)
        self.last_outcome: TrainOutcome | None = None
        self._last_progress: dict = {}
        self._merge_cache: dict[tuple[int, int], str] = {}
        self._kinds: dict[int, str] = {}  # run id → what its step value is (tasks.train.step_value)
        self._plot_every: dict[int, int] = {}  # run id → plot every n-th step (long stored runs)
        self._last_merges_signal = 0.0
        self._pending_merge_signal = False
        self._corpus_paths: dict[int, str] = {}
        self._click_time: float | None = None
        self._next_redraw = 0.0
        self.first_point_latency: float | None = None
        self.marked_field = ""  # the RunSpec field whose control is marked as wrong
        self._spec_file: Path | None = None  # the child's RunSpec JSON, deleted when the run ends
        self._start_after_estimate = False  # a long run waits for its pre-flight estimate
        self._plot_start: dict[int, int] = {}  # run id → steps not plotted (an extension's base merges)
        self.report_dialog: ExtensionReport | None = None  # the last extension's report

        self.previewer = SplitPreviewer(self)
        self.previewer.ready.connect(self._on_preview)
        self._preview_timer = QTimer(self)
        self._preview_timer.setSingleShot(True)
        self._preview_timer.setInterval(150)
        self._preview_timer.timeout.connect(self._request_preview)

        self.poll_timer = QTimer(self)
        self.poll_timer.setInterval(POLL_MS)
        self.poll_timer.timeout.connect(self._tick)
        self._settling: TrainOutcome | None = None  # a run that ended before the store showed all of it
        self._settle_deadline = 0.0
        self.settle_timer = QTimer(self)
        self.settle_timer.setInterval(POLL_MS)
        self.settle_timer.timeout.connect(self._settle_tick)

        self._build()
        self._restore_form()
        self._connect()
        self._connect_preflight()
        self._update_controls()
        self._update_size_mode()
        self._update_model_options()
        self._schedule_preview()

    # ---- layout --------------------------------------------------------------------------------
    def _build(self) -> None:
        outer = QHBoxLayout(self)
        outer.setContentsMargins(8, 8, 8, 6)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setObjectName("trainSplitter")
        self.splitter.setChildrenCollapsible(False)
        outer.addWidget(self.splitter)

        # left: the form and the controls
        left = QWidget()
        ll = QVBoxLayout(left)
        ll.setContentsMargins(0, 0, 6, 0)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        form_host = QWidget()
        fl = QVBoxLayout(form_host)
        fl.setContentsMargins(0, 0, 4, 0)

        mode_row = QHBoxLayout()
        self.scratch_radio = QRadioButton("Train from scratch")
        self.extend_radio = QRadioButton("Extend an existing tokenizer")
        self.extend_radio.setToolTip("Add tokens to a tokenizer you already use (cl100k, a tokenizer.json, a BERT "
                                     "vocab.txt, a SentencePiece .model, a run): every id of it is kept")
        self.mode_group = QButtonGroup(self)
        self.mode_group.addButton(self.scratch_radio)
        self.mode_group.addButton(self.extend_radio)
        self.scratch_radio.setChecked(True)
        mode_row.addWidget(self.scratch_radio)
        mode_row.addWidget(self.extend_radio)
        mode_row.addStretch(1)
        fl.addLayout(mode_row)
        self.extend_box = ExtendBox()
        self.extend_box.setVisible(False)
        fl.addWidget(self.extend_box)

        model_box = QGroupBox("Model")
        self.model_box = model_box
        mf = self._form(model_box)
        self.model_combo = QComboBox()
        for fam in FAMILIES.values():  # the model families' descriptors (workbench.tasks.models)
            self.model_combo.addItem(fam.title, fam.name)
        self.model_combo.setToolTip("\n".join(f"{fam.label} {fam.summary}" for fam in FAMILIES.values()))
        mf.addRow("Model", self.model_combo)
        self.units_combo = QComboBox()
        self.units_combo.addItem("UTF-8 bytes (256 base symbols)", "bytes")
        self.units_combo.addItem("Characters (the corpus alphabet)", "chars")
        mf.addRow("Units", self.units_combo)
        self.eow_combo = QComboBox()
        self.eow_combo.setEditable(True)
        self.eow_combo.addItems(["", "</w>"])
        eow_edit = self.eow_combo.lineEdit()  # an editable combo always has one
        if eow_edit is not None:
            eow_edit.setPlaceholderText("none")
        self.eow_combo.setToolTip("A marker appended to every word (characters only), as in the classic papers")
        mf.addRow("End-of-word", self.eow_combo)
        # One control per model option (each family's descriptor), shown for its model.
        self.option_widgets: dict[str, QWidget] = {}
        self._option_rows: list[tuple[str, QLabel, QWidget]] = []
        for fam in FAMILIES.values():
            for option in fam.options:
                widget = self._option_widget(option)
                label = QLabel(option.label)
                mf.addRow(label, widget)
                self.option_widgets[option.name] = widget
                self._option_rows.append((fam.name, label, widget))
        fl.addWidget(model_box)

        split_box = QGroupBox("Text before the model")
        self.split_box = split_box
        sf = self._form(split_box)
        self.pre_combo = QComboBox()
        for name in PRESETS:
            self.pre_combo.addItem(PRESET_LABELS.get(name, name), name)
        self.pre_combo.addItem("Custom regular expression…", "custom")
        sf.addRow("Pre-tokenizer", self.pre_combo)
        self.pattern_edit = QLineEdit()
        self.pattern_edit.setFont(style.monospace_font())
        self.pattern_edit.setPlaceholderText(r"e.g. \w+|[^\w\s]+|\s+")
        self.pattern_row_label = QLabel("Pattern")
        sf.addRow(self.pattern_row_label, self.pattern_edit)
        self.normalizer_combo = QComboBox()
        self.normalizer_combo.setEditable(True)
        self.normalizer_combo.addItems(NORMALIZER_CHOICES)
        self.normalizer_combo.setToolTip("none, nfc, nfd, nfkc, nfkd, lower, strip-accents; comma-separated to combine")
        sf.addRow("Normalizer", self.normalizer_combo)
        self.sample_edit = QLineEdit()
        self.sample_edit.setPlaceholderText("a sample line to split")
        sf.addRow("Sample", self.sample_edit)
        self.preview_label = QLabel()
        self.preview_label.setWordWrap(True)
        self.preview_label.setTextFormat(Qt.TextFormat.RichText)
        self.preview_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Minimum)
        self.preview_label.setMinimumHeight(40)
        self.preview_label.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        sf.addRow("Split", self.preview_label)
        self.form_error = QLabel()
        self.form_error.setWordWrap(True)
        self.form_error.setVisible(False)
        sf.addRow(self.form_error)
        fl.addWidget(split_box)

        size_box = QGroupBox("How far")
        self.size_box = size_box
        zf = self._form(size_box)
        size_row = QHBoxLayout()
        self.by_vocab = QRadioButton("Vocabulary size")
        self.by_merges = QRadioButton("Merges")
        self.size_group = QButtonGroup(self)
        self.size_group.addButton(self.by_vocab)
        self.size_group.addButton(self.by_merges)
        self.by_vocab.setChecked(True)
        size_row.addWidget(self.by_vocab)
        size_row.addWidget(self.by_merges)
        size_row.addStretch(1)
        zf.addRow("Stop at", size_row)
        self.size_spin = QSpinBox()
        self.size_spin.setRange(1, 2_000_000)
        self.size_spin.setGroupSeparatorShown(True)
        self.size_spin.setValue(family("bpe").defaults["vocab_size"])
        self.size_spin.setAccelerated(True)
        zf.addRow("", self.size_spin)
        self.min_freq = QSpinBox()
        self.min_freq.setRange(1, 1_000_000_000)
        self.min_freq.setValue(1)
        self.min_freq.setToolTip("Stop early when no pair occurs this often")
        zf.addRow("Min frequency", self.min_freq)
        self.special_edit = QLineEdit()
        self.special_edit.setPlaceholderText("e.g. <|endoftext|> <pad>  (space-separated)")
        self.special_edit.setToolTip("Special tokens get the first ids and are never split or merged")
        zf.addRow("Special tokens", self.special_edit)
        self.tie_combo = QComboBox()
        self.tie_combo.addItem("first seen (textbook)", "first-seen")
        self.tie_combo.addItem("Hugging Face tokenizers", "hf")
        self.tie_combo.setToolTip("Which pair wins when several are equally frequent.\n"
                                  "first seen: the pair that occurs earliest in the corpus (textbook loop)\n"
                                  "Hugging Face: the rule of tokenizers' BpeTrainer (identical merges)")
        zf.addRow("Tie-break", self.tie_combo)
        self.sequences_combo = QComboBox()
        self.sequences_combo.addItem("each line", "lines")
        self.sequences_combo.addItem("each document", "documents")
        self.sequences_combo.setToolTip("What one training sequence is; pre-tokens never cross its boundary.\n"
                                        "each line: a line with its line break, as tokenizers' train(files) and "
                                        "sentencepiece read text files\n"
                                        "each document: a whole text file, a JSONL record or a CSV cell")
        self.sequences_combo.setAccessibleName("Sequences")
        zf.addRow("Sequences", self.sequences_combo)
        self.sample_lines_spin = QSpinBox()
        self.sample_lines_spin.setRange(0, 2_000_000_000)
        self.sample_lines_spin.setSingleStep(10_000)
        self.sample_lines_spin.setGroupSeparatorShown(True)
        self.sample_lines_spin.setSpecialValueText("all lines")
        self.sample_lines_spin.setAccessibleName("Sample lines")
        self.sample_lines_spin.setToolTip("Train on this many lines drawn evenly from all files (seeded), as "
                                          "sentencepiece's input_sentence_size; all lines when 0")
        zf.addRow("Sample lines", self.sample_lines_spin)
        self.name_edit = QLineEdit()
        self.name_edit.setPlaceholderText("automatic (e.g. bytes BPE V1000 · gpt2)")
        zf.addRow("Run name", self.name_edit)
        #: The control of each common setting a model family may or may not use
        #: (workbench.tasks.models.COMMON_SETTINGS): shown and sent only when its family uses it.
        self.setting_widgets: dict[str, QWidget] = {
            "units": self.units_combo, "end_of_word": self.eow_combo, "tie_break": self.tie_combo,
            "min_frequency": self.min_freq, "sequences": self.sequences_combo, "pretokenizer": self.pre_combo}
        fl.addWidget(size_box)
        self.preflight = PreflightPanel()
        fl.addWidget(self.preflight)
        self.roles_box = SpecialRolesBox()  # roles and template (the descriptors' ROLES, TEMPLATES)
        fl.addWidget(self.roles_box)
        fl.addStretch(1)
        for combo in (self.model_combo, self.units_combo, self.eow_combo, self.pre_combo, self.normalizer_combo,
                      self.tie_combo):
            # Long item texts must not widen the form past the splitter (they elide instead).
            combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            combo.setMinimumContentsLength(10)
        for edit in (self.pattern_edit, self.sample_edit, self.special_edit, self.name_edit):
            edit.setMinimumWidth(120)
        scroll.setWidget(form_host)
        ll.addWidget(scroll, 1)

        controls = QHBoxLayout()
        st = self.style()
        self.start_button = QPushButton(st.standardIcon(QStyle.StandardPixmap.SP_MediaPlay), "Train")
        self.start_button.setToolTip("Start training on the loaded corpus (F5 or Ctrl+Return)")
        f = self.start_button.font()
        f.setBold(True)
        self.start_button.setFont(f)
        self.start_button.setMinimumHeight(30)
        self.pause_button = QPushButton(st.standardIcon(QStyle.StandardPixmap.SP_MediaPause), "Pause")
        self.pause_button.setToolTip("Pause or resume the run (F6)")
        self.cancel_button = QPushButton(st.standardIcon(QStyle.StandardPixmap.SP_MediaStop), "Cancel")
        self.cancel_button.setToolTip("Stop the run; merges made so far are kept (Shift+F5)")
        for b in (self.start_button, self.pause_button, self.cancel_button):
            controls.addWidget(b)
        ll.addLayout(controls)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setValue(0)
        self.progress.setFormat("")
        self.progress.setTextVisible(True)
        ll.addWidget(self.progress)
        self.state_label = QLabel("Ready.")
        self.state_label.setWordWrap(True)
        ll.addWidget(self.state_label)
        self.error_label = QLabel()
        self.error_label.setWordWrap(True)
        self.error_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error_label.setVisible(False)
        ll.addWidget(self.error_label)
        left.setMinimumWidth(330)
        self.splitter.addWidget(left)

        # right: plots over history
        right = QSplitter(Qt.Orientation.Vertical)
        right.setObjectName("trainRightSplitter")
        right.setChildrenCollapsible(False)
        self.right_splitter = right
        self.plot_stack = QStackedWidget()
        self.plot_empty = EmptyState("No run to show yet", _EMPTY_BODY["train"], symbol="↗")
        self.plot_empty_train = self.plot_empty.add_button("Train", self.start, primary=True)
        self.plots = TrainingPlots(self._merge_lookup)
        self.curves = JobRunner(self, max_threads=1)  # a long stored run's curves, read off the GUI thread
        self.plot_stack.addWidget(self.plot_empty)
        self.plot_stack.addWidget(self.plots)
        right.addWidget(self.plot_stack)
        self.history = RunHistory()
        right.addWidget(self.history)
        right.setStretchFactor(0, 3)
        right.setStretchFactor(1, 1)
        self.splitter.addWidget(right)
        self.splitter.setStretchFactor(0, 0)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setSizes([380, 900])
        right.setSizes([520, 200])
        for name, sp in (("train", self.splitter), ("train_right", right)):
            state = self.settings.splitter_state(name)
            if not state.isEmpty():
                sp.restoreState(state)
            sp.splitterMoved.connect(lambda *_a, n=name, s=sp: self.settings.set_splitter_state(n, s.saveState()))
        self._style_labels()

    @staticmethod
    def _form(box: QGroupBox) -> QFormLayout:
        form = QFormLayout(box)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        form.setLabelAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return form

    def _connect(self) -> None:
        self.start_button.clicked.connect(lambda _c=False: self.start())
        self.extend_radio.toggled.connect(lambda _c: self._update_mode())
        self.pause_button.clicked.connect(lambda _c=False: self.toggle_pause())
        self.cancel_button.clicked.connect(lambda _c=False: self.cancel())
        self.units_combo.currentIndexChanged.connect(lambda _i: self._update_eow())
        self.units_combo.currentIndexChanged.connect(lambda _i: self._schedule_preview())
        self.pre_combo.currentIndexChanged.connect(lambda _i: self._pre_changed())
        self.pattern_edit.textChanged.connect(lambda _t: self._schedule_preview())
        self.normalizer_combo.currentTextChanged.connect(lambda _t: self._schedule_preview())
        self.sample_edit.textChanged.connect(lambda _t: self._schedule_preview())
        self.by_vocab.toggled.connect(lambda _c: self._update_size_mode())
        self.model_combo.currentIndexChanged.connect(lambda _i: self._update_model_options())
        self.model_combo.currentIndexChanged.connect(lambda _i: self._schedule_preview())
        self.model_combo.activated.connect(lambda _i: self._apply_model_defaults())  # the user's choice only
        self.process.progress_line.connect(self._on_event)
        self.process.run_started.connect(self._on_run_started)
        self.process.state_changed.connect(self._on_state)
        self.process.finished.connect(self._on_finished)
        self.history.selection_changed.connect(self._on_history_selection)
        self.history.rename_requested.connect(self._rename)
        self.history.delete_requested.connect(self._delete)
        self.session.project_changed.connect(self._on_project_changed)
        self.session.runs_changed.connect(self.reload_history)
        self.plots.redrawn.connect(self._on_redrawn)
        if self.corpus is not None:
            self.corpus.corpus_changed.connect(self._on_corpus_changed)

    # ---- form ------------------------------------------------------------------------------------
    def _connect_preflight(self) -> None:
        self.preflight.estimated.connect(self._on_estimated)
        self.preflight.failed.connect(lambda _m: setattr(self, "_start_after_estimate", False))
        self.preflight.sample_requested.connect(self.sample_lines_spin.setValue)
        self.preflight.estimate_button.clicked.connect(self._estimate_now)

    def _estimate_now(self) -> None:
        try:
            spec = self.run_spec()
            if not spec.files:
                raise ConfigError("files", "add corpus files first (Corpus panel): there is nothing to estimate")
            spec = spec.validate()
        except WorkbenchError as exc:
            self._show_error(str(exc))
            return
        self._show_error("")
        self.preflight.request(spec)

    def _restore_form(self) -> None:
        """The form as it was last left (model, its settings and every family's options), or the
        defaults of BPE. Values a family does not use are restored but neither shown nor sent."""
        saved = self.settings.train_settings
        if not saved:
            self._shown_model = self._family().name
            self._update_eow()
            self._pre_changed()
            return
        model = saved.get("model")
        if model not in FAMILIES:  # a state saved before the model was kept: the family it was set up for
            model = _legacy_model(saved)
        self._set_combo(self.model_combo, model)
        self._shown_model = model
        self._set_combo(self.units_combo, saved.get("units", "bytes"))
        self.eow_combo.setCurrentText(str(saved.get("end_of_word", "")))
        pre = str(saved.get("pretokenizer", "gpt2"))
        if pre in PRESETS:
            self._set_combo(self.pre_combo, pre)
        else:
            self._set_combo(self.pre_combo, "custom")
            self.pattern_edit.setText(pre)
        self.normalizer_combo.setCurrentText(str(saved.get("normalize", "none")))
        if saved.get("merges") and family(model).uses("merges"):
            self.by_merges.setChecked(True)
            self.size_spin.setValue(int(saved["merges"]))
        elif saved.get("vocab_size"):
            self.by_vocab.setChecked(True)
            self.size_spin.setValue(int(saved["vocab_size"]))
        self.min_freq.setValue(int(saved.get("min_frequency") or 1))
        self.special_edit.setText(" ".join(saved.get("special", [])))
        self._set_combo(self.tie_combo, saved.get("tie_break", "first-seen"))
        self._set_combo(self.sequences_combo, saved.get("sequences", "lines"))
        self.roles_box.set_values(saved.get("special_roles") or {}, str(saved.get("template", "none")))
        saved_options = saved.get("options")
        options: dict = saved_options if isinstance(saved_options, dict) else {}
        for fam in FAMILIES.values():
            saved_values = options.get(fam.name)
            values: dict = saved_values if isinstance(saved_values, dict) else {}
            for option in fam.options:
                if option.name in values:
                    try:
                        self._set_option_value(self.option_widgets[option.name],
                                               check_option_value(option, values[option.name]))
                    except ConfigError:
                        pass  # a value this version refuses: the option's default stays
        self._update_eow()
        self._pre_changed()

    def form_state(self) -> dict:
        """What the form holds, as :meth:`_restore_form` reads it back (kept in the app's settings)."""
        pre = self.pre_combo.currentData()
        by_vocab = self.by_vocab.isChecked()
        return {
            "model": self._family().name, "units": self.units_combo.currentData(),
            "end_of_word": self.eow_combo.currentText(),
            "pretokenizer": self.pattern_edit.text() if pre == "custom" else pre,
            "normalize": self.normalizer_combo.currentText().strip() or "none",
            "vocab_size": self.size_spin.value() if by_vocab else None,
            "merges": None if by_vocab else self.size_spin.value(),
            "min_frequency": self.min_freq.value(), "special": self.special_edit.text().split(),
            "tie_break": self.tie_combo.currentData(), "sequences": self.sequences_combo.currentData(),
            "special_roles": self.roles_box.roles(), "template": self.roles_box.template(),
            "options": {fam.name: {o.name: self._option_value(self.option_widgets[o.name]) for o in fam.options}
                        for fam in FAMILIES.values()},
        }

    def save_form(self) -> None:
        self.settings.train_settings = self.form_state()

    def _family(self) -> ModelFamily:
        return family(self.model_combo.currentData() or "bpe")

    @staticmethod
    def _set_combo(combo: QComboBox, value) -> None:
        i = combo.findData(value)
        if i >= 0:
            combo.setCurrentIndex(i)

    @staticmethod
    def _option_widget(option: ModelOption) -> QWidget:
        widget: QWidget
        if option.type is bool:
            widget = QCheckBox()
            widget.setChecked(bool(option.default))
        elif option.choices:
            widget = QComboBox()
            for choice in option.choices:
                widget.addItem(str(choice), choice)
            widget.setCurrentIndex(list(option.choices).index(option.default))
        elif option.type is int:
            widget = QSpinBox()
            widget.setRange(int(option.minimum or 0), int(option.maximum or 1_000_000))
            widget.setValue(int(option.default))
        elif option.type is float:
            widget = QDoubleSpinBox()
            widget.setDecimals(4)
            widget.setRange(option.minimum or 0.0, option.maximum if option.maximum is not None else 1e9)
            widget.setValue(float(option.default))
        else:
            widget = QLineEdit(str(option.default))
        widget.setToolTip(option.help)
        return widget

    @staticmethod
    def _set_option_value(widget: QWidget, value) -> None:
        if isinstance(widget, QCheckBox):
            widget.setChecked(bool(value))
        elif isinstance(widget, QComboBox):
            TrainingPanel._set_combo(widget, value)
        elif isinstance(widget, (QSpinBox, QDoubleSpinBox)):
            widget.setValue(value)
        elif isinstance(widget, QLineEdit):
            widget.setText(str(value))

    @staticmethod
    def _option_value(widget: QWidget):
        if isinstance(widget, QCheckBox):
            return widget.isChecked()
        if isinstance(widget, QComboBox):
            return widget.currentData()
        if isinstance(widget, (QSpinBox, QDoubleSpinBox)):
            return widget.value()
        return widget.text() if isinstance(widget, QLineEdit) else None

    def _update_model_options(self) -> None:
        """Show the chosen family's options and the common settings it uses (its descriptor says
        which); the others are hidden, not just greyed (issue 11). The pre-tokenizer list stays
        visible but disabled for a family with a fixed split (Unigram), so its split is still seen."""
        fam = self._family()
        self.roles_box.set_family(fam)
        for owner, label, widget in self._option_rows:
            label.setVisible(owner == fam.name)
            widget.setVisible(owner == fam.name)
        for setting, widget in self.setting_widgets.items():
            if setting == "pretokenizer":
                continue
            parent = widget.parentWidget()
            layout = parent.layout() if parent is not None else None
            if isinstance(layout, QFormLayout):
                layout.setRowVisible(widget, fam.uses(setting))
        self.by_merges.setVisible(fam.uses("merges"))
        if not fam.uses("merges"):
            self.by_vocab.setChecked(True)  # sized by vocabulary
        self.pre_combo.setToolTip("" if fam.uses("pretokenizer") else fam.why_not["pretokenizer"])
        self._update_controls()

    def _apply_model_defaults(self) -> None:
        """A model chosen by the user brings its usual settings (its descriptor's defaults): BERT's
        pre-tokenizer, normalizer and specials for WordPiece, SentencePiece's for Unigram. The size
        follows too while it is the previous model's default (a size the user typed is kept): BPE's
        1,000 is below the demo corpus's alphabet for WordPiece, which would make no merge at all."""
        fam = self._family()
        previous = FAMILIES.get(self._shown_model, fam)
        self._shown_model = fam.name
        defaults = fam.defaults
        self._set_combo(self.units_combo, defaults["units"])
        self._set_combo(self.pre_combo, defaults["pretokenizer"])
        self.normalizer_combo.setCurrentText(",".join(defaults["normalizer"]) or "none")
        self._set_combo(self.tie_combo, defaults["tie_break"])
        self.special_edit.setText(" ".join(defaults["special_tokens"]))
        self.roles_box.clear()  # roles name the previous family's tokens; its usual ones are one click away
        if self.by_vocab.isChecked() and self.size_spin.value() == previous.defaults["vocab_size"]:
            self.size_spin.setValue(defaults["vocab_size"])
        self._update_eow()
        self._pre_changed()

    def run_spec(self) -> RunSpec:
        """The form plus the Corpus tab's files (each with its own reader options), not yet validated."""
        pre = self.pre_combo.currentData()
        if pre == "custom":
            pre = self.pattern_edit.text()
            if not pre.strip():
                raise ConfigError("pretokenizer", "enter a regular expression for the custom pre-tokenizer")
        norm = self.normalizer_combo.currentText().strip() or "none"
        units = self.units_combo.currentData()
        eow = self.eow_combo.currentText() if units == "chars" else ""
        value = self.size_spin.value()
        by_vocab = self.by_vocab.isChecked()
        fam = self._family()
        options = {o.name: self._option_value(self.option_widgets[o.name]) for o in fam.options}
        files = tuple(self.corpus.files()) if self.corpus is not None else ()
        used = fam.uses  # a setting the family does not use is not sent: the spec takes the family's own
        return RunSpec(files=files, model=fam.name, vocab_size=value if by_vocab else None,
                       merges=None if by_vocab else value, units=units if used("units") else "",
                       end_of_word=eow if used("end_of_word") else "", pretokenizer=pre if used("pretokenizer") else "",
                       normalizer=tuple(norm.split(",")),
                       min_frequency=self.min_freq.value() if used("min_frequency") else None,
                       special_tokens=tuple(self.special_edit.text().split()),
                       tie_break=self.tie_combo.currentData() if used("tie_break") else "",
                       sequences=self.sequences_combo.currentData() if used("sequences") else "",
                       name=self.name_edit.text().strip(),
                       options=options, project=str(self.session.path or ""),
                       sample_lines=self.sample_lines_spin.value() or None,
                       special_roles=self.roles_box.roles(), template=self.roles_box.template())


    def field_widget(self, field: str) -> QWidget | None:
        """The form control that sets a RunSpec field (None for the corpus files and the project)."""
        if field.startswith("options."):
            return self.option_widgets.get(field.removeprefix("options."))
        if field == "pretokenizer" and self.pre_combo.currentData() == "custom":
            return self.pattern_edit
        return {
            **self.setting_widgets, "model": self.model_combo, "vocab_size": self.size_spin,
            "merges": self.size_spin, "normalizer": self.normalizer_combo, "special_tokens": self.special_edit,
            "name": self.name_edit, "sample_lines": self.sample_lines_spin,
            "special_roles": self.roles_box, "template": self.roles_box.template_combo,
        }.get(field)

    def _mark_field(self, field: str) -> None:
        """Focus and mark the control a ConfigError is about; "" clears the mark."""
        old = self.field_widget(self.marked_field) if self.marked_field else None
        if old is not None:
            old.setStyleSheet("")
        self.marked_field = field
        widget = self.field_widget(field) if field else None
        if widget is None:
            return
        colour = style.error_colour(self.palette()).name()
        widget.setStyleSheet(f"border: 1px solid {colour}")
        widget.setFocus(Qt.FocusReason.OtherFocusReason)

    def set_options(self, **values) -> None:
        """Fill the form programmatically (tests, the benchmark)."""
        if "units" in values:
            self._set_combo(self.units_combo, values["units"])
        if "end_of_word" in values:
            self.eow_combo.setCurrentText(values["end_of_word"])
        if "pretokenizer" in values:
            pre = values["pretokenizer"]
            if pre in PRESETS:
                self._set_combo(self.pre_combo, pre)
            else:
                self._set_combo(self.pre_combo, "custom")
                self.pattern_edit.setText(pre)
        if "normalize" in values:
            self.normalizer_combo.setCurrentText(values["normalize"])
        if "vocab_size" in values:
            self.by_vocab.setChecked(True)
            self.size_spin.setValue(values["vocab_size"])
        if "merges" in values:
            self.by_merges.setChecked(True)
            self.size_spin.setValue(values["merges"])
        if "min_frequency" in values:
            self.min_freq.setValue(values["min_frequency"])
        if "special" in values:
            self.special_edit.setText(" ".join(values["special"]))
        if "tie_break" in values:
            self._set_combo(self.tie_combo, values["tie_break"])
        if "sequences" in values:
            self._set_combo(self.sequences_combo, values["sequences"])
        if "name" in values:
            self.name_edit.setText(values["name"])
        if "special_roles" in values or "template" in values:
            self.roles_box.set_values(values.get("special_roles", {}), values.get("template", "none"))

    def _update_eow(self) -> None:
        chars = self.units_combo.currentData() == "chars"
        self.eow_combo.setEnabled(chars)
        self.eow_combo.setToolTip("A marker appended to every word, as in the classic papers" if chars
                                  else "Only for character units")

    def _update_size_mode(self) -> None:
        if self.by_vocab.isChecked():
            self.size_spin.setSuffix(" tokens")
            self.size_spin.setToolTip("Target |V| = base symbols + special tokens + merges")
        else:
            self.size_spin.setSuffix(" merges")
            self.size_spin.setToolTip("Number of merges to learn")

    def _pre_changed(self) -> None:
        custom = self.pre_combo.currentData() == "custom"
        self.pattern_edit.setVisible(custom)
        self.pattern_row_label.setVisible(custom)
        if custom and not self.pattern_edit.text():
            from workbench.core.pretokenize import PRESET_PATTERNS

            self.pattern_edit.setText(PRESET_PATTERNS["gpt2"] or "")
        self._schedule_preview()

    def _schedule_preview(self) -> None:
        self._preview_timer.start()

    def _request_preview(self) -> None:
        pre = self.pre_combo.currentData()
        spec = self.pattern_edit.text() if pre == "custom" else pre
        if pre == "custom" and not spec.strip():
            self._on_preview(None, "enter a regular expression")
            return
        sample = self.sample_edit.text() or self.sample_edit.placeholderText()
        self.previewer.request(spec, self.normalizer_combo.currentText().strip() or "none", sample[:400],
                               self.model_combo.currentData() or "bpe")

    @Slot(object, str)
    def _on_preview(self, pieces, error: str) -> None:
        if error:
            self.preview_label.setText("")
            self._set_form_error(error)
            return
        self._set_form_error("")
        dark = style.is_dark(self.palette())
        colours = (("#274b6d", "#5c4a1f", "#2d5a3d", "#5a2d4f") if dark
                   else ("#d6e9fb", "#fbe7c6", "#d5f2df", "#f6d8ea"))
        spans = []
        for i, piece in enumerate(pieces or []):
            shown = html.escape(text.piece(piece.encode("utf-8", "surrogatepass")))
            spans.append(f"<span style='background-color:{colours[i % len(colours)]}'>{shown}</span>")
        count = len(pieces or [])
        # Zero-width spaces between pieces let a long sample wrap (the pieces themselves hold no spaces).
        body = "&#8203;".join(spans) if spans else "<i>(nothing)</i>"
        self.preview_label.setText(f"<span style='font-family:\"DejaVu Sans Mono\",monospace'>{body}</span>"
                                   f"<br><small>{count} piece{'s' if count != 1 else ''}</small>")
        self.preview_label.setToolTip(" | ".join(pieces or []))

    def preview_text(self) -> str:
        return self.preview_label.text()

    def _set_form_error(self, message: str) -> None:
        marker = "nor a valid regular expression: "
        if marker in message:  # the core names every preset; next to the pattern field the reason is enough
            message = "not a valid regular expression: " + message.split(marker, 1)[1]
        self.form_error.setText(f"⚠ {message}" if message else "")
        self.form_error.setVisible(bool(message))
        self._update_controls()

    def form_error_text(self) -> str:
        return self.form_error.text() if self.form_error.isVisible() else ""

    # ---- run control ---------------------------------------------------------------------------------
    def is_training(self) -> bool:
        return self.process.is_active()

    def start(self) -> bool:
        """Start a run with the form's settings on the corpus panel's files; False if it could not."""
        if self.is_training() or self._opening:
            return False  # while a project opens, the one in front is about to be replaced
        self._show_error("")
        if not self.session.is_open or self.session.path is None:
            self._show_error("Open or create a project first.")
            return False
        if self.session.read_only:
            self._show_error(self.session.note or "The project is read-only: use File ▸ Save As.")
            return False
        self._mark_field("")
        if self.extending():
            return self._start_extension()
        try:
            spec = self.run_spec()
            if not spec.files:
                raise ConfigError("files", "add corpus files first (Corpus panel): there is nothing to train on")
            spec = spec.validate()
        except ConfigError as exc:
            self._show_error(str(exc))
            self._mark_field(exc.field)
            return False
        except WorkbenchError as exc:
            self._show_error(str(exc))
            return False
        if _corpus_bytes(spec) >= preflight.PREFLIGHT_BYTES and not self.preflight.is_fresh(spec):
            # A long run: its cost is shown first, and the run starts when the estimate says it fits.
            self._start_after_estimate = True
            self.state_label.setText("Estimating the cost before training…")
            self.preflight.request(spec)
            return True
        if self.preflight.is_fresh(spec) and self.preflight.estimate is not None and \
                self.preflight.estimate.memory_short and not self._confirm_short_memory():
            return False
        return self._launch(spec)

    def _on_estimated(self, est) -> None:
        """An estimate arrived: start the run that waited for it, unless memory is short and the user
        chooses a remedy instead."""
        if not self._start_after_estimate:
            return
        self._start_after_estimate = False
        self.state_label.setText("Ready.")
        if est.memory_short and not self._confirm_short_memory():
            return
        try:
            spec = self.run_spec().validate()
        except WorkbenchError as exc:
            self._show_error(str(exc))
            return
        self._launch(spec)

    def _confirm_short_memory(self) -> bool:
        est = self.preflight.estimate
        answer = ask(self, "Not enough memory for this run", (est.warning() if est else "") +
                     "\n\nStart anyway?", QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
                     QMessageBox.StandardButton.No)
        return answer == QMessageBox.StandardButton.Yes

    def _launch(self, spec: RunSpec) -> bool:
        self.save_form()
        self._remove_spec_file()
        spec_file = self._spec_file = write_spec(spec)
        # a model that prunes (Unigram) shows progress by |V|
        self._start_child(spec_command(spec_file, estimate=self.preflight.is_fresh(spec)), spec.vocab_size or 0,
                          family(spec.model).progress, "Starting the training process…")
        return True

    def _start_child(self, argv: list[str], target_vocab: int, rule: ProgressRule, starting: str) -> None:
        """Reset the live state and start the child (a training run or an extension)."""
        self.live_run = None
        self.target = 0
        self._target_vocab = target_vocab
        self._rule = rule
        self._first_vocab = 0
        self.last_outcome = None
        self._last_progress = {}
        self._click_time = time.monotonic()
        self.first_point_latency = None
        self.progress.setRange(0, 0)
        self.progress.setFormat("")
        self.state_label.setText(starting)
        self.process.start(argv)
        self.training_changed.emit(True)
        self._update_controls()

    def extending(self) -> bool:
        return self.extend_radio.isChecked()

    def _update_mode(self) -> None:
        """Extension takes its model, split and size from the base: its own box replaces theirs."""
        extend = self.extending()
        self.extend_box.setVisible(extend)
        # The special roles are the base's own, and the pre-flight estimate is of the hidden form's model.
        for box in (self.model_box, self.split_box, self.size_box, self.roles_box, self.preflight):
            box.setVisible(not extend)
        if extend:
            self._fill_base_sources()
        self.start_button.setText("Extend" if extend else "Train")
        self.plot_empty_train.setText(self.start_button.text())
        self.plot_empty.set_text("No run to show yet", _EMPTY_BODY["extend" if extend else "train"])

    def _fill_base_sources(self) -> None:
        """The project's finished runs and its references, as sources the base picker offers."""
        path = self.session.path
        sources: list[tuple[str, str]] = []
        if path is not None and self.session.store is not None:
            for run in self.session.runs():
                if run.status == "finished":
                    sources.append((f"run {run.id}: {run.name}", f"{path}#{run.id}"))
            for ref in self.session.references():
                sources.append((f"reference {ref.id}: {ref.name}", f"{path}#ref:{ref.id}"))
        self.extend_box.set_sources(sources)

    def _start_extension(self) -> bool:
        """Start ``workbench extend --spec`` on the extension form and the Corpus tab's files."""
        files = tuple(self.corpus.files()) if self.corpus is not None else ()
        try:
            request = self.extend_box.request(files, str(self.session.path or ""))
            if not request.files:
                raise ConfigError("files", "add corpus files first (Corpus panel): there is nothing to extend on")
            request = request.validate()
        except WorkbenchError as exc:
            self._show_error(str(exc))
            return False
        self._remove_spec_file()
        self._spec_file = write_spec(request)
        argv = extend_command(self._spec_file, self.extend_box.reference())
        self._start_child(argv, 0, family("bpe").progress, "Starting the extension…")
        return True

    def toggle_pause(self) -> None:
        if self.process.state == "paused":
            self.resume()
        else:
            self.pause()

    def pause(self) -> bool:
        return self.process.pause()

    def resume(self) -> bool:
        return self.process.resume()

    def cancel(self) -> None:
        if self.is_training():
            self.process.cancel()

    def stop_and_wait(self, timeout_ms: int = 15000) -> None:
        """Cancel and block until the child has exited and its outcome is handled (window closing)."""
        if not self.is_training():
            return
        self.process.cancel()
        self.process.wait(timeout_ms)

    # ---- process reports -----------------------------------------------------------------------------
    @Slot(str)
    def _on_state(self, state: str) -> None:
        labels = {"starting": "Starting the training process…", "reading": "Reading and counting the corpus…",
                  "training": "Training…", "paused": "Paused. Resume to continue; Cancel keeps the merges so far.",
                  "stopping": "Stopping — the merges made so far are kept…"}
        if state in labels:
            self.state_label.setText(labels[state])
        if state == "paused":
            self.progress.setFormat(self.progress.format().split(" · ")[0] + " · paused")
        self._update_controls()

    @Slot(dict)
    def _on_event(self, data: dict) -> None:
        kind = data.get("event")
        if kind == "reading":
            total = max(int(data.get("bytes_total", 1)), 1)
            done = int(data.get("bytes_read", 0))
            self.progress.setRange(0, 1000)
            self.progress.setValue(int(1000 * done / total))
            self.progress.setFormat(f"reading {100 * done / total:.0f}% of {text.human_bytes(total)}")
        elif kind == "skipped":  # --on-bad-record skip left records out: say so, with the first position
            first = (data.get("positions") or [""])[0]
            self.message.emit(f"Training {str(data.get('message', '')).removesuffix('; first:')}; first: {first}")
        elif kind == "preparing":  # building the trainer (Unigram seeds its pieces): can take a while
            self.progress.setRange(0, 0)
            self.progress.setFormat("")
            self.state_label.setText(f"{str(data.get('message', 'preparing')).capitalize()}…")
        elif kind == "note":  # why the run will not do what was asked (no merge at this size …)
            self._show_error(str(data.get("message", "")))
        elif kind == "started":
            self._first_vocab = int(data.get("vocab_size", 0))
        elif kind == "merges":
            self._last_progress = data
            self._show_step_progress(data)

    def _show_step_progress(self, data: dict) -> None:
        """The bar and the state line for one progress report, as the run's family tells progress
        (:class:`~workbench.tasks.models.ProgressRule`): merges of the target (BPE, WordPiece), or
        the vocabulary falling from the seed size to the target on a log scale (Unigram) — each
        pruning step removes about the same share, so equal steps advance the bar equally."""
        rule = self._rule
        step = int(data.get("step", 0))
        target = int(data.get("target", self.target) or 0)
        vocab = int(data.get("vocab_size", 0))
        goal = int(data.get("goal", 0) or self._target_vocab)
        self._first_vocab = max(self._first_vocab, vocab)
        share = rule.fraction(step, target, vocab, self._first_vocab, goal)
        self.progress.setRange(0, 1000)
        if share is not None:
            self.progress.setValue(int(1000 * share))
        self.progress.setFormat(rule.bar_text(step, target, vocab, goal))
        eta = data.get("eta_s")
        done = share is not None and share >= 1.0
        eta_text = "" if done else " · ETA estimating…" if eta is None else f" · ETA {text.duration(float(eta))}"
        if self.process.state == "paused":
            return
        tokens = f"|V| {vocab:,} · L {int(data.get('token_count', 0)):,} tokens"
        if rule.measure == "merges":
            rate = float(data.get("merges_per_s", 0.0))
            self.state_label.setText(f"Run {data.get('run_id')}: {rate:,.0f} merges/s{eta_text}\n{tokens}")
        else:
            self.state_label.setText(f"Run {data.get('run_id')}: {rule.phase}, step {step:,}{eta_text}\n{tokens}")

    @Slot(int, int)
    def _on_run_started(self, run_id: int, target: int) -> None:
        self.live_run = run_id
        self.target = target
        self.progress.setRange(0, 1000)
        self.progress.setValue(0)
        self.progress.setFormat(f"{self._rule.phase}…" if self._rule.measure == "vocabulary"
                                else f"0 / {target:,} merges")
        self.reload_history(select=[run_id])
        self.session.modified_changed.emit(self.session.is_modified())
        self.plots.fit_all()  # the new run's axes start afresh, not at the last run's ranges
        self.plots.set_live(True)
        self.poll_timer.start()
        self.run_started.emit(run_id)
        self.message.emit(f"Run {run_id} started: pruning down to |V| {self._target_vocab:,}."
                          if self._rule.measure == "vocabulary"
                          else f"Run {run_id} started: {target:,} merges to make.")

    def _remove_spec_file(self) -> None:
        if self._spec_file is not None:
            self._spec_file.unlink(missing_ok=True)
            self._spec_file = None

    @Slot(object)
    def _on_finished(self, outcome: TrainOutcome) -> None:
        self.last_outcome = outcome
        self._remove_spec_file()
        run_id = outcome.run_id
        if run_id is not None:
            self._poll_run(run_id)
            self.plots.redraw()
        self.poll_timer.stop()
        self.live_run = None
        self.plots.set_live(False)
        self.progress.setRange(0, 1000)
        if outcome.status in ("finished", "cancelled"):
            self._describe_outcome(outcome)
        else:
            self.progress.setValue(0)
            self.progress.setFormat("")
            self.state_label.setText("The run did not complete." if run_id is None else f"Run {run_id} failed.")
            self._show_error(outcome.message or "the training process failed")
            if outcome.field:
                self._mark_field(outcome.field)
        self.reload_history()
        self.session.notify_runs_changed()
        self.training_changed.emit(False)
        self._update_controls()
        self.run_finished.emit(run_id or 0, outcome.status)
        self.message.emit(self.state_label.text())
        if outcome.result.get("report"):  # an extension: its report, computed by the child
            self.show_extension_report(outcome.result)
        if run_id is not None and not self._run_settled(run_id, outcome):
            self._start_settling(outcome)

    def show_extension_report(self, result: dict) -> None:
        if self.report_dialog is not None:
            self.report_dialog.close()
        self.report_dialog = ExtensionReport(result, self)
        self.report_dialog.show()

    def _describe_outcome(self, outcome: TrainOutcome) -> None:
        """The state label and progress bar for a finished or cancelled run, as the store has it."""
        run_id = outcome.run_id
        info = self.session.run(run_id) if run_id is not None else None
        took = (info.timings or {}).get("total_s") if info is not None else None
        if info is not None:
            done = f"{info.merge_count:,} merges, |V| {info.vocab_size:,}" if info.merge_count \
                else f"|V| {info.vocab_size:,}"
            stopped = info.settings.get("stopped_at")
            if isinstance(stopped, dict):  # a pruning run cancelled early: its kept model is a cut
                where = int(stopped.get("vocab_size") or 0)
                self.state_label.setText(
                    f"Run {run_id} cancelled at step {int(stopped.get('step') or 0):,}, |V| {where:,} of the way "
                    f"to {info.vocab_size:,}" + (f" in {text.duration(took)}" if took else "")
                    + f": the kept model is cut to {info.vocab_size:,} pieces without the pruning left.")
                self.progress.setFormat(f"|V| {where:,} → cut to {info.vocab_size:,} · cancelled")
                return
            extension = info.settings.get("extend")
            made = f"{info.merge_count:,} merges"
            if isinstance(extension, dict) and extension.get("family") == "unigram":  # new pieces, no merges
                new = info.vocab_size - int(extension.get("base_vocab_size") or 0) - int(extension.get("reserved") or 0)
                done = f"{new:,} new pieces after the base's {int(extension.get('base_vocab_size') or 0):,} ids, " \
                       f"|V| {info.vocab_size:,}"
            elif isinstance(extension, dict) and extension.get("family") == "wordpiece":  # pieces appended
                made = f"{info.merge_count - int(extension.get('base_merges') or 0):,} new pieces"
                done = f"{made} after the base's {int(extension.get('base_vocab_size') or 0):,} ids, " \
                       f"|V| {info.vocab_size:,}"
            elif isinstance(extension, dict):  # an extension: its new merges, after the base's
                made = f"{info.merge_count - int(extension.get('base_merges') or 0):,} new merges"
                done = f"{made} after the base's {int(extension.get('base_merges') or 0):,}, |V| {info.vocab_size:,}"
            self.state_label.setText(f"Run {run_id} {outcome.status}: {done}"
                                     + (f" in {text.duration(took)}." if took else "."))
            if outcome.status == "finished":
                self.progress.setValue(1000)
            self.progress.setFormat(f"{made} · {outcome.status}" if info.merge_count
                                    else f"|V| {info.vocab_size:,} · {outcome.status}")
        else:
            self.state_label.setText(f"Run {outcome.status}" + (f": {outcome.message}" if outcome.message else "."))
            self.progress.setValue(0)
            self.progress.setFormat("")

    # ---- after the child has exited: reading until the store holds the whole run ---------------------
    def _run_settled(self, run_id: int, outcome: TrainOutcome) -> bool:
        """Whether the store (as our connection sees it) holds the run's end, and the plots its last step.

        The child's exit (or its 'finished' line) is not proof that our read saw the last batch:
        the run's writer is a process of its own that can commit after the trainer has gone (a
        killed trainer's writer drains its stdin first), and a read that raced the final commit
        would leave the Runs table, the plots and the Merges tab one batch short for good.
        """
        info = self.session.run(run_id)
        # "interrupted" is how the store shows a running run whose owner has exited: its writer
        # may still be about to commit the last batch and the final status.
        if info is None or info.status in ("running", "interrupted"):
            return False
        merges = outcome.result.get("merges")
        want = max(int(merges) if isinstance(merges, int) else 0, info.merge_count)
        if info.merge_count < want:
            return False
        return not self.plots.has_run(run_id) or self.plots.last_step(run_id) >= want

    def _start_settling(self, outcome: TrainOutcome) -> None:
        self._settling = outcome
        self._settle_deadline = time.monotonic() + SETTLE_S
        self.settle_timer.start()

    @Slot()
    def _settle_tick(self) -> None:
        """Read the finished run again until it is complete (or SETTLE_S pass), then refresh everyone."""
        outcome = self._settling
        if outcome is None or outcome.run_id is None or self.is_training():
            self.settle_timer.stop()
            self._settling = None
            return
        run_id = outcome.run_id
        got = self._poll_run(run_id)
        settled = self._run_settled(run_id, outcome)
        if not (got or settled or time.monotonic() >= self._settle_deadline):
            return
        self.plots.redraw()
        if settled or time.monotonic() >= self._settle_deadline:
            self.settle_timer.stop()
            self._settling = None
        if outcome.status in ("finished", "cancelled"):
            self._describe_outcome(outcome)
        self.reload_history()
        self.session.notify_runs_changed()

    # ---- polling the store ---------------------------------------------------------------------------
    @Slot()
    def _tick(self) -> None:
        if self.live_run is not None:
            got = self._poll_run(self.live_run)
            now = time.monotonic()
            if got:
                self._pending_merge_signal = True
                # The Runs row keeps pace with the plots and the progress bar (one short read);
                # only the other tabs' refresh is rate-limited below.
                info = self.session.run(self.live_run)
                if info is not None:
                    self.history.update_run(info, self.live_run)
            if self._pending_merge_signal and now - self._last_merges_signal >= MERGES_REFRESH_S:
                self._last_merges_signal = now
                self._pending_merge_signal = False
                self.steps_arrived.emit(self.live_run)
        self._paced_redraw()

    def _paced_redraw(self) -> None:
        """Redraw at most every POLL_MS, and back off when drawing gets expensive.

        Pushing a long run's curves into pyqtgraph costs time in proportion to the points
        (~1 ms per thousand here); waiting three times the last cost keeps the event loop at
        least three quarters free however long the run gets.
        """
        now = time.monotonic()
        if now < self._next_redraw:
            return
        t0 = time.perf_counter()
        self.plots.redraw()
        self._next_redraw = now + 3.0 * (time.perf_counter() - t0)

    def _read_stored_curve(self, run_id: int) -> None:
        """A stored run's steps (a long run's strided: 20,000 of 10M merges, about a second), read on
        a connection of their own and built into points off the GUI thread; drawn a plot per turn
        when they arrive, if the run is still shown and has no points yet. Every stored run comes
        this way, however short: 10,000 rows are ~10–20 ms of Python, a frame on their own."""
        path = self.session.path
        if path is None:
            return
        every, start = self._plot_every.get(run_id, 1), self._plot_start.get(run_id, 0)
        kind = self._kinds.get(run_id, "frequency")

        def job(should_stop, _progress) -> tuple[bool, StoredCurve]:
            with open_read(path, should_stop=should_stop) as store:
                rows: list = (store.steps(run_id, start, every=every) if kind == "frequency"
                              else store.run_steps(run_id, start))
                # A WordPiece run stored before schema 2 kept no scores: plot its frequencies.
                unscored = not rows and kind == "score"
                if unscored:
                    rows = store.steps(run_id, 0)
            return unscored, stored_curve(rows)  # the points built here, not on the window's thread

        def done(read: tuple[bool, StoredCurve]) -> None:
            unscored, curve = read
            if self.session.path != path or not self.plots.has_run(run_id) or self.plots.last_step(run_id) != 0:
                return
            if unscored:
                self._kinds[run_id] = "frequency"
                self.plots.set_kind(run_id, "frequency")
            self.plots.add_stored(run_id, curve)
            self.plots.redraw_in_turns()  # a plot a turn (four plots and their axes were ~40–100 ms)
            self.curve_read.emit(run_id)

        self.curves.submit(job, done, lambda message: self.message.emit(f"Could not read the project file: {message}"),
                           key=("curve", run_id), hooks=True)

    def _poll_run(self, run_id: int) -> int:
        if not self.plots.has_run(run_id) or self.session.store is None:
            return 0
        last = max(self.plots.last_step(run_id), self._plot_start.get(run_id, 0))
        kind = self._kinds.get(run_id, "frequency")
        try:
            rows: list = (self.session.steps(run_id, last, every=self._plot_every.get(run_id, 1))
                          if kind == "frequency" else self.session.run_steps(run_id, last))
            if not rows and kind == "score" and last == 0 and run_id != self.live_run:
                # A WordPiece run stored before schema 2 kept no scores: plot its frequencies.
                self._kinds[run_id] = "frequency"
                self.plots.set_kind(run_id, "frequency")
                rows = self.session.steps(run_id, 0)
        except Exception as exc:  # noqa: BLE001 - a busy file must not stop the timer
            self.message.emit(f"Could not read the project file: {exc}")
            return 0
        self.plots.append(run_id, rows)
        return len(rows)

    @Slot(int)
    def _on_redrawn(self, count: int) -> None:
        if self.first_point_latency is None and self._click_time is not None and count > 0 and self.live_run:
            self.first_point_latency = time.monotonic() - self._click_time

    # ---- history -----------------------------------------------------------------------------------
    def reload_history(self, select: list[int] | None = None) -> None:
        runs = self.session.runs()
        # not every file of the project (it may list 100,000); the opening worker read them for the take-over
        self._corpus_paths = self.session.run_corpus_paths(runs)
        self.history.set_runs(runs, self.live_run)
        self._read_sample_overlaps(runs)
        if select is not None:
            self.history.select(select)
        else:
            self._on_history_selection(self.history.selected_ids())
        if not runs:
            self.plot_stack.setCurrentIndex(0)

    def _read_sample_overlaps(self, runs) -> None:
        """A sampled run's overlap with its run on all lines needs both vocabularies: read off the GUI thread."""
        path = self.session.path
        if path is None or not has_sampled_runs(runs):
            self.history.set_overlaps({})
            return
        self.curves.submit(partial(sample_overlaps_at, path), self.history.set_overlaps,
                           lambda message: log.info("sample overlap not shown: %s", message), key="sample-overlap")

    @Slot(list)
    def _on_history_selection(self, run_ids: list) -> None:
        runs = {r.id: r for r in self.session.runs()} if self.session.is_open else {}
        ids = [rid for rid in run_ids if rid in runs]
        if self.live_run is not None and self.live_run not in ids and self.live_run in runs and not ids:
            ids = [self.live_run]
        specs = [(rid, f"{runs[rid].name} (run {rid})") for rid in sorted(ids)]
        new = self.plots.show_runs(specs)
        for rid in ids:
            if rid in new or rid not in self._kinds:
                self._kinds[rid] = step_value(runs[rid].settings)
                # a stored run of millions of merges is drawn from at most PLOT_POINTS of them
                extension = runs[rid].settings.get("extend")
                start = int(extension.get("base_merges") or 0) if isinstance(extension, dict) else 0
                self._plot_start[rid] = start  # an extension's curves begin after the base's merges
                self._plot_every[rid] = 1 if rid == self.live_run else \
                    -(-max(runs[rid].merge_count - start, 1) // PLOT_POINTS)
            self.plots.set_kind(rid, self._kinds[rid])
            self.plots.set_chars(rid, self._chars_for(runs[rid]))
            self.plots.set_transition(rid, transition_step(runs[rid].settings))  # SuperBPE's t
        for rid in new:
            if rid != self.live_run:  # (the live run's steps come with the polling timer)
                self._read_stored_curve(rid)  # stored: read and built on a worker, drawn a plot a turn
        self.plots.redraw_in_turns()  # the runs still shown, restyled: a plot a turn too
        self.plot_stack.setCurrentIndex(1 if ids else 0)
        self._update_controls()

    def _chars_for(self, run: RunInfo) -> int | None:
        """Characters of the run's corpus: from the corpus panel's statistics when it has them."""
        paths = [self._corpus_paths.get(cid) for cid in run.corpus_ids]
        if self.corpus is not None and paths and all(paths):
            chars = self.corpus.total_chars(paths)
            if chars:
                return chars
        s = run.settings
        lossless = s.get("pretokenizer") not in ("whitespace",) and not s.get("normalizer")
        if s.get("units") == "chars" and not s.get("end_of_word") and lossless:
            return int(s.get("initial_token_count") or 0) or None
        return None

    @Slot()
    def _on_corpus_changed(self) -> None:
        for rid in list(self.plots.runs):
            run = self.session.run(rid)
            if run is not None:
                self.plots.set_chars(rid, self._chars_for(run))
        # the compression curves in a turn of their own (a live run's come with its next redraw)
        self.plots.redraw_in_turns()
        self._update_controls()
        if not self.sample_edit.text() and self.corpus is not None:
            sample = self.corpus.sample_line()
            if sample:
                self.sample_edit.setPlaceholderText(sample)
                self._schedule_preview()

    @Slot(int, str)
    def _rename(self, run_id: int, name: str) -> None:
        try:
            self.session.rename_run(run_id, name)
        except WorkbenchError as exc:
            self._show_error(str(exc))
            self.reload_history()
            return
        self.message.emit(f"Run {run_id} renamed to “{name}”.")

    @Slot(list)
    def _delete(self, run_ids: list) -> None:
        runs = {r.id: r for r in self.session.runs()}
        names = [f"“{runs[r].name}” (run {r})" for r in run_ids if r in runs]
        if not names:
            return
        what = names[0] if len(names) == 1 else f"{len(names)} runs"
        answer = ask(self, "Delete runs", f"Delete {what}?\n\nIts merges, vocabulary and curves are removed "
                     "from the project file. This cannot be undone.",
                     QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel,
                     QMessageBox.StandardButton.Cancel)
        if answer != QMessageBox.StandardButton.Yes:
            return
        for rid in run_ids:
            try:
                self.session.delete_run(rid)
            except WorkbenchError as exc:
                self._show_error(str(exc))
                break
            self._merge_cache = {k: v for k, v in self._merge_cache.items() if k[0] != rid}
        self.reload_history()
        self.message.emit(f"Deleted {what}.")

    @Slot()
    def _on_project_changed(self) -> None:
        self.settle_timer.stop()  # a run id of the old project means nothing in the new one
        self._settling = None
        self.plots.clear()
        self._kinds.clear()
        self._merge_cache.clear()
        self._show_error("")
        self.state_label.setText("Ready.")
        self.progress.setValue(0)
        self.progress.setFormat("")
        self.reload_history()
        runs = self.session.runs()
        if runs:  # the plots' first layout, then the newest run's curves, each in a turn of its own
            self.session.after_open(partial(self._show_plot_page, self.session.path))
            self.session.after_open(partial(self._select_newest, self.session.path, runs[-1].id))
        self._update_controls()

    def _show_plot_page(self, path: Path | None) -> None:
        """The (empty) plots laid out and painted before any curve is made (a later turn's work)."""
        if self.session.path == path and self.session.runs():
            self.plot_stack.setCurrentIndex(1)

    def _select_newest(self, path: Path | None, run_id: int) -> None:
        if self.session.path == path:  # not another project opened since
            self.history.select([run_id])

    def _merge_lookup(self, run_id: int, step: int) -> str | None:
        key = (run_id, step)
        if key not in self._merge_cache:
            try:
                row = self.session.merge_text(run_id, step)
            except Exception:  # noqa: BLE001
                row = None
            if row is None:
                return None
            if len(self._merge_cache) > 5000:
                self._merge_cache.clear()
            self._merge_cache[key] = (f"‘{text.piece(row.left_piece)}’ + ‘{text.piece(row.right_piece)}’ → "
                                      f"‘{text.piece(row.piece)}’ (id {row.new_id})")
        return self._merge_cache[key]

    # ---- view state ------------------------------------------------------------------------------------
    _opening = False  # the window is opening another project (set_opening)

    def set_opening(self, opening: bool) -> None:
        """The window is reading another project on a worker: no run may start on the one in front,
        which is about to be replaced (a run started then was dropped with the old project)."""
        self._opening = opening
        self._update_controls()

    def _update_controls(self) -> None:
        active = self.is_training()
        state = self.process.state
        has_files = self.corpus.has_files() if self.corpus is not None else False
        form_ok = not (hasattr(self, "form_error") and self.form_error.isVisibleTo(self))
        can_start = not active and self.session.is_open and has_files and not self.session.read_only and form_ok \
            and not self._opening
        self.start_button.setEnabled(can_start)
        self.plot_empty_train.setEnabled(can_start)
        if self._opening:
            self.start_button.setToolTip("A project is being opened: train once it is open")
        elif not has_files:
            self.start_button.setToolTip("Add corpus files in the Corpus panel first")
        elif not form_ok:
            self.start_button.setToolTip("Fix the settings marked in red first")
        else:
            self.start_button.setToolTip("Start training on the loaded corpus (F5 or Ctrl+Return)")
        self.pause_button.setEnabled(active and state in ("reading", "training", "paused", "starting")
                                     and self.process.can_pause())
        paused = state == "paused"
        self.pause_button.setText("Resume" if paused else "Pause")
        self.pause_button.setIcon(self.style().standardIcon(
            QStyle.StandardPixmap.SP_MediaPlay if paused else QStyle.StandardPixmap.SP_MediaPause))
        self.cancel_button.setEnabled(active and state != "stopping")
        for w in (self.model_combo, self.units_combo, self.normalizer_combo,
                  self.size_spin, self.by_vocab, self.by_merges, self.min_freq, self.special_edit, self.tie_combo,
                  self.name_edit, self.roles_box, *self.option_widgets.values()):
            w.setEnabled(not active)
        split_free = self._family().uses("pretokenizer")  # Unigram's split is SentencePiece's own
        self.pre_combo.setEnabled(not active and split_free)
        self.pattern_edit.setEnabled(not active and split_free)
        if not active:
            self._update_eow()

    def _show_error(self, message: str) -> None:
        self.error_label.setText(f"⚠ {message}" if message else "")
        self.error_label.setVisible(bool(message))

    def error_text(self) -> str:
        return self.error_label.text().removeprefix("⚠ ") if self.error_label.isVisible() else ""

    def _style_labels(self) -> None:
        colour = style.error_colour(self.palette()).name()
        self.form_error.setStyleSheet(f"color: {colour}")
        self.error_label.setStyleSheet(f"color: {colour}")
        self.state_label.setStyleSheet(f"color: {style.muted(self.palette()).name()}")

    def changeEvent(self, event) -> None:  # noqa: N802
        super().changeEvent(event)
        if event.type() == event.Type.PaletteChange and hasattr(self, "form_error"):
            self._style_labels()
            self._schedule_preview()

    def shutdown(self) -> None:
        self.save_form()  # the model and its options come back as they were left
        self.poll_timer.stop()
        self.settle_timer.stop()
        self.stop_and_wait()
        self._remove_spec_file()
        self.previewer.shutdown()
        self.preflight.shutdown()
        self.curves.shutdown()
