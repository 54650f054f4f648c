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

from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QModelIndex, QObject, QPoint, Qt, Signal, Slot
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTableView,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from workbench.corpus.language import language_from_name
from workbench.errors import WorkbenchError
from workbench.tasks.compare import Sweep
from workbench.ui.compare.charts import LanguageBarChart, SweepChart
from workbench.ui.compare.models import (
    FairnessTableModel,
    MetricsTableModel,
    RowsModel,
    SplitTableModel,
)
from workbench.ui.jobs import JobRunner

SRC_ROLE = Qt.ItemDataRole.UserRole
OPTIONS_ROLE = Qt.ItemDataRole.UserRole + 1
ADDED_ROLE = Qt.ItemDataRole.UserRole + 2  # a tokenizer added here, not one of the project's
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
        self._stop = False
        self._shut_down = False
        self.tasks = JobRunner(self)
        self.tasks.busy_changed.connect(self._on_busy)
        self._relay = _Relay()
        self._relay.progress.connect(self._on_progress)
        self._build()
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

        self.file_table = QTableWidget(0, 2)
        self.file_table.setHorizontalHeaderLabels(["Corpus file", "Language"])
        self.file_table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.file_table.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        self.file_table.verticalHeader().setVisible(False)
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

        self.tabs = QTabWidget()
        self.tabs.addTab(self.file_view, "Per file")
        self.tabs.addTab(lang_page, "Per language")
        self.tabs.addTab(self.bar_chart, "Tokens vs baseline")
        self.tabs.addTab(sweep_page, "Vocabulary sweep")
        self.tabs.addTab(split_page, "Split differences")
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
        self.set_project(self.session.path if self.session is not None else None)

    def set_project(self, path: Path | None) -> None:
        """List this project's runs, references and corpus files (files added here stay)."""
        self.project = Path(path) if path is not None else None
        self.refresh()

    def refresh(self) -> None:
        """Runs or references changed: list them again, keeping what was ticked."""
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
        for path, options in corpora:
            self.add_corpus_file(path, options)
        self._fill_choosers()
        if error:
            self.status.setText(error)

    def _project_lists(self) -> tuple[list[tuple[str, str]], list[tuple[str, dict]]]:
        """(label, SRC) of each finished run and reference, and the corpus files, of the open project."""
        if self.project is None:
            return [], []
        if self.session is not None and self.session.store is not None and self.session.path == self.project:
            runs, refs, corpora = self.session.runs(), self.session.store.references(), self.session.corpus_paths()
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
        path = str(path)
        for row in range(self.file_table.rowCount()):
            item = self.file_table.item(row, 0)
            if item is not None and item.data(SRC_ROLE) == path:
                return
        row = self.file_table.rowCount()
        self.file_table.insertRow(row)
        item = QTableWidgetItem(Path(path).name)
        item.setToolTip(path)
        item.setData(SRC_ROLE, path)
        item.setData(OPTIONS_ROLE, dict(options or {}))
        item.setFlags((item.flags() | Qt.ItemFlag.ItemIsUserCheckable) & ~Qt.ItemFlag.ItemIsEditable)
        item.setCheckState(Qt.CheckState.Checked if checked else Qt.CheckState.Unchecked)
        self.file_table.setItem(row, 0, item)
        # The language its name carries (en_wiki.txt, news.de.txt) filled in, for the user to correct.
        self.file_table.setItem(row, 1, QTableWidgetItem(language or language_from_name(path) or ""))

    def set_language(self, path: str | Path, language: str) -> None:
        for row in range(self.file_table.rowCount()):
            item, label = self.file_table.item(row, 0), self.file_table.item(row, 1)
            if item is not None and label is not None and item.data(SRC_ROLE) == str(path):
                label.setText(language)

    def _fill_choosers(self) -> None:
        sources = [(self.tokenizer_list.item(i).text(), self.tokenizer_list.item(i).data(SRC_ROLE))
                   for i in range(self.tokenizer_list.count())]
        for combo, default in ((self.sweep_source, 0), (self.split_a, 0), (self.split_b, 1)):
            current = combo.currentData()
            combo.clear()
            for label, src in sources:
                combo.addItem(label, src)
            index = combo.findData(current) if current is not None else -1
            combo.setCurrentIndex(index if index >= 0 else min(default, combo.count() - 1))

    def compare_runs(self, run_ids: list[int]) -> None:
        """Tick exactly these runs of the open project (sent from the Train tab's history)."""
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
        out = []
        for row in range(self.file_table.rowCount()):
            item = self.file_table.item(row, 0)
            if item is not None and item.checkState() == Qt.CheckState.Checked:
                lang = self.file_table.item(row, 1)
                out.append((item.data(SRC_ROLE), item.data(OPTIONS_ROLE) or {}, lang.text().strip() if lang else ""))
        return out

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

    def compute(self) -> bool:
        """Count every ticked tokenizer on every ticked file (off the GUI thread)."""
        chosen = [(self._names.get(src, src), src) for src in self.checked_sources()]
        if not chosen:
            self.status.setText("Tick at least one tokenizer.")
            return False
        baseline = self.baseline.currentText().strip() or None
        parallel, d = self.parallel.isChecked(), self.d_spin.value()
        should_stop, progress = self._should_stop, self._progress_hook()

        def job():
            from workbench.tasks.compare import ResultCache, compare_corpus
            from workbench.tasks.sources import load_tokenizer

            sources, labels = self._sources_and_labels_from(files)
            tokenizers = [(name, load_tokenizer(src)) for name, src in chosen]
            return compare_corpus(tokenizers, sources, labels=labels, baseline=baseline, parallel=parallel, d=d,
                                  cache=ResultCache.default(), should_stop=should_stop, progress=progress)

        files = self.checked_files()
        if not files:
            self.status.setText("Tick at least one corpus file (or add one with “Add corpus files…”).")
            return False
        return self._start("Counting tokens", job, self._on_computed)

    @staticmethod
    def _sources_and_labels_from(files: list[tuple[str, dict, str]]):
        from workbench.corpus import open_source

        sources, labels = [], {}
        for path, options, lang in files:
            opts = {k: v for k, v in options.items() if k in ("field", "column", "encoding", "kind")}
            sources.append(open_source(path, **opts))
            if lang:
                labels[path] = lang
        return sources, labels

    def run_sweep(self) -> bool:
        src = self.sweep_source.currentData()
        files = self.checked_files()
        if src is None or not files:
            self.status.setText("Choose a tokenizer and tick at least one held-out file for the sweep.")
            return False
        name, points, d = self._names.get(src, src), self.sweep_points.value(), self.d_spin.value()
        should_stop, progress = self._should_stop, self._progress_hook()

        def job():
            from workbench.tasks.compare import ResultCache, sweep_files, sweep_source

            sources, _labels = self._sources_and_labels_from(files)
            tokenizer, pruning = sweep_source(src)
            return sweep_files(tokenizer, sources, name=name, points=points, d=d, pruning=pruning,
                               cache=ResultCache.default(), should_stop=should_stop, progress=progress)

        key = (tuple(path for path, _o, _l in files), points, d)
        if not self._start("Sweeping vocabulary sizes", job, lambda result: self._on_swept(result, key)):
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
            from workbench.tasks.compare import split_report
            from workbench.tasks.sources import load_tokenizer

            sources, _labels = self._sources_and_labels_from(files)
            return split_report(load_tokenizer(a), load_tokenizer(b), sources, should_stop=should_stop,
                                progress=progress)

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
        self.file_model.set_metrics(result.per_file)
        self.language_model.set_metrics(result.per_language + result.totals)
        self.fairness_model.set_fairness(result.fairness)
        self.bar_chart.set_rows(result.per_language, result.fairness, result.baseline)
        languages = result.languages
        current = self.baseline.currentText()
        self.baseline.clear()
        self.baseline.addItems(["", *languages])
        self.baseline.setCurrentText(current)
        for view in (self.file_view, self.language_view, self.fairness_view):
            view.resizeColumnsToContents()
            view.setColumnWidth(0, min(view.columnWidth(0), 260))
        cached = f" ({result.cache_hits} results from the cache)" if result.cache_hits else ""
        self.status.setText(f"{len(result.totals)} tokenizers × {len(result.files)} files, "
                            f"{len(languages)} languages{cached}.")
        self.computed.emit(result)

    def _on_swept(self, result, key: tuple | None = None) -> None:
        """A finished sweep joins the curves of the same files, points and d (``key``, taken when the
        sweep started, so a sweep that ran while the choice changed lands with its own kind)."""
        if result is None:
            self.status.setText("Sweep cancelled.")
            self.failed.emit("cancelled")
            return
        self.sweep_result = result
        if key != self._sweeps_key:  # other files, points or width: earlier curves are not comparable
            self._sweeps, self._sweeps_key = {}, key
        self._sweeps.pop(result.tokenizer, None)
        self._sweeps[result.tokenizer] = result  # the latest last: drawn on top
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
                "splits": self.split_model}

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
        return {0: "file", 1: "language", 4: "splits"}.get(page)

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
        for path in paths:
            self.add_corpus_file(path)

    # ---- shutting down -------------------------------------------------------------------------------------
    @Slot()
    def shutdown(self) -> None:
        """Stop a running job and join its thread (the window calls this on quit; tests in teardown)."""
        if self._shut_down:
            return
        self._shut_down = True
        self._stop = True
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
