"""Compare: several tokenizers on the same corpus files, with the numbers to choose a vocabulary.

Left, what to compare: the project's runs and imported references (plus tokenizer files added
here), the corpus files (the project's, plus files added here) with an optional language label
each, the baseline language, "parallel text" and the embedding width d. Right, the results: a
metrics table per file and per language, a bar chart of tokens per language against the
baseline, the vocabulary-size sweep (BPE, WordPiece or Unigram runs; several runs' curves share
the chart while the files, points and d stay the same), and the words whose splits differ most
between two tokenizers. Tables export as CSV, charts as PNG or SVG.

All counting runs in :mod:`workbench.tasks.compare` on a worker thread (:class:`~workbench.ui.jobs.JobRunner`) with
progress and cancel; results are cached by file fingerprint + tokenizer, so asking again after
reopening the project is immediate. Integration contract (as the other tabs): ``set_project(path)``
and ``refresh()``; ``computed`` / ``swept`` / ``splits_ready`` / ``failed`` fire on the GUI thread.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from PySide6.QtCore import QModelIndex, QObject, QPoint, Qt, Signal, Slot
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTableView,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from workbench.errors import WorkbenchError
from workbench.tasks.compare import Sweep
from workbench.ui.compare.charts import LanguageBarChart, SweepChart
from workbench.ui.compare.models import (
    CorpusFilesModel,
    FairnessTableModel,
    GiniPairsModel,
    MetricsTableModel,
    RowsModel,
    SplitTableModel,
)
from workbench.ui.jobs import LIST_OFF_THREAD, JobRunner, feed_in_batches

SRC_ROLE = Qt.ItemDataRole.UserRole
ADDED_ROLE = Qt.ItemDataRole.UserRole + 2  # a tokenizer added here, not one of the project's
EMPTY_PAIRS = ("No parity-aware, SuperBPE or PickyBPE run among the tokenizers compared: tick one and Compute "
               "to see it against classic BPE of the same vocabulary size (per-language token cost, Gini before → "
               "after), or choose any tokenizer under “Gini against”.")
PAIRS_OFF = "Pairing is off (“Gini against”: nothing)."
MAX_SPLIT_ROWS = 500  # the most frequent differing words; the CSV export has the same rows


class _Relay(QObject):
    """Carries progress from the worker thread to a GUI-thread slot (STYLE.md trap 2)."""

    progress = Signal(int, int, str)


class ComparePanel(QWidget):
    """The Compare tab."""

    computed = Signal(object)      # CompareResult
    swept = Signal(object)         # Sweep
    splits_ready = Signal(object)  # SplitReport
    # (word, [SRC of A, SRC of B]): a "split differences" row to open in the Inspect tab (the main
    # window connects it; tabs never import each other)
    inspect_requested = Signal(str, list)
    failed = Signal(str)
    busy_changed = Signal(bool)

    def __init__(self, session=None, parent: QWidget | None = None):
        super().__init__(parent)
        self.session = session  # a ProjectSession, or None (then set_project reads the file itself)
        self.project: Path | None = None
        self.result = None
        self.sweep_result = None
        self._sweeps: dict[str, Sweep] = {}  # tokenizer name → Sweep, all over the same files/points/d
        self._sweeps_key: tuple | None = None
        self.split_result = None
        self.split_sources: tuple[str, str] | None = None  # the A and B of split_result
        self._split_asked: tuple[str, str] | None = None
        self._names: dict[str, str] = {}  # SRC → display name
        self._project_files: set[str] = set()  # the open project's own corpus files
        # The questions behind what is shown (kept in the project, see session_state): the last
        # computed table's, the one asked now, and per swept tokenizer name [Sweep, SRC].
        self._question: dict | None = None
        self._asked: dict | None = None
        self._swept: dict[str, list] = {}
        self._sweep_files: list[list] = []
        self._sweep_asked: str | None = None
        self._stop = False
        self._shut_down = False
        self._listing = 0  # the generation of the corpus listing under way (0: none); a newer one stops it
        self._after_listing: list[Callable[[], object]] = []
        self.tasks = JobRunner(self)
        self.lister = JobRunner(self, max_threads=1)  # a long corpus listing, read off the GUI thread
        self.tasks.busy_changed.connect(self._on_busy)
        self._relay = _Relay()
        self._relay.progress.connect(self._on_progress)
        self._build()
        # With a session this tab follows it on its own: the window need not call set_project and
        # refresh again (each listed 300 runs a second time while a project opened).
        self.follows_session = session is not None
        self._pending_project: Path | None = None  # opened, to be listed in a later turn
        # the choosers (sweep, split, Gini) of a project just listed are filled in a turn of their own
        self._defer_choosers = self._choosers_due = False
        if session is not None:
            session.project_changed.connect(self._on_session_project)
            session.runs_changed.connect(self.refresh)
            if session.path is not None:
                self.set_project(session.path)

    # ---- building --------------------------------------------------------------------------------
    def _build(self) -> None:
        self.tokenizer_list = QListWidget()
        self.tokenizer_list.setToolTip("Tick the tokenizers to compare: runs, imported references, or files added here")
        add_tok = QPushButton("Add tokenizer file…")
        add_tok.setToolTip("tokenizer.json, .tiktoken, GPT-2 vocab.json or another project's .tokproj")
        add_tok.clicked.connect(self._on_add_tokenizer_clicked)

        self.files = CorpusFilesModel(self)
        self.file_table = QTableView()
        self.file_table.setModel(self.files)
        self.file_table.setAccessibleName("Corpus files to compare on")
        self.file_table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        # Sized by the header and a short label, never by reading 100,000 rows (ResizeToContents does).
        self.file_table.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Interactive)
        self.file_table.setColumnWidth(1, 90)
        self.file_table.verticalHeader().setVisible(False)
        self.file_table.verticalHeader().setDefaultSectionSize(self.file_table.fontMetrics().height() + 8)
        self.file_table.setEditTriggers(QAbstractItemView.EditTrigger.DoubleClicked
                                        | QAbstractItemView.EditTrigger.EditKeyPressed
                                        | QAbstractItemView.EditTrigger.AnyKeyPressed)
        self.file_table.setToolTip("Tick the files to count. Language: leave empty to use the file's main "
                                   "script, or type a label (e.g. en, de) — files with the same label are added up")
        add_files = QPushButton("Add corpus files…")
        add_files.clicked.connect(self._on_add_files_clicked)

        self.baseline = QComboBox()
        self.baseline.setEditable(True)
        self.baseline.setToolTip("Tokens per language are shown relative to this language (empty: none)")
        self.parallel = QCheckBox("Files are translations of each other (parallel)")
        self.parallel.setToolTip("Parallel text: the ratio is the tokenization premium (Petrov et al. 2023). "
                                 "Otherwise it is tokens per character relative to the baseline.")
        self.d_spin = QSpinBox()
        self.d_spin.setRange(1, 65536)
        self.d_spin.setValue(768)
        self.d_spin.setToolTip("Embedding width d for the V × d column")
        self.alpha_spin = QDoubleSpinBox()
        self.alpha_spin.setRange(0.1, 100.0)
        self.alpha_spin.setSingleStep(0.5)
        self.alpha_spin.setValue(2.5)
        self.alpha_spin.setToolTip("α of the Rényi efficiency (2.5: Zouhar et al. 2023; 1 is Shannon efficiency). "
                                   "Re-uses the counted tokens: changing it does not encode again.")
        self.basis_combo = QComboBox()
        self.basis_combo.addItem("declared vocabulary", "declared")
        self.basis_combo.addItem("ids that occur", "observed")
        self.basis_combo.setToolTip("|V| the Rényi and Shannon efficiencies divide by: the vocabulary's size, "
                                    "or the distinct ids that occur in the text (tokenization-scorer's default)")

        self.classic_combo = QComboBox()
        self.classic_combo.setAccessibleName("Gini against")
        self.classic_combo.setToolTip("What the “Gini vs classic BPE” results hold each tokenizer against: "
                                      "automatically, a parity-aware, SuperBPE or PickyBPE run against the "
                                      "project's classic BPE run of the same vocabulary size (measured too when "
                                      "not ticked); or one tokenizer chosen here against every other one")
        self._fill_classic()

        self.compute_button = QPushButton("Compute")
        self.compute_button.setDefault(True)
        self.compute_button.clicked.connect(self.compute)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.cancel_button.clicked.connect(self.cancel)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setTextVisible(False)
        self.progress.setVisible(False)
        self.status = QLabel("Tick tokenizers and files, then Compute.")
        self.status.setWordWrap(True)

        left = QWidget()
        lv = QVBoxLayout(left)
        tok_box = QGroupBox("Tokenizers")
        tv = QVBoxLayout(tok_box)
        tv.addWidget(self.tokenizer_list)
        tv.addWidget(add_tok)
        file_box = QGroupBox("Corpus files")
        fv = QVBoxLayout(file_box)
        fv.addWidget(self.file_table)
        fv.addWidget(add_files)
        form = QFormLayout()
        form.addRow("Baseline language", self.baseline)
        form.addRow("", self.parallel)
        form.addRow("Embedding width d", self.d_spin)
        form.addRow("Rényi α", self.alpha_spin)
        form.addRow("|V| basis", self.basis_combo)
        form.addRow("Gini against", self.classic_combo)
        buttons = QHBoxLayout()
        buttons.addWidget(self.compute_button)
        buttons.addWidget(self.cancel_button)
        lv.addWidget(tok_box, 2)
        lv.addWidget(file_box, 3)
        lv.addLayout(form)
        lv.addLayout(buttons)
        lv.addWidget(self.progress)
        lv.addWidget(self.status)

        self.file_model = MetricsTableModel(self)
        self.language_model = MetricsTableModel(self)
        self.fairness_model = FairnessTableModel(self)
        self.split_model = SplitTableModel(self)
        self.file_view = _table(self.file_model)
        self.language_view = _table(self.language_model)
        self.fairness_view = _table(self.fairness_model)
        lang_page = QSplitter(Qt.Orientation.Vertical)
        lang_page.addWidget(self.language_view)
        lang_page.addWidget(self.fairness_view)
        lang_page.setSizes([300, 160])

        self.bar_chart = LanguageBarChart()
        self.sweep_chart = SweepChart()
        self.sweep_source = QComboBox()
        self.sweep_source.setToolTip("A run to sweep over the ticked files: BPE and WordPiece by their first k merges, "
                                     "Unigram by its pruning rounds and cuts of the final model. Sweeps of several "
                                     "runs over the same files share the chart")
        self.sweep_points = QSpinBox()
        self.sweep_points.setRange(2, 200)
        self.sweep_points.setValue(16)
        self.sweep_button = QPushButton("Run sweep")
        self.sweep_button.clicked.connect(self.run_sweep)
        self.sweep_note = QLabel("")
        self.sweep_note.setWordWrap(True)
        self.advisor_nnv = QDoubleSpinBox()
        self.advisor_nnv.setRange(0.0, 10_000.0)
        self.advisor_nnv.setDecimals(2)
        self.advisor_nnv.setSuffix(" B")
        self.advisor_nnv.setSpecialValueText("off")
        self.advisor_nnv.setToolTip("Non-vocabulary parameters of the model this tokenizer is for (billions): marks "
                                    "the compute-optimal vocabulary size of Tao et al. (NeurIPS 2024) on the chart")
        self.advisor_flops = QLineEdit()
        self.advisor_flops.setPlaceholderText("compute-optimal")
        self.advisor_flops.setToolTip("Training budget in FLOPs (e.g. 2.3e21); empty: the compute-optimal budget")
        self.advisor_note = QLabel("")
        self.advisor_note.setWordWrap(True)
        self.advisor_nnv.valueChanged.connect(self._advise)
        self.advisor_flops.editingFinished.connect(self._advise)
        sweep_page = QWidget()
        sv = QVBoxLayout(sweep_page)
        row = QHBoxLayout()
        row.addWidget(QLabel("Tokenizer"))
        row.addWidget(self.sweep_source, 1)
        row.addWidget(QLabel("Points"))
        row.addWidget(self.sweep_points)
        row.addWidget(self.sweep_button)
        sv.addLayout(row)
        sv.addWidget(self.sweep_chart, 1)
        sv.addWidget(self.sweep_note)
        advisor = QHBoxLayout()
        advisor.addWidget(QLabel("Vocabulary advisor: non-vocabulary parameters"))
        advisor.addWidget(self.advisor_nnv)
        advisor.addWidget(QLabel("training FLOPs"))
        advisor.addWidget(self.advisor_flops, 1)
        sv.addLayout(advisor)
        sv.addWidget(self.advisor_note)

        self.split_a, self.split_b = QComboBox(), QComboBox()
        self.split_button = QPushButton("Compare splits")
        self.split_button.clicked.connect(self.compare_splits)
        self.split_note = QLabel("")
        self.split_view = _table(self.split_model)
        self.split_view.setAccessibleName("Words whose splits differ")
        self.split_view.setToolTip("Double-click or press Enter on a word to open it in the Inspect tab, "
                                   "split by A and B side by side")
        self.split_view.activated.connect(self._on_split_activated)
        self.split_view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.split_view.customContextMenuRequested.connect(self._on_split_menu)
        split_page = QWidget()
        spv = QVBoxLayout(split_page)
        row = QHBoxLayout()
        row.addWidget(QLabel("A"))
        row.addWidget(self.split_a, 1)
        row.addWidget(QLabel("B"))
        row.addWidget(self.split_b, 1)
        row.addWidget(self.split_button)
        spv.addLayout(row)
        spv.addWidget(self.split_view, 1)
        spv.addWidget(self.split_note)

        self.gini_model = GiniPairsModel(self)
        self.gini_view = _table(self.gini_model)
        self.gini_view.setAccessibleName("Gini before and after, against classic BPE")
        self.gini_note = QLabel(EMPTY_PAIRS)
        self.gini_note.setWordWrap(True)
        self.gini_note.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.gini_page = QWidget()
        gv = QVBoxLayout(self.gini_page)
        gv.addWidget(self.gini_note)
        gv.addWidget(self.gini_view, 1)

        self.tabs = QTabWidget()
        self.tabs.addTab(self.file_view, "Per file")
        self.tabs.addTab(lang_page, "Per language")
        self.tabs.addTab(self.bar_chart, "Tokens vs baseline")
        self.tabs.addTab(sweep_page, "Vocabulary sweep")
        self.tabs.addTab(split_page, "Split differences")
        self.tabs.addTab(self.gini_page, "Gini vs classic BPE")
        self.tabs.setTabToolTip(self.tabs.count() - 1, "Each parity-aware, SuperBPE or PickyBPE run beside classic "
                                "BPE of the same vocabulary size: per-language token cost and the Gini of it, "
                                "before → after")
        export_csv = QPushButton("Export table as CSV…")
        export_csv.clicked.connect(self._on_export_csv_clicked)
        export_chart = QPushButton("Export chart as PNG/SVG…")
        export_chart.clicked.connect(self._on_export_chart_clicked)
        right = QWidget()
        rv = QVBoxLayout(right)
        rv.setContentsMargins(0, 0, 0, 0)
        rv.addWidget(self.tabs, 1)
        ex = QHBoxLayout()
        ex.addStretch(1)
        ex.addWidget(export_csv)
        ex.addWidget(export_chart)
        rv.addLayout(ex)

        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(left)
        splitter.addWidget(right)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([330, 870])
        layout = QVBoxLayout(self)
        layout.addWidget(splitter)

    # ---- the integration contract -----------------------------------------------------------------
    @Slot()
    def _on_session_project(self) -> None:
        """Another project: this tab lists it in a later turn of its own (``after_open``: the listing
        is ~20 ms of the window's thread for 300 runs), at once when the project closed or is the
        same one under a new name (Save As). Every entry point that needs the listing runs it first
        (:meth:`_listed_now`)."""
        path = self.session.path if self.session is not None else None
        if path is None or self.session is None or self.session.moved_from is not None:
            self._pending_project = None
            self.set_project(path)
            return
        self._pending_project = path
        self.session.after_open(self._set_pending_project)

    def _set_pending_project(self) -> None:
        path, self._pending_project = self._pending_project, None
        if path is not None and self.session is not None and self.session.path == path:
            # its runs listed in this turn, the four choosers of them (~1,200 entries for 300 runs)
            # in the next: together they were a stretch of ~20 ms in the take-over
            self._defer_choosers = True
            try:
                self.set_project(path)
            finally:
                self._defer_choosers = False
            if self._choosers_due:
                self.session.after_open(self._fill_due_choosers)

    def _fill_due_choosers(self) -> None:
        if self._choosers_due:
            self._choosers_due = False
            self._fill_choosers()

    def _listed_now(self) -> None:
        """A project taken over but not listed yet (see :meth:`_on_session_project`): list it now."""
        if self._pending_project is not None:
            self._set_pending_project()
        self._fill_due_choosers()

    def set_project(self, path: Path | None) -> None:
        """List this project's runs, references and corpus files.

        Another project starts afresh (its own selection comes back through :meth:`restore_session`):
        nothing ticked, added, computed or swept for the last one stays. The same project saved
        under a new name (``ProjectSession.moved_from``, during Save As) keeps everything, its SRCs
        following the new path.
        """
        new = Path(path) if path is not None else None
        if new != self.project:
            moved = (self.session is not None and self.project is not None and new is not None
                     and self.session.moved_from == self.project and self.session.path == new)
            if moved:
                self._move_sources(self.project, new)  # type: ignore[arg-type]
            else:
                self._clear()
        self.project = new
        chosen = [(combo, combo.currentData()) for combo in (self.sweep_source, self.split_a, self.split_b)]
        self.refresh()
        for combo, src in chosen:
            index = combo.findData(src) if src is not None else -1
            if index >= 0:
                combo.setCurrentIndex(index)

    def _clear(self) -> None:
        """Forget everything of the last project: lists, ticks, results, sweeps, split differences."""
        self.tasks.cancel()  # a count still running for the last project never lands here
        self._stop_listing()
        self.tokenizer_list.clear()
        self.files.clear()
        self._names, self._project_files = {}, set()
        self.result = self.sweep_result = self.split_result = None
        self.split_sources = self._split_asked = None
        self._question = self._asked = None
        self._sweeps, self._sweeps_key, self._swept = {}, None, {}
        for model in (self.file_model, self.language_model):
            model.set_metrics([])
        self.fairness_model.set_fairness([])
        self.split_model.set_differences([])
        self.gini_model.set_pairs([])
        self.gini_note.setText(EMPTY_PAIRS)
        self.bar_chart.set_rows([], [], None)
        self.sweep_chart.set_sweeps([])
        self.sweep_note.setText("")
        self.split_note.setText("")
        self.baseline.clear()
        self.parallel.setChecked(False)
        self.status.setText("Tick tokenizers and files, then Compute.")

    def _move_sources(self, old: Path, new: Path) -> None:
        """Save As: every SRC of the old path now names the copy (ticks, names, split A and B)."""
        def follow(src: str | None) -> str | None:
            return f"{new}{src[len(str(old)):]}" if src is not None and src.startswith(f"{old}#") else src

        for i in range(self.tokenizer_list.count()):
            item = self.tokenizer_list.item(i)
            item.setData(SRC_ROLE, follow(item.data(SRC_ROLE)))
            item.setToolTip(item.data(SRC_ROLE))
        for combo in (self.sweep_source, self.split_a, self.split_b):
            for i in range(combo.count()):
                combo.setItemData(i, follow(combo.itemData(i)))
        self._names = {follow(src) or src: name for src, name in self._names.items()}
        if self.split_sources is not None:
            a, b = self.split_sources
            self.split_sources = (follow(a) or a, follow(b) or b)
        for swept in self._swept.values():
            swept[1] = follow(swept[1])
        if self._question is not None:
            self._question["tokenizers"] = [[name, follow(src)] for name, src in self._question["tokenizers"]]

    # ---- the session kept in the project ------------------------------------------------------------
    def _relative(self, src: str) -> str:
        """A SRC of this project as ``#RUN`` / ``#ref:ID``, so it still names the run in a copy."""
        prefix = f"{self.project}#"
        return src[len(prefix) - 1:] if self.project is not None and src.startswith(prefix) else src

    def _absolute(self, src: str) -> str:
        return f"{self.project}{src}" if src.startswith("#") and self.project is not None else src

    def session_state(self) -> dict:
        """What the tab shows, as plain JSON for the project's settings: the tokenizers (ticked, added
        here), the files that differ from the project's own (added, unticked, labelled), the options,
        and the questions behind the results and sweeps shown — not the numbers: those come back
        from the metrics cache (or are counted again when a file changed)."""
        self._listed_now()
        tokenizers = [{"src": self._relative(item.data(SRC_ROLE)), "label": item.text(),
                       "added": bool(item.data(ADDED_ROLE)), "checked": item.checkState() == Qt.CheckState.Checked}
                      for item in (self.tokenizer_list.item(i) for i in range(self.tokenizer_list.count()))]
        labels = self.files.labels()
        files = [[path, options, labels.get(path), ticked]
                 for path, options, ticked in zip(self.files.paths, self.files.options, self.files.ticked)
                 if path not in self._project_files or not ticked or path in labels]
        question = None
        if self._question is not None:
            question = dict(self._question, tokenizers=[[n, self._relative(s)] for n, s in self._question["tokenizers"]])
            if question.get("classic") not in (None, "auto", ""):
                question["classic"] = self._relative(question["classic"])
        sweeps = None
        if self._sweeps_key is not None and self._swept:
            paths, points, d = self._sweeps_key
            sweeps = {"files": [list(f) for f in self._sweep_files], "points": points, "d": d,
                      "tokenizers": [[name, self._relative(src)] for name, (_r, src) in self._swept.items()
                                     if src is not None]}
        state = {"version": 1, "tokenizers": tokenizers, "files": files,
                 "baseline": self.baseline.currentText(), "parallel": self.parallel.isChecked(),
                 "d": self.d_spin.value(), "sweep_points": self.sweep_points.value(),
                 "results": question, "sweeps": sweeps}
        default_ticks = [t["checked"] for t in tokenizers] == [i < 2 for i in range(len(tokenizers))]
        untouched = (question is None and sweeps is None and not files and default_ticks
                     and not any(t["added"] for t in tokenizers) and not state["baseline"]
                     and not state["parallel"] and state["d"] == 768 and state["sweep_points"] == 16)
        return {} if untouched else state  # nothing a fresh listing would not show: nothing to keep

    def restore_session(self, state: dict) -> bool:
        """Bring back a :meth:`session_state` (after ``set_project``); stale or malformed parts are
        skipped. The results and sweeps it names are counted again off the GUI thread (from the
        cache: immediate when nothing changed). True when such a job started (or, while a long
        corpus listing runs, when the state is restored once it ends)."""
        self._listed_now()
        if not isinstance(state, dict) or state.get("version") != 1:
            return False
        if self._listing:
            self.when_listed(lambda: self.restore_session(state))
            return True
        wanted: dict[str, bool] = {}
        for entry in _dicts(state.get("tokenizers")):
            src, label = entry.get("src"), entry.get("label")
            if not isinstance(src, str):
                continue
            src = self._absolute(src)
            if entry.get("added") is True and isinstance(label, str) and src not in self._names:
                self._add_tokenizer_item(label, src, checked=False, added=True)
            wanted[src] = entry.get("checked") is True
        if wanted:
            for i in range(self.tokenizer_list.count()):
                item = self.tokenizer_list.item(i)
                on = wanted.get(item.data(SRC_ROLE), False)
                item.setCheckState(Qt.CheckState.Checked if on else Qt.CheckState.Unchecked)
        for row in _lists(state.get("files")):
            if len(row) != 4 or not isinstance(row[0], str) or not isinstance(row[1], dict):
                continue
            path, options, label, ticked = row
            self.files.add([(path, options, "", True)])
            if isinstance(label, str):
                self.set_language(path, label)
            self.set_file_checked(path, ticked is not False)
        if isinstance(state.get("baseline"), str):
            self.baseline.setCurrentText(state["baseline"])
        if isinstance(state.get("parallel"), bool):
            self.parallel.setChecked(state["parallel"])
        for spin, key in ((self.d_spin, "d"), (self.sweep_points, "sweep_points")):
            if isinstance(state.get(key), int) and not isinstance(state.get(key), bool):
                spin.setValue(state[key])
        question = _question(state.get("results"), self._absolute)
        if question is not None:  # the settings the restored table was computed with
            self.alpha_spin.setValue(question["alpha"])
            self.basis_combo.setCurrentIndex(max(0, self.basis_combo.findData(question["basis"])))
        self._fill_choosers()
        if question is not None:  # after the choosers hold the listed tokenizers a chosen baseline may be
            self.classic_combo.setCurrentIndex(max(0, self.classic_combo.findData(question["classic"])))
        return self._restore_results(question, _sweep_question(state.get("sweeps"), self._absolute))

    def _restore_results(self, question: dict | None, sweeps: dict | None) -> bool:
        if question is None and sweeps is None:
            return False
        should_stop, progress = self._should_stop, self._progress_hook()

        def job():
            from workbench.tasks.compare import ResultCache
            from workbench.tasks.compare_files import compare_files, sweep_file_set

            cache = ResultCache.default()
            result = None
            if question is not None:
                result = compare_files([tuple(t) for t in question["tokenizers"]], question["files"],
                                       baseline=question["baseline"], parallel=question["parallel"],
                                       d=question["d"], cache=cache, should_stop=should_stop, progress=progress,
                                       alpha=question["alpha"], basis=question["basis"],
                                       classic=question["classic"])
            swept = []
            if sweeps is not None:
                for name, src in sweeps["tokenizers"]:
                    one = sweep_file_set(src, sweeps["files"], name=name, points=sweeps["points"], d=sweeps["d"],
                                         cache=cache, should_stop=should_stop, progress=progress)
                    if one is not None:
                        swept.append((one, src))
            return result, swept

        def done(outcome) -> None:
            result, swept = outcome
            if result is not None:
                self._asked = question
                self._on_computed(result)
            if sweeps is not None:
                key = (tuple(path for path, _o, _l in sweeps["files"]), sweeps["points"], sweeps["d"])
                self._sweep_files = [list(f) for f in sweeps["files"]]
                for one, src in swept:
                    self._sweep_asked = src
                    self._on_swept(one, key)
            self.status.setText("The last session's results, shown again.")

        return self._start("Showing the last session's results", job, done)

    def refresh(self) -> None:
        """Runs or references changed: list them again, keeping what was ticked."""
        if self._pending_project is not None:  # listed in its own turn, soon (see _on_session_project)
            return
        ticked = set(self.checked_sources())
        keep = [self.tokenizer_list.item(i) for i in range(self.tokenizer_list.count())]
        added = [(it.text(), it.data(SRC_ROLE)) for it in keep if it.data(ADDED_ROLE)]
        self.tokenizer_list.clear()
        error = None
        try:
            entries, corpora = self._project_lists()
        except WorkbenchError as exc:
            entries, corpora, error = [], [], str(exc)
        first = not ticked
        for label, src in entries:
            self._add_tokenizer_item(label, src, checked=src in ticked or (first and self.tokenizer_list.count() < 2))
        for label, src in added:
            self._add_tokenizer_item(label, src, checked=src in ticked, added=True)
        if self._defer_choosers:
            self._choosers_due = True  # (see _set_pending_project)
        else:
            self._choosers_due = False
            self._fill_choosers()
        if error:
            self.status.setText(error)
        if corpora is None and self.project is not None:
            self._list_off_thread(self.project)
        elif corpora is not None:
            self._stop_listing()
            self._project_files = {path for path, _options in corpora}
            self.add_corpus_files(corpora)

    # ---- a long corpus listing: read off the GUI thread, shown in batches, stopped by a newer one ----
    def listing(self) -> bool:
        """Whether the project's corpus files are still being listed."""
        return self._listing != 0

    def when_listed(self, fn: Callable[[], object]) -> None:
        """Call ``fn`` once the corpus files are listed (now, if they are)."""
        if self._listing:
            self._after_listing.append(fn)
        else:
            fn()

    def _stop_listing(self) -> None:
        self.lister.cancel()
        self._listing = 0
        self._after_listing.clear()

    def _list_off_thread(self, project: Path) -> None:
        from workbench.tasks.compare_files import project_corpus_files

        self.lister.cancel()
        self._listing += 1
        generation = self._listing
        self.status.setText("Listing the project's corpus files…")

        def listed() -> tuple[list[tuple[str, dict]], set[str]]:
            corpora = project_corpus_files(project)  # and their set, on the worker too (100,000: 25 ms)
            return corpora, {path for path, _options in corpora}

        def done(result: tuple[list[tuple[str, dict]], set[str]]) -> None:
            if self._listing == generation:
                corpora, self._project_files = result
                self._add_batches(generation, corpora, 0)

        def failed(message: str) -> None:
            if self._listing == generation:
                self._listing = 0
                self._after_listing.clear()
                self.status.setText(message)

        self.lister.submit(listed, done, failed, key="listing")

    def _add_batches(self, generation: int, corpora: list[tuple[str, dict]], start: int) -> None:
        """Add files a few ms of the window's thread per turn (:func:`~workbench.ui.jobs.feed_in_batches`)."""
        def finished() -> None:
            self._listing = 0
            self.status.setText(f"{len(corpora):,} corpus files listed. Tick tokenizers and files, then Compute.")
            pending, self._after_listing = self._after_listing, []
            for fn in pending:
                fn()

        feed_in_batches(corpora, lambda batch: self.add_corpus_files(list(batch)),
                        lambda: self._listing == generation and not self._shut_down, finished,
                        lambda done, total: self.status.setText(
                            f"Listing the project's corpus files… {done:,} of {total:,}"), start=start)

    def _project_lists(self) -> tuple[list[tuple[str, str]], list[tuple[str, dict]] | None]:
        """(label, SRC) of each finished run and reference, and the corpus files, of the open project
        (None for a long list of files: :meth:`_list_off_thread` reads them)."""
        if self.project is None:
            return [], []
        if self.session is not None and self.session.store is not None and self.session.path == self.project:
            runs, refs = self.session.runs(), self.session.references()
            corpora = self.session.corpus_paths() if self.session.corpus_count() < LIST_OFF_THREAD else None
        else:
            from workbench.ui.project_session import open_read

            with open_read(self.project) as store:
                runs, refs = store.runs(), store.references()
                seen: dict[str, dict] = {}
                for c in store.corpora():
                    seen[c.path] = c.reader_options
                corpora = list(seen.items())
        entries = []
        for run in runs:
            if run.merge_count > 0 or run.status == "finished":
                status = "" if run.status == "finished" else f" ({run.status})"
                entries.append((f"Run {run.id} · {run.name}{status}", f"{self.project}#{run.id}"))
        for ref in refs:
            entries.append((f"{ref.name} · imported {ref.format}", f"{self.project}#ref:{ref.id}"))
        return entries, corpora

    def _add_tokenizer_item(self, label: str, src: str, *, checked: bool, added: bool = False) -> None:
        item = QListWidgetItem(label)
        item.setData(SRC_ROLE, src)
        item.setData(ADDED_ROLE, added)
        item.setToolTip(src)
        item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
        item.setCheckState(Qt.CheckState.Checked if checked else Qt.CheckState.Unchecked)
        self.tokenizer_list.addItem(item)
        self._names[src] = label

    def add_tokenizer_file(self, path: str | Path, *, checked: bool = True) -> None:
        """A tokenizer outside the project (tokenizer.json, .tiktoken, vocab.json, another .tokproj)."""
        src = str(path)
        for i in range(self.tokenizer_list.count()):
            if self.tokenizer_list.item(i).data(SRC_ROLE) == src:
                return
        self._add_tokenizer_item(Path(src).name, src, checked=checked, added=True)
        self._fill_choosers()

    def add_corpus_file(self, path: str | Path, options: dict | None = None, *, language: str = "",
                        checked: bool = True) -> None:
        """List one more file (ticked); a file already listed stays as it is."""
        self.add_corpus_files([(str(path), options or {})], checked=checked, language=language)

    def add_corpus_files(self, files: list[tuple[str, dict]], *, checked: bool = True, language: str = "") -> int:
        """List (path, reader options) not listed yet, in one step; how many were new. Without a
        ``language`` the one a name carries (en_wiki.txt, news.de.txt) is shown, for the user to correct."""
        return self.files.add([(str(path), options, language, checked) for path, options in files])

    def set_language(self, path: str | Path, language: str) -> None:
        self.files.set_language(str(path), language)

    def set_file_checked(self, path: str | Path, checked: bool) -> None:
        self.files.set_ticked(str(path), checked)

    def _fill_classic(self, sources: Sequence[tuple[str, str]] = ()) -> None:
        """The “Gini against” choices: automatic, none, or one of the listed tokenizers."""
        from workbench.tasks.gini_pairs import AUTO, NONE

        current = self.classic_combo.currentData()
        self.classic_combo.clear()
        self.classic_combo.addItem("classic BPE of the same size (automatic)", AUTO)
        self.classic_combo.addItem("nothing (no pairs)", NONE)
        for label, src in sources:
            self.classic_combo.addItem(label, src)
        index = self.classic_combo.findData(current) if current is not None else -1
        self.classic_combo.setCurrentIndex(max(0, index))

    def _fill_choosers(self) -> None:
        sources = [(self.tokenizer_list.item(i).text(), self.tokenizer_list.item(i).data(SRC_ROLE))
                   for i in range(self.tokenizer_list.count())]
        self._fill_classic(sources)
        for combo, default in ((self.sweep_source, 0), (self.split_a, 0), (self.split_b, 1)):
            current = combo.currentData()
            combo.clear()
            for label, src in sources:
                combo.addItem(label, src)
            index = combo.findData(current) if current is not None else -1
            combo.setCurrentIndex(index if index >= 0 else min(default, combo.count() - 1))

    def compare_runs(self, run_ids: list[int]) -> None:
        """Tick exactly these runs of the open project (sent from the Train tab's history)."""
        self._listed_now()
        if self.project is None:
            return
        self.refresh()
        wanted = {f"{self.project}#{run_id}" for run_id in run_ids}
        for i in range(self.tokenizer_list.count()):
            item = self.tokenizer_list.item(i)
            item.setCheckState(Qt.CheckState.Checked if item.data(SRC_ROLE) in wanted else Qt.CheckState.Unchecked)
        self.status.setText(f"{len(wanted)} run{'s' if len(wanted) != 1 else ''} from the Train tab: "
                            "pick corpus files, then Compute.")

    # ---- what is ticked ---------------------------------------------------------------------------------
    def checked_sources(self) -> list[str]:
        return [self.tokenizer_list.item(i).data(SRC_ROLE) for i in range(self.tokenizer_list.count())
                if self.tokenizer_list.item(i).checkState() == Qt.CheckState.Checked]

    def checked_files(self) -> list[tuple[str, dict, str]]:
        """(path, reader options, language label or "") of the ticked files."""
        return self.files.checked()

    # ---- jobs -------------------------------------------------------------------------------------------
    def _start(self, what: str, fn: Callable[[], Any], on_done: Callable[[Any], None]) -> bool:
        if self.tasks.busy():
            return False
        self._stop = False
        self.status.setText(f"{what}…")
        self.progress.setValue(0)
        self.tasks.submit(fn, on_done, self._on_failed)
        return True

    def _should_stop(self) -> bool:
        return self._stop

    def _progress_hook(self) -> Callable[[int, int, str], None]:
        emit = self._relay.progress.emit
        return lambda done, total, what: emit(done, total, what)

    def _advise(self) -> None:
        """The advisor's line on the sweep chart and its paragraph (nothing when switched off)."""
        from workbench.core.vocab_advisor import advise, describe

        nnv = self.advisor_nnv.value() * 1e9
        text = self.advisor_flops.text().strip()
        if nnv <= 0:
            self.sweep_chart.set_advice(None)
            self.advisor_note.setText("")
            return
        try:
            flops = float(text) if text else None
            advice = advise(nnv, flops)
        except (ValueError, WorkbenchError):
            self.sweep_chart.set_advice(None)
            self.advisor_note.setText(f"training FLOPs {text!r}: write a positive number such as 2.3e21, "
                                      "or leave it empty for the compute-optimal budget")
            return
        self.sweep_chart.set_advice(advice.parametric)
        self.advisor_note.setText(describe(advice))

    def compute(self) -> bool:
        """Count every ticked tokenizer on every ticked file (off the GUI thread)."""
        chosen = [(self._names.get(src, src), src) for src in self.checked_sources()]
        if not chosen:
            self.status.setText("Tick at least one tokenizer.")
            return False
        baseline = self.baseline.currentText().strip() or None
        parallel, d = self.parallel.isChecked(), self.d_spin.value()
        alpha, basis = self.alpha_spin.value(), self.basis_combo.currentData()
        classic = self.classic_combo.currentData() or ""
        should_stop, progress = self._should_stop, self._progress_hook()

        def job():
            from workbench.tasks.compare_files import compare_files

            return compare_files(chosen, files, baseline=baseline, parallel=parallel, d=d,
                                 should_stop=should_stop, progress=progress, alpha=alpha, basis=basis,
                                 classic=classic)

        files = self.checked_files()
        if not files:
            self.status.setText("Tick at least one corpus file (or add one with “Add corpus files…”).")
            return False
        if not self._start("Counting tokens", job, self._on_computed):
            return False
        self._asked = {"tokenizers": [[name, src] for name, src in chosen], "files": [list(f) for f in files],
                       "baseline": baseline, "parallel": parallel, "d": d, "alpha": alpha, "basis": basis,
                       "classic": classic}
        return True

    def run_sweep(self) -> bool:
        src = self.sweep_source.currentData()
        files = self.checked_files()
        if src is None or not files:
            self.status.setText("Choose a tokenizer and tick at least one held-out file for the sweep.")
            return False
        name, points, d = self._names.get(src, src), self.sweep_points.value(), self.d_spin.value()
        should_stop, progress = self._should_stop, self._progress_hook()

        def job():
            from workbench.tasks.compare_files import sweep_file_set

            return sweep_file_set(src, files, name=name, points=points, d=d, should_stop=should_stop,
                                  progress=progress)

        key = (tuple(path for path, _o, _l in files), points, d)

        def done(result) -> None:
            self._sweep_asked = src
            if key != self._sweeps_key:
                self._sweep_files = [list(f) for f in files]
            self._on_swept(result, key)

        if not self._start("Sweeping vocabulary sizes", job, done):
            return False  # busy: the curves on the chart stay as they are
        return True

    def compare_splits(self) -> bool:
        a, b = self.split_a.currentData(), self.split_b.currentData()
        files = self.checked_files()
        if a is None or b is None or not files:
            self.status.setText("Choose tokenizers A and B and tick at least one file.")
            return False
        should_stop, progress = self._should_stop, self._progress_hook()

        def job():
            from workbench.tasks.compare_files import split_files

            return split_files(a, b, files, should_stop=should_stop, progress=progress)

        self._split_asked = (a, b)
        return self._start("Comparing splits", job, self._on_splits)

    @Slot()
    def cancel(self) -> None:
        self._stop = True
        self.status.setText("Cancelling…")

    # ---- results (GUI thread) ---------------------------------------------------------------------------
    @Slot(int, int, str)
    def _on_progress(self, done: int, total: int, what: str) -> None:
        if self._stop:
            return
        self.progress.setValue(int(1000 * done / max(total, 1)))
        self.status.setText(what[:1].upper() + what[1:] + "…")

    @Slot(bool)
    def _on_busy(self, busy: bool) -> None:
        for button in (self.compute_button, self.sweep_button, self.split_button):
            button.setEnabled(not busy)
        self.cancel_button.setEnabled(busy)
        self.progress.setVisible(busy)
        self.busy_changed.emit(busy)

    def _on_failed(self, message: str) -> None:
        self.status.setText(message)
        self.failed.emit(message)

    def _on_computed(self, result) -> None:
        if result is None:
            self.status.setText("Cancelled; the table shows the previous results.")
            self.failed.emit("cancelled")
            return
        self.result = result
        self._question = self._asked
        self.file_model.set_metrics(result.per_file)
        self.language_model.set_metrics(result.per_language + result.totals)
        self.fairness_model.set_fairness(result.fairness, result.per_language)
        self.bar_chart.set_rows(result.per_language, result.fairness, result.baseline)
        self._show_pairs(result.gini_pairs)
        languages = result.languages
        current = self.baseline.currentText()
        self.baseline.clear()
        self.baseline.addItems(["", *languages])
        self.baseline.setCurrentText(current)
        for view in (self.file_view, self.language_view, self.fairness_view):
            view.resizeColumnsToContents()
            view.setColumnWidth(0, min(view.columnWidth(0), 260))
        cached = f" ({result.cache_hits} results from the cache)" if result.cache_hits else ""
        paired = sum(1 for p in result.gini_pairs if p.pair.before is not None)
        pairs = (f" Gini vs classic BPE: {paired} of {len(result.gini_pairs)} paired (its own tab)."
                 if result.gini_pairs else "")
        self.status.setText(f"{len(result.totals)} tokenizers × {len(result.files)} files, "
                            f"{len(languages)} languages{cached}.{pairs}")
        self.computed.emit(result)

    def _show_pairs(self, pairs: list) -> None:
        """The “Gini vs classic BPE” page: one line per pair above the table (a pair without a
        baseline says how to make one); the page comes to the front when a pair was found and the
        plain per-file table was showing."""
        self.gini_model.set_pairs(pairs)
        self.gini_view.resizeColumnsToContents()
        if not pairs:
            classic = (self._asked or {}).get("classic", "auto")
            self.gini_note.setText(PAIRS_OFF if classic == "" else EMPTY_PAIRS)
            return
        cost = pairs[0].cost
        lines = [p.summary() for p in pairs]
        self.gini_note.setText("\n".join(lines) + f"\nToken cost per language: {cost} (lower is cheaper); "
                               "Gini 0 = every language costs the same.")
        if any(p.pair.before is not None for p in pairs) and self.tabs.currentIndex() == 0:
            self.tabs.setCurrentWidget(self.gini_page)

    def _on_swept(self, result, key: tuple | None = None) -> None:
        """A finished sweep joins the curves of the same files, points and d (``key``, taken when the
        sweep started, so a sweep that ran while the choice changed lands with its own kind)."""
        if result is None:
            self.status.setText("Sweep cancelled.")
            self.failed.emit("cancelled")
            return
        self.sweep_result = result
        if key != self._sweeps_key:  # other files, points or width: earlier curves are not comparable
            self._sweeps, self._sweeps_key, self._swept = {}, key, {}
        self._sweeps.pop(result.tokenizer, None)
        self._sweeps[result.tokenizer] = result  # the latest last: drawn on top
        self._swept.pop(result.tokenizer, None)
        self._swept[result.tokenizer] = [result, self._sweep_asked]
        self.sweep_chart.set_sweeps(list(self._sweeps.values()))
        knee = result.knee
        if knee is None:
            note = (f"{result.tokenizer}: no knee yet — characters/token still grows by ≥ "
                    f"{100 * result.threshold:g} % per 1,000 entries at the largest vocabulary.")
        else:
            p = result.points[knee]
            where = {"merges": f"{p.step:,} merges", "cut": f"final model cut to {p.step:,} pieces",
                     "pruning round": f"pruning round at step {p.step:,}"}.get(p.kind, p.kind)
            note = (f"{result.tokenizer}: knee at |V| = {p.vocab_size:,} ({where}): every later step gains less "
                    f"than {100 * result.threshold:g} % characters/token per 1,000 entries, "
                    f"while V × d keeps growing.")
        if result.note:
            note += f" Note: {result.note}."
        self.sweep_note.setText(note)
        self.status.setText(f"Sweep of {result.tokenizer}: {len(result.points)} points.")
        self.swept.emit(result)

    def _on_splits(self, report) -> None:
        if report is None:
            self.status.setText("Cancelled.")
            self.failed.emit("cancelled")
            return
        self.split_result = report
        self.split_sources = self._split_asked
        self.split_model.set_differences(report.differences[:MAX_SPLIT_ROWS])
        self.split_view.resizeColumnsToContents()
        # One long "word" (a whole line of CJK text has no spaces) must not push the splits off screen.
        self.split_view.setColumnWidth(0, min(self.split_view.columnWidth(0), 260))
        self.split_note.setText(f"{len(report.differences):,} of {report.word_types:,} distinct words split "
                                f"differently ({100 * report.differing_share:.1f} % of word occurrences); "
                                f"the {min(len(report.differences), MAX_SPLIT_ROWS)} most frequent are listed.")
        self.status.setText("Splits compared.")
        self.splits_ready.emit(report)

    # ---- a differing word into the Inspect tab --------------------------------------------------------------
    def open_split_in_inspector(self, row: int) -> bool:
        """Ask for row ``row``'s word under A and B in the Inspect tab (``inspect_requested``)."""
        if self.split_sources is None or not 0 <= row < len(self.split_model.rows):
            return False
        word = self.split_model.rows[row].word
        self.inspect_requested.emit(word, list(self.split_sources))
        return True

    @Slot(QModelIndex)
    def _on_split_activated(self, index: QModelIndex) -> None:
        if index.isValid():
            self.open_split_in_inspector(index.row())

    @Slot(QPoint)
    def _on_split_menu(self, point: QPoint) -> None:
        index = self.split_view.indexAt(point)
        if not index.isValid():
            return
        menu = QMenu(self.split_view)
        action = menu.addAction("Open in Inspector")
        action.setEnabled(self.split_sources is not None)
        chosen = menu.exec(self.split_view.viewport().mapToGlobal(point))
        if chosen is action:
            self.open_split_in_inspector(index.row())

    # ---- export -------------------------------------------------------------------------------------------
    def table_models(self) -> dict[str, RowsModel]:
        return {"file": self.file_model, "language": self.language_model, "fairness": self.fairness_model,
                "splits": self.split_model, "gini": self.gini_model}

    def export_table_csv(self, path: str | Path, which: str = "file") -> Path:
        from workbench.formats.tables import write_csv

        model = self.table_models()[which]
        write_csv(path, model.csv_header(), model.csv_rows())
        return Path(path)

    def export_chart(self, path: str | Path, which: str = "bars") -> Path:
        chart = self.bar_chart if which == "bars" else self.sweep_chart
        return chart.export(path)

    def _current_table(self) -> str | None:
        page = self.tabs.currentIndex()
        return {0: "file", 1: "language", 4: "splits", 5: "gini"}.get(page)

    def _on_export_csv_clicked(self) -> None:
        which = self._current_table() or "file"
        path, _ = QFileDialog.getSaveFileName(self, "Export table as CSV", f"compare-{which}.csv", "CSV (*.csv)")
        if path:
            self._report(lambda: self.export_table_csv(path, which))

    def _on_export_chart_clicked(self) -> None:
        which = "sweep" if self.tabs.currentIndex() == 3 else "bars"
        path, _ = QFileDialog.getSaveFileName(self, "Export chart", f"compare-{which}.png",
                                              "PNG image (*.png);;SVG drawing (*.svg)")
        if path:
            self._report(lambda: self.export_chart(path, which))

    def _report(self, action: Callable[[], Path]) -> None:
        try:
            written = action()
        except WorkbenchError as exc:
            self.status.setText(str(exc))
        else:
            self.status.setText(f"Wrote {written}")

    def _on_add_tokenizer_clicked(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Add a tokenizer", "",
                                              "Tokenizers (*.json *.tiktoken *.tokproj *.model *.txt);;All files (*)")
        if path:
            self.add_tokenizer_file(path)

    def _on_add_files_clicked(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(self, "Add corpus files", "",
                                                "Text (*.txt *.jsonl *.csv *.tsv *.gz);;All files (*)")
        self.add_corpus_files([(path, {}) for path in paths])

    # ---- shutting down -------------------------------------------------------------------------------------
    @Slot()
    def shutdown(self) -> None:
        """Stop a running job and join its thread (the window calls this on quit; tests in teardown)."""
        if self._shut_down:
            return
        self._shut_down = True
        self._stop = True
        self._stop_listing()
        self.lister.shutdown()
        self.tasks.shutdown()

    def closeEvent(self, event) -> None:
        self.shutdown()
        super().closeEvent(event)


def _table(model) -> QTableView:
    view = QTableView()
    view.setModel(model)
    view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    view.setAlternatingRowColors(True)
    view.verticalHeader().setVisible(False)
    view.horizontalHeader().setStretchLastSection(True)
    view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    return view


def _dicts(value: object) -> list[dict]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _lists(value: object) -> list[list]:
    return [v for v in value if isinstance(v, list)] if isinstance(value, list) else []


def _files(value: object) -> list[list] | None:
    """[[path, options, label], …] as stored, or None when malformed."""
    rows = _lists(value)
    if not rows or any(len(r) != 3 or not isinstance(r[0], str) or not isinstance(r[1], dict)
                       or not isinstance(r[2], str) for r in rows):
        return None
    return [[r[0], r[1], r[2]] for r in rows]


def _named(value: object, absolute: Callable[[str], str]) -> list[list[str]] | None:
    rows = _lists(value)
    if not rows or any(len(r) != 2 or not all(isinstance(x, str) for x in r) for r in rows):
        return None
    return [[name, absolute(src)] for name, src in rows]


def _question(value: object, absolute: Callable[[str], str]) -> dict | None:
    """The stored question behind a results table, checked field by field (None when unusable)."""
    if not isinstance(value, dict):
        return None
    files, tokenizers = _files(value.get("files")), _named(value.get("tokenizers"), absolute)
    baseline, d = value.get("baseline"), value.get("d")
    if files is None or tokenizers is None or not (baseline is None or isinstance(baseline, str)):
        return None
    if not isinstance(d, int) or isinstance(d, bool) or d <= 0:
        return None
    alpha, basis = value.get("alpha", 2.5), value.get("basis", "declared")
    if not isinstance(alpha, (int, float)) or isinstance(alpha, bool) or not 0 < alpha <= 100:
        alpha = 2.5  # a session from before α was asked, or a broken value: the default
    classic = value.get("classic", "auto")
    if not isinstance(classic, str):
        classic = "auto"  # a session from before the pairs were shown, or a broken value
    elif classic not in ("auto", ""):
        classic = absolute(classic)
    return {"tokenizers": tokenizers, "files": files, "baseline": baseline,
            "parallel": value.get("parallel") is True, "d": d, "alpha": float(alpha),
            "basis": basis if basis in ("declared", "observed") else "declared", "classic": classic}


def _sweep_question(value: object, absolute: Callable[[str], str]) -> dict | None:
    if not isinstance(value, dict):
        return None
    files, tokenizers = _files(value.get("files")), _named(value.get("tokenizers"), absolute)
    points, d = value.get("points"), value.get("d")
    if files is None or tokenizers is None:
        return None
    if not all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in (points, d)):
        return None
    return {"files": files, "tokenizers": tokenizers, "points": points, "d": d}
