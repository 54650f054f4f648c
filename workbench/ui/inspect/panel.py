"""Inspect: type text, see how it splits under the project's tokenizers, as you type.

The panel owns the columns (:class:`~workbench.ui.inspect.pane.TokenPane`, one to four tokenizers
side by side), the panels below them (ids, counts, decode) and the worker thread. Data flow:

    keystroke ─▶ debounce (50 ms) ─▶ InspectJob(generation) ─▶ worker thread
    worker ─▶ JobResult(generation) ─▶ dropped unless it is the latest ─▶ panes draw it

Nothing here tokenizes; nothing in the worker touches a widget. Integration contract (the main
window uses exactly this): ``token_selected(source, token_id)``, ``set_project(path)``,
``refresh()``, ``highlight_token(source, token_id)``. ``results_applied(generation)`` is a
GUI-thread signal for tests and the benchmark to wait on.
"""

from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import QCoreApplication, Qt, QTimer, Signal, Slot
from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QMenu,
    QPushButton,
    QScrollArea,
    QScrollBar,
    QSplitter,
    QStackedWidget,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from workbench.errors import WorkbenchError
from workbench.ui.empty_state import EmptyState
from workbench.ui.inspect.pane import SourceInfo, TokenPane
from workbench.ui.inspect.pipeline_tab import PipelineView
from workbench.ui.inspect.side import CountsTable, DecodeBox, IdsPanel, replace_lines
from workbench.ui.inspect.worker import (
    ImportOutcome,
    ImportRequest,
    InspectJob,
    JobResult,
    Source,
    WorkerThread,
)
from workbench.ui.jobs import JobRunner
from workbench.ui.project_session import INSPECT_SESSION_NAME, open_read, open_write
from workbench.ui.settings import AppSettings

SAMPLE_TEXT = (
    "Tokenizers split text into pieces. Type here to see how yours does it.\n"
    "中文也可以：分词器会怎样切分这句话？ Emoji too: 👩‍💻 🇩🇪 👍🏽\n"
    "def greet(name):\n"
    "    return f\"Hello, {name}!\"  # 4 spaces, a tab:\there\n"
)


class InspectPanel(QWidget):
    """The Inspect tab."""

    token_selected = Signal(object, int)  # (source, token_id); source = ("run", id) or ("ref", id)
    results_applied = Signal(int)  # generation, after the panes drew a result
    import_finished = Signal(object)  # ImportOutcome
    _job_posted = Signal(object)
    _import_posted = Signal(object)

    DEBOUNCE_MS = 50
    MAX_WAIT_MS = 120
    MAX_PANES = 4

    def __init__(self, parent: QWidget | None = None, *, session=None):
        super().__init__(parent)
        self.project: Path | None = None
        self.session = session  # a ProjectSession (its decoded runs), or None: the file is read here
        self.sources: list[SourceInfo] = []
        self.panes: list[TokenPane] = []
        self.active: TokenPane | None = None
        self._generation = 0
        self._applied = 0
        self._selection: tuple[Source, int] | None = None
        self._scroll_to_selection = False
        self._last_result: JobResult | None = None
        self._posted: tuple | None = None
        self._syncing = False  # scroll bars being moved to follow another column
        self._shut_down = False

        self._thread = WorkerThread()
        self.jobs = JobRunner(self, max_threads=1)  # short side jobs: the n-best lists
        worker = self._thread.worker
        self._job_posted.connect(worker.run_job)
        self._import_posted.connect(worker.run_import)
        worker.finished.connect(self._on_result)
        worker.loading.connect(self._on_loading)
        worker.imported.connect(self._on_imported)
        app = QCoreApplication.instance()
        if app is not None:
            app.aboutToQuit.connect(self.shutdown)
        thread = self._thread
        self.destroyed.connect(lambda *_args, t=thread: t.stop())

        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(self.DEBOUNCE_MS)
        self._debounce.timeout.connect(self._post_job)
        self._pending_since = 0.0
        self.last_apply_seconds = 0.0  # GUI-thread time spent drawing the last result
        self.last_worker_seconds = 0.0

        self._build()
        self.primary.editor.setPlainText(SAMPLE_TEXT)
        self.primary.editor.document().contentsChanged.connect(self._on_text_changed)
        self.primary.editor.cursorPositionChanged.connect(self._on_cursor_moved)
        self._update_empty_state()

    # ---- building --------------------------------------------------------------------------------
    def _build(self) -> None:
        self.show_whitespace = QCheckBox("Show whitespace")
        self.show_whitespace.setToolTip("Draw spaces as ⋅, tabs as → and line breaks as ↵ "
                                        "(always shown inside the token under the mouse)")
        self.show_whitespace.toggled.connect(self._on_show_whitespace)
        self.special_mode = QComboBox()
        self.special_mode.addItem("Special tokens: treat as text", False)
        self.special_mode.addItem("Special tokens: recognise", True)
        self.special_mode.setToolTip("Whether <|endoftext|> and the like in the text become their special ids")
        self.special_mode.currentIndexChanged.connect(self._schedule)
        self.colour_mode = QComboBox()
        self.colour_mode.addItem("Colours: by position", False)
        self.colour_mode.addItem("Colours: one per id", True)
        self.colour_mode.setToolTip("By position: neighbours always differ. One per id: the same token gets the "
                                    "same colour everywhere (shifted only where two neighbours would match)")
        self.colour_mode.currentIndexChanged.connect(self._schedule)
        self.line_breaks = QComboBox()
        self.line_breaks.addItem("Line breaks: \\n", "\n")
        self.line_breaks.addItem("Line breaks: \\r\\n", "\r\n")
        self.line_breaks.setToolTip("How a line break is encoded (set to \\r\\n when text with Windows line "
                                    "breaks is pasted)")
        self.line_breaks.currentIndexChanged.connect(self._schedule)
        self.line_breaks.currentIndexChanged.connect(self._on_line_breaks)
        self.whole_graphemes = QCheckBox("Whole characters")
        self.whole_graphemes.setChecked(True)
        self.whole_graphemes.setToolTip(
            "Show the tokens that split an emoji sequence, a flag or a letter and its accent together, so the "
            "character is drawn whole (dotted underline; hover lists each token). Off: every token boundary "
            "gets its own colour, even where that breaks how the character is drawn")
        self.whole_graphemes.toggled.connect(self._schedule)
        self.mark_differences = QCheckBox("Mark differences")
        self.mark_differences.setChecked(True)
        self.mark_differences.setToolTip("Side by side: underline in red the stretches where the tokenizers split "
                                         "differently")
        self.mark_differences.toggled.connect(self._on_mark_differences)
        self.mark_differences.setVisible(False)
        self.add_button = QPushButton("+ Compare")
        self.add_button.setToolTip("Show the same text under another tokenizer, side by side (up to four)")
        self.add_button.clicked.connect(self._on_add_clicked)
        self.import_button = QPushButton("Import…")
        self.import_button.setToolTip("Keep a .tiktoken, tokenizer.json or vocab.json file in the project as a "
                                      "reference tokenizer (nothing is downloaded)")
        self.import_button.clicked.connect(self._on_import_clicked)

        self.texts_button = QToolButton()
        self.texts_button.setText("Texts")
        self.texts_button.setToolTip("Keep this text in the project, or bring back one kept earlier")
        self.texts_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.texts_menu = QMenu(self.texts_button)
        self.texts_menu.aboutToShow.connect(self._fill_texts_menu)
        self.texts_button.setMenu(self.texts_menu)

        self.boundary_marks = QCheckBox("Boundary marks")
        self.boundary_marks.setToolTip("Draw a thin line between tokens, so the split reads without the colours")
        self.boundary_marks.setChecked(AppSettings().boundary_marks)  # a preference across projects (QSettings)
        self.boundary_marks.toggled.connect(self._on_boundary_marks)

        # Two rows: the display switches, then the text's settings and the actions — one row of
        # everything asked for ~1000 px before any column was added.
        toolbar = QVBoxLayout()
        toolbar.setContentsMargins(0, 0, 0, 0)
        toolbar.setSpacing(2)
        row1, row2 = QHBoxLayout(), QHBoxLayout()
        for widget in (self.show_whitespace, self.whole_graphemes, self.boundary_marks, self.mark_differences):
            row1.addWidget(widget)
        row1.addStretch(1)
        row1.addWidget(self.texts_button)
        row1.addWidget(self.add_button)
        row1.addWidget(self.import_button)
        for combo in (self.special_mode, self.colour_mode, self.line_breaks):
            row2.addWidget(combo)
        row2.addStretch(1)
        toolbar.addLayout(row1)
        toolbar.addLayout(row2)

        # The columns share the width; past their minimum they scroll sideways instead of
        # raising the window's minimum width (four columns once asked for 1,876 px).
        self.pane_splitter = QSplitter(Qt.Orientation.Horizontal)
        self.pane_splitter.setChildrenCollapsible(False)
        self.pane_scroll = QScrollArea()
        self.pane_scroll.setWidgetResizable(True)
        self.pane_scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.pane_scroll.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.pane_scroll.setWidget(self.pane_splitter)
        self.pane_scroll.setAccessibleName("Tokenizer columns")
        self.primary = self._make_pane(primary=True)
        self.active = self.primary

        self.ids_panel = IdsPanel()
        self.ids_panel.view.token_hovered.connect(self._on_id_hovered)
        self.counts = CountsTable()
        self.decoder = DecodeBox()
        self.decoder.use_text.connect(self.set_text)
        self.tabs = QTabWidget()
        self.tabs.addTab(self.ids_panel, "Ids")
        self.tabs.addTab(self.counts, "Counts")
        self.tabs.addTab(self.decoder, "Decode")
        self.pipeline = PipelineView(self.jobs)
        self.pipeline.line_chosen.connect(self._on_pipeline_line)
        self.tabs.addTab(self.pipeline, "Pipeline")
        self.tabs.setTabToolTip(self.tabs.count() - 1, "The active column's tokenizer stage by stage on the cursor's "
                                "line, and which lines come back from decode(encode(line))")
        self.tabs.currentChanged.connect(self._update_pipeline)
        self._pipeline_line = 0

        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(self.pane_scroll)
        splitter.addWidget(self.tabs)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 1)
        splitter.setChildrenCollapsible(False)

        self.status = QLabel()
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        main = QWidget()
        box = QVBoxLayout(main)
        box.setContentsMargins(6, 6, 6, 6)
        box.addLayout(toolbar)
        box.addWidget(splitter, 1)
        box.addWidget(self.status)

        self.empty = EmptyState("No project is open", symbol="¶")
        self.empty_import = self.empty.add_button("Import a tokenizer file…", self._on_import_clicked)

        self.stack = QStackedWidget()
        self.stack.addWidget(self.empty)
        self.stack.addWidget(main)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(self.stack)

    def _make_pane(self, primary: bool = False) -> TokenPane:
        pane = TokenPane(primary=primary, jobs=self.jobs)
        pane.spec_changed.connect(self._on_spec_changed)
        pane.close_requested.connect(self._on_close_pane)
        pane.activated.connect(self._on_pane_activated)
        pane.editor.clicked.connect(self._on_token_clicked)
        pane.editor.hovered.connect(self._on_token_hovered)
        pane.editor.crlf_pasted.connect(self._on_crlf_pasted)
        pane.editor.verticalScrollBar().valueChanged.connect(self._on_scrolled)
        pane.editor.set_show_whitespace(self.show_whitespace.isChecked())
        pane.editor.set_boundary_marks(self.boundary_marks.isChecked())
        pane.editor.set_line_separator(self.line_breaks.currentData() or "\n")
        self.panes.append(pane)
        self.pane_splitter.addWidget(pane)
        pane.set_sources(self.sources, self._default_source())
        if not primary:
            pane.mirror_lines = []
            self._mirror(pane)
        return pane

    # ---- the integration contract ------------------------------------------------------------------
    def set_project(self, path: Path | None) -> None:
        """Show the runs and references of this project (read-only); the typed text stays."""
        self.project = Path(path) if path is not None else None
        self._selection = None
        self.refresh()

    def refresh(self) -> None:
        """Runs or references changed: list them again, keeping each column's choice if it still exists."""
        self.sources = []
        error = None
        if self.project is not None:
            try:
                self.sources = list_sources(self.project, self.session)
            except WorkbenchError as exc:
                error = str(exc)
        default = self._default_source()
        for pane in self.panes:
            pane.set_sources(self.sources, default)
        self._update_empty_state(error)
        self._schedule()

    def highlight_token(self, source: tuple[str, int], token_id: int) -> None:
        """Mark every place this token occurs in the text (showing that tokenizer first if needed)."""
        source = (str(source[0]), int(source[1]))  # a signal may carry it as a list
        self._selection = (source, int(token_id))
        self._scroll_to_selection = True
        if not any(p.source() == source for p in self.panes):
            target = self.active if self.active is not None else self.primary
            if not target.set_source(source):
                self.status.setText(f"{source[0]} {source[1]} is not in this project")
                return
            return  # the new split arrives with the next result; marks are applied then
        self._apply_selection()

    def show_word(self, text: str, sources: list[Source | None]) -> int:
        """``text`` under these tokenizers, one column each (Compare's "split differences" rows);
        returns how many of them are shown.

        A source that is ``None`` or not in this project (a file ticked in Compare only) gets no
        column: the status line says so, since only the project's tokenizers can be shown here.
        """
        self.set_text(text)
        known = {info.source for info in self.sources}
        wanted = [tuple(s) for s in sources if s is not None and tuple(s) in known][: self.MAX_PANES]
        for pane in self.panes[1:]:
            self.remove_pane(pane)
        if wanted:
            self.primary.set_source(wanted[0])
        for source in wanted[1:]:
            self.add_pane(source)
        missing = len(sources) - len(wanted)
        self.status.setText(f"{missing} of the tokenizers compared is not in this project (added in Compare "
                            "as a file): import it here to see it" if missing else
                            f"“{text}” from Compare, under {len(wanted)} tokenizers side by side")
        self.active = self.primary
        self.primary.editor.setFocus()
        self._schedule()
        return len(wanted)

    # ---- the session kept in the project (the window stores it through ProjectSession) ----------
    def session_state(self) -> dict:
        """The text, the columns' tokenizers and the display options, as plain JSON values."""
        return {
            "version": 1,
            "text": self.text(),
            "line_break": self.separator(),
            "columns": [{"source": list(src) if (src := p.source()) is not None else None,
                         "merges": p.slider.value() if p.slider.value() < p.slider.maximum() else None}
                        for p in self.panes],
            "show_whitespace": self.show_whitespace.isChecked(),
            "whole_characters": self.whole_graphemes.isChecked(),
            "boundary_marks": self.boundary_marks.isChecked(),
            "special_tokens": bool(self.special_mode.currentData()),
            "colour_per_id": bool(self.colour_mode.currentData()),
        }

    def restore_session(self, state: dict) -> None:
        """Bring back a :meth:`session_state` (after ``set_project``); unknown or stale parts are skipped."""
        if not isinstance(state, dict) or state.get("version") != 1:
            return
        text = state.get("text")
        if isinstance(text, str):
            self.set_text(text)
        index = self.line_breaks.findData(state.get("line_break"))
        if index >= 0:
            self.line_breaks.setCurrentIndex(index)
        for box, key in ((self.show_whitespace, "show_whitespace"), (self.whole_graphemes, "whole_characters"),
                         (self.boundary_marks, "boundary_marks")):
            if isinstance(state.get(key), bool):
                box.setChecked(state[key])
        for combo, key in ((self.special_mode, "special_tokens"), (self.colour_mode, "colour_per_id")):
            if isinstance(state.get(key), bool):
                combo.setCurrentIndex(combo.findData(state[key]))
        for extra in self.panes[1:]:
            self.remove_pane(extra)
        known = {info.source for info in self.sources}
        columns = [c for c in state.get("columns") or [] if isinstance(c, dict)][: self.MAX_PANES]
        for i, column in enumerate(columns):
            raw = column.get("source")
            source = tuple(raw) if isinstance(raw, list) and len(raw) == 2 else None
            if source not in known:
                continue  # the run was deleted since: that column is not brought back
            pane = self.primary if i == 0 else self.add_pane(source)
            if pane is None:
                continue
            pane.set_source(source)
            if isinstance(column.get("merges"), int):
                pane.set_merges(column["merges"])
        self._schedule()

    # ---- texts kept in the project ------------------------------------------------------------
    def saved_texts(self) -> list[tuple[int, str, str]]:
        """(id, name, text) of the texts kept in the project, oldest first."""
        if self.project is None:
            return []
        with open_read(self.project) as store:
            return [row for row in store.texts() if row[1] != INSPECT_SESSION_NAME]

    def save_text(self, name: str) -> None:
        """Keep the current text in the project under ``name`` (the same name replaces it)."""
        if self.project is None:
            raise WorkbenchError("open or create a project first: texts are kept in the project file")
        with open_write(self.project) as store:
            store.save_text(name, self.text())

    def _fill_texts_menu(self) -> None:
        menu = self.texts_menu
        menu.clear()
        save = menu.addAction("Keep this text in the project…")
        save.setEnabled(self.project is not None)
        save.triggered.connect(self._on_save_text_clicked)
        try:
            kept = self.saved_texts()
        except WorkbenchError as exc:
            menu.addAction(str(exc)).setEnabled(False)
            return
        if kept:
            menu.addSeparator()
        for _text_id, name, text in kept:
            action = menu.addAction(name)
            action.setToolTip(text[:200])
            action.triggered.connect(lambda _checked=False, t=text: self.set_text(t))

    @Slot()
    def _on_save_text_clicked(self) -> None:
        name, ok = QInputDialog.getText(self, "Keep this text", "Name:", text=self.text().split("\n", 1)[0][:40])
        if ok and name.strip():
            try:
                self.save_text(name.strip())
                self.status.setText(f"Kept “{name.strip()}” in the project.")
            except WorkbenchError as exc:
                self.status.setText(str(exc))

    # ---- text ---------------------------------------------------------------------------------
    def set_text(self, text: str) -> None:
        """Replace the text (``\\r\\n`` line breaks switch the line-break setting to \\r\\n)."""
        if "\r\n" in text:
            self.line_breaks.setCurrentIndex(1)
        self.primary.editor.setPlainText(text.replace("\r\n", "\n"))

    def text(self) -> str:
        """The text as the tokenizers see it (lines joined with the chosen line break)."""
        return self.separator().join(self._blocks())

    def colouring_done(self) -> bool:
        """Every line of every column (and the ids) repainted with the latest result."""
        views = [p.editor for p in self.panes] + [self.ids_panel.view]
        return all(v.highlighter.pending() == 0 for v in views)

    @property
    def applied_generation(self) -> int:
        """The generation of the last result drawn."""
        return self._applied

    def separator(self) -> str:
        return self.line_breaks.currentData()

    def _blocks(self) -> list[str]:
        return self.primary.editor.document().toRawText().split("\u2029")

    # ---- scheduling ------------------------------------------------------------------------------
    @Slot()
    def _on_text_changed(self) -> None:
        self._schedule()

    @Slot()
    def _schedule(self, *_args) -> None:
        """Debounce: post DEBOUNCE_MS after the last change, but at least every MAX_WAIT_MS while
        changes keep coming (so colours follow a fast typist instead of waiting for a pause)."""
        if self._shut_down:
            return
        now = time.monotonic()
        if not self._debounce.isActive():
            self._pending_since = now
        if (now - self._pending_since) * 1000 >= self.MAX_WAIT_MS:
            self._debounce.start(0)
        else:
            self._debounce.start(self.DEBOUNCE_MS)

    def flush(self) -> int:
        """Post a job now (tests, benchmark); returns its generation."""
        self._debounce.stop()
        self._post_job()
        return self._generation

    @Slot()
    def _post_job(self) -> None:
        if self.project is None or self._shut_down:
            return
        specs = []
        for pane in self.panes:
            spec = pane.spec()
            if spec is None:
                return
            specs.append(spec)
        if not specs:
            return
        blocks = self._blocks()
        for pane in self.panes[1:]:
            self._mirror(pane, blocks)
        text = self.separator().join(blocks)
        options = (self.project, text, self.separator(), tuple(specs), bool(self.special_mode.currentData()),
                   bool(self.colour_mode.currentData()), self.whole_graphemes.isChecked())
        if options == self._posted:
            return  # nothing changed (the document also reports re-colouring as a change)
        self._posted = options
        self._generation += 1
        self._thread.worker.latest = self._generation
        self._job_posted.emit(InspectJob(self._generation, *options))

    def _mirror(self, pane: TokenPane, blocks: list[str] | None = None) -> None:
        blocks = self._blocks() if blocks is None else blocks
        highlighter = pane.editor.highlighter
        highlighter.enabled = False  # the coming result repaints the changed lines in slices
        try:
            replace_lines(pane.editor.document(), pane.mirror_lines, blocks)
        finally:
            highlighter.enabled = True
        pane.mirror_lines = blocks

    # ---- results -----------------------------------------------------------------------------------
    @Slot(object)
    def _on_result(self, result: JobResult) -> None:
        if result.generation != self._generation or self._shut_down:
            return  # a newer job is on its way: this one is stale
        started = time.perf_counter()
        self._last_result = result
        marks = result.disagreements if len(self.panes) > 1 and self.mark_differences.isChecked() else []
        for pane, outcome in zip(self.panes, result.panes):
            if pane.spec() != outcome.spec:
                continue
            pane.apply(outcome)
            pane.editor.set_disagreements(marks)
        self._applied = result.generation
        self._update_side_panels()
        self._apply_selection()
        self.last_apply_seconds = time.perf_counter() - started
        self.last_worker_seconds = result.seconds
        self.results_applied.emit(result.generation)

    @Slot(object)
    def _on_loading(self, info) -> None:
        generation, source = info
        if generation != self._generation:
            return
        for pane in self.panes:
            if pane.source() == source:
                info = pane.info()
                label = info.label if info is not None else str(source)
                pane.set_status(f"Loading {label}…")

    def _update_side_panels(self) -> None:
        active = self.active if self.active in self.panes else self.primary
        self.ids_panel.view.set_layout(active.layout_)
        self.ids_panel.title.setText(f"Ids under {active.name()}" if active.layout_ is not None else "Ids")
        encoder = active.loaded.encoder if active.loaded is not None else None
        self.decoder.set_encoder(encoder, active.name() if encoder is not None else "")
        self.counts.set_counts([(pane.name(), pane.layout_.counts if pane.layout_ is not None else None)
                                for pane in self.panes])
        self._update_pipeline()

    # ---- the Pipeline tab ----------------------------------------------------------------------------
    @Slot()
    def _update_pipeline(self, *_args) -> None:
        """Ask for the stages of the chosen line, only while the Pipeline tab is shown."""
        if self.tabs.currentWidget() is not self.pipeline or self._shut_down:
            return
        active = self.active if self.active in self.panes else self.primary
        encoder = active.loaded.encoder if active.loaded is not None else None
        self.pipeline.request(encoder, active.name() if encoder is not None else "", "\n".join(self._blocks()),
                              self._pipeline_line)

    @Slot()
    def _on_cursor_moved(self) -> None:
        line = self.primary.editor.textCursor().blockNumber()
        if line != self._pipeline_line:
            self._pipeline_line = line
            self._update_pipeline()

    @Slot(int)
    def _on_pipeline_line(self, line: int) -> None:
        self._pipeline_line = line
        self._update_pipeline()

    # ---- selection and hover -------------------------------------------------------------------------
    @Slot(object)
    def _on_token_clicked(self, group) -> None:
        pane = self._pane_of(self.sender())
        source = pane.source() if pane is not None else None
        if group is None or source is None or group.ids[0] < 0:
            self._selection = None
            self._apply_selection()
            return
        self._selection = (source, group.ids[0])
        self._scroll_to_selection = False
        self._apply_selection()
        self.token_selected.emit(source, group.ids[0])

    def _apply_selection(self) -> None:
        messages = []
        for pane in self.panes:
            if self._selection is not None and pane.source() == self._selection[0] and pane.layout_ is not None:
                groups = pane.layout_.groups_with_id(self._selection[1])
                pane.editor.select_groups(groups)
                messages.append(f"token {self._selection[1]} occurs {len(groups):,} time(s) under {pane.name()}")
                if self._scroll_to_selection and groups:
                    self._scroll_to(pane, groups[0])
            else:
                pane.editor.select_groups([])
        if self._scroll_to_selection and messages:
            self._scroll_to_selection = False
        self.status.setText("; ".join(messages))

    def _scroll_to(self, pane: TokenPane, group) -> None:
        positions = pane.editor.doc_range(group.start, group.end)
        if positions is None:
            return
        cursor = QTextCursor(pane.editor.document())
        cursor.setPosition(min(positions[0], pane.editor.document().characterCount() - 1))
        pane.editor.setTextCursor(cursor)
        pane.editor.centerCursor()

    def selection(self) -> tuple[Source, int] | None:
        return self._selection

    @Slot(object)
    def _on_token_hovered(self, group) -> None:
        pane = self._pane_of(self.sender())
        if pane is not None and pane is (self.active if self.active in self.panes else self.primary):
            if group is None:
                self.ids_panel.view.mark_tokens(-1, -1)
            else:
                self.ids_panel.view.mark_tokens(group.first, group.last)

    @Slot(int)
    def _on_id_hovered(self, index: int) -> None:
        pane = self.active if self.active in self.panes else self.primary
        if pane.layout_ is None:
            return
        pane.editor.set_linked_hover(pane.layout_.group_of_token(index) if index >= 0 else None)

    @Slot(object)
    def _on_pane_activated(self, pane: TokenPane) -> None:
        if pane is not self.active:
            self.active = pane
            self._update_side_panels()

    def _pane_of(self, editor) -> TokenPane | None:
        return next((p for p in self.panes if p.editor is editor), None)

    # ---- options -------------------------------------------------------------------------------------
    @Slot(bool)
    def _on_show_whitespace(self, on: bool) -> None:
        for pane in self.panes:
            pane.editor.set_show_whitespace(on)
        self.decoder.set_show_whitespace(on)

    @Slot(int)
    def _on_line_breaks(self, _index: int) -> None:
        for pane in self.panes:
            pane.editor.set_line_separator(self.separator())

    @Slot(bool)
    def _on_boundary_marks(self, on: bool) -> None:
        AppSettings().boundary_marks = on
        for pane in self.panes:
            pane.editor.set_boundary_marks(on)

    @Slot(bool)
    def _on_mark_differences(self, on: bool) -> None:
        result = self._last_result
        marks = result.disagreements if on and result is not None and len(self.panes) > 1 else []
        for pane in self.panes:
            pane.editor.set_disagreements(marks)

    def _update_compare_controls(self) -> None:
        self.add_button.setEnabled(len(self.panes) < self.MAX_PANES)
        self.mark_differences.setVisible(len(self.panes) > 1)

    @Slot()
    def _on_crlf_pasted(self) -> None:
        self.line_breaks.setCurrentIndex(1)

    @Slot(int)
    def _on_scrolled(self, value: int) -> None:
        source = self.sender()
        if self._syncing or not isinstance(source, QScrollBar):
            return
        self._syncing = True
        try:
            top = max(source.maximum(), 1)
            for pane in self.panes:
                bar = pane.editor.verticalScrollBar()
                if bar is not source:
                    bar.setValue(round(value / top * bar.maximum()))
        finally:
            self._syncing = False

    # ---- columns -----------------------------------------------------------------------------------
    def add_pane(self, source: Source | None = None) -> TokenPane | None:
        """Another column (up to four) showing the same text under another tokenizer."""
        if len(self.panes) >= self.MAX_PANES:
            return None
        pane = self._make_pane()
        if source is not None:
            pane.set_source(tuple(source))
        else:
            used = {p.source() for p in self.panes}
            unused = next((info.source for info in self.sources if info.source not in used), None)
            if unused is not None:
                pane.set_source(unused)
        self._update_compare_controls()
        self._schedule()
        return pane

    @Slot()
    def _on_add_clicked(self) -> None:
        pane = self.add_pane()
        if pane is not None:  # a keyboard user picks the new column's tokenizer next
            pane.chooser.setFocus(Qt.FocusReason.OtherFocusReason)

    @Slot(object)
    def _on_close_pane(self, pane: TokenPane) -> None:
        self.remove_pane(pane)

    def remove_pane(self, pane: TokenPane) -> None:
        if pane is self.primary or pane not in self.panes:
            return
        self.panes.remove(pane)
        if self.active is pane:
            self.active = self.primary
        pane.setParent(None)
        pane.deleteLater()
        self._update_compare_controls()
        if len(self.panes) == 1:
            self.primary.editor.set_disagreements([])
        self._schedule()

    @Slot()
    def _on_spec_changed(self) -> None:
        self._schedule()

    # ---- import -----------------------------------------------------------------------------------------
    @Slot()
    def _on_import_clicked(self) -> None:
        if self.project is None:
            self.status.setText("Open or create a project first: imported tokenizers are kept in it.")
            return
        settings = AppSettings()  # the last folder used or the documents, never the working folder
        path, _filter = QFileDialog.getOpenFileName(
            self, "Import a tokenizer", settings.last_folder,
            "Tokenizer files (*.tiktoken tokenizer.json vocab.json *.json merges.txt);;All files (*)")
        if path:
            settings.last_folder = str(Path(path).parent)
            self.import_file(Path(path))

    def import_file(self, path: Path, name: str = "") -> None:
        """Store a tokenizer file in the project as a reference (in the worker; ``import_finished`` follows)."""
        if self.project is None:
            self.status.setText("Open or create a project first: imported tokenizers are kept in it.")
            return
        self.status.setText(f"Importing {Path(path).name}…")
        self._import_posted.emit(ImportRequest(self.project, Path(path), name))

    @Slot(object)
    def _on_imported(self, outcome: ImportOutcome) -> None:
        if outcome.error is not None:
            self.status.setText(f"Import failed: {outcome.error}")
            self.status.setStyleSheet("color: #dc2626;")
        else:
            self.status.setStyleSheet("")
            self.refresh()
            target = self.active if self.active in self.panes else self.primary
            target.set_source(("ref", outcome.ref_id))
            notes = f" ({'; '.join(outcome.notes)})" if outcome.notes else ""
            self.status.setText(f"Imported “{outcome.name}” as a reference tokenizer{notes}")
        self.import_finished.emit(outcome)

    # ---- empty state ------------------------------------------------------------------------------------
    def _update_empty_state(self, error: str | None = None) -> None:
        if self.project is None:
            title, body = ("No project is open", "Open or create a project (File menu) to inspect text with its "
                           "trained runs and imported tokenizers. The text you type here is kept.")
        elif error is not None:
            title, body = "Cannot read this project", error
        elif not self.sources:
            title, body = ("No tokenizer yet", "Train a run on a corpus (Train tab), or import a tokenizer file — "
                           ".tiktoken (e.g. cl100k_base), tokenizer.json or GPT-2 vocab.json + merges.txt. It is "
                           "kept in the project; nothing is downloaded.")
        else:
            self.stack.setCurrentIndex(1)
            return
        self.empty.set_text(title, body)
        self.empty_import.setVisible(self.project is not None and error is None)
        self.stack.setCurrentIndex(0)

    def is_empty_state(self) -> bool:
        return self.stack.currentIndex() == 0

    def empty_message(self) -> str:
        return f"{self.empty.title.text()}\n{self.empty.body.text()}"

    def _default_source(self) -> Source | None:
        runs = [s for s in self.sources if s.source[0] == "run"]
        finished = [s for s in runs if s.version and s.version[0] == "finished"]
        for group in (finished, [s for s in runs if s.merge_count > 0], self.sources):
            if group:
                return max(group, key=lambda s: (s.source[0] == "run", s.source[1])).source
        return None

    # ---- shutting down ----------------------------------------------------------------------------------
    @Slot()
    def shutdown(self) -> None:
        """Stop the worker thread (called on quit; tests call it in teardown)."""
        self._shut_down = True
        self._debounce.stop()
        self._thread.stop()
        self.jobs.shutdown()

    def closeEvent(self, event) -> None:  # noqa: N802
        self.shutdown()
        super().closeEvent(event)


def list_sources(project: Path, session=None) -> list[SourceInfo]:
    """The project's runs and references as the choosers list them: the window's session's decoded
    runs when it has this project open, else one short read-only open."""
    if session is not None and session.store is not None and session.path == Path(project):
        return _sources_of(session.runs(), session.references())
    with open_read(project) as store:
        return _sources_of(store.runs(), store.references())


def _sources_of(runs, refs) -> list[SourceInfo]:
    out = []
    for run in runs:
        status = "" if run.status == "finished" else f" ({run.status})"
        out.append(SourceInfo(("run", run.id), f"Run {run.id} · {run.name}{status}", run.merge_count,
                              (run.status, run.merge_count, run.vocab_size)))
    for ref in refs:
        out.append(SourceInfo(("ref", ref.id), f"{ref.name} · imported {ref.format}", ref.merge_count,
                              ("ref", ref.sha256, ref.vocab_size, ref.merge_count)))
    return out


