"""The main window: menus, the five panels as tabbed docks, the title, the status bar, closing.

Each tab is a panel from its own package (``ui/corpus``, ``ui/train``, ``ui/inspect``,
``ui/merges``, ``ui/compare``), imported plainly and added with one line in
:meth:`MainWindow._build_tabs`; a tab that shows the open project satisfies :class:`ProjectView`
(``set_project``, ``refresh``, ``shutdown``) and the window calls nothing else on it. The window
wires them together — a token picked in Inspect selects its merge, a merge picked in Merges
highlights the token, the views refresh while a run trains (at most every 0.5 s) and
when runs change — and owns the project lifecycle: New, Open, Open Recent, Save As, Import,
Export, and closing with a run in progress (asks, then stops the run cleanly).

Failures a panel survives are logged (``workbench.ui.main_window``) and summed up in the status bar;
Help ▸ Show Log shows the log file.

Keys follow ``QKeySequence`` standard keys where there is one: Ctrl+Tab / Ctrl+Shift+Tab and
Ctrl+PgDown / Ctrl+PgUp change tabs, Alt+1… go to one, Ctrl+F finds (the merge filter), Ctrl+S
saves (Save As for an untitled project; a named one is saved after every change already).
Showing and hiding a panel has no shortcut: Ctrl+1… hid panels where users expect it to switch.
Tab and Shift+Tab walk the controls of the tab in front only (:meth:`MainWindow.focusNextPrevChild`),
and Tab leaves every table; the focus ring itself is drawn once, in :mod:`workbench.ui.style`.
The first-run guide (:mod:`workbench.ui.guide`) opens with the demo; an import from any tab goes
through ``ProjectSession.references_changed``; the Inspect tab's session is kept in the project
when the window leaves it (``ProjectSession.save_inspect_session``).

What it leaves out: the panels' own behaviour, and any work longer than a paged read (export and
import run on the job runner, training in a child process).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Protocol, TypeVar, cast, runtime_checkable

from PySide6.QtCore import Qt, QTimer, Signal, Slot
from PySide6.QtGui import QAction, QActionGroup, QCloseEvent, QKeySequence
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QComboBox,
    QDialog,
    QDockWidget,
    QFileDialog,
    QFrame,
    QGraphicsView,
    QHeaderView,
    QLabel,
    QMainWindow,
    QMessageBox,
    QPlainTextEdit,
    QTabWidget,
    QToolBar,
    QWidget,
)

from workbench.errors import WorkbenchError
from workbench.ui import style, turns
from workbench.ui.collector import collect_on_gui_thread, keep_what_is_built, share_the_gil_often
from workbench.ui.compare.panel import ComparePanel
from workbench.ui.corpus.panel import CorpusPanel
from workbench.ui.dialogs import ExportDialog, fit_title, short_message, shortcuts_dialog
from workbench.ui.guide import GuideBanner
from workbench.ui.inspect.panel import InspectPanel
from workbench.ui.jobs import LIST_OFF_THREAD, JobRunner
from workbench.ui.logs import LogDialog, window_log_path
from workbench.ui.merges.panel import MergePanel
from workbench.ui.project_session import (
    COMPARE_SESSION_KEY,
    INSPECT_SESSION_KEY,
    OpenedProject,
    ProjectSession,
    copy_project,
    prepare_open,
    prepare_save_as,
    project_dest,
)
from workbench.ui.settings import AppSettings
from workbench.ui.train.panel import TrainingPanel, ask

APP_NAME = "Tokenizer Workbench"
SAVED_MESSAGE = "Saved — the project saves itself after every change."
PROJECT_FILTER = "Tokenizer Workbench projects (*.tokproj);;All files (*)"
TOKENIZER_FILTER = ("Tokenizer files (*.json *.tiktoken *.txt *.model *.vocab);;tokenizer.json (*.json);;"
                    "tiktoken (*.tiktoken);;GPT-2 vocab.json (vocab.json);;WordPiece vocab.txt (*.txt);;"
                    "SentencePiece model (*.model);;SentencePiece .vocab (*.vocab);;All files (*)")


log = logging.getLogger(__name__)
W = TypeVar("W", bound=QWidget)


@runtime_checkable
class ProjectView(Protocol):
    """A tab that shows the open project: everything the window calls on it.

    ``set_project(path)`` when a project opens or closes (None) — the view opens its own
    read connections through ``workbench.ui.project_session``; ``refresh()`` when runs change
    (and every ~0.5 s while a run trains, for a view added with ``live=True``); ``shutdown()``
    to join its threads before the window closes. Signals between two views are wired by name
    in :meth:`MainWindow._wire`.
    """

    def set_project(self, path: Path | None) -> None: ...

    def refresh(self) -> None: ...

    def shutdown(self) -> None: ...


class MainWindow(QMainWindow):
    """One project at a time, with Corpus, Train, Inspect and Merges panels."""

    project_opened = Signal(str)   # a project opened (open_project, taken over on the GUI thread)
    open_failed = Signal(str)      # open_project could not open it: the message shown
    project_loaded = Signal(str)   # ... and every tab has taken it over (is_opening() is False from here)
    project_saved = Signal(str)    # Save As copied the project and the window continues on the copy
    leave_saved = Signal(str)      # an untitled project being left was copied there (then the leave went on)
    leave_save_failed = Signal(str)  # ... or could not be: the message shown (the window stayed on it)
    export_finished = Signal(bool, str)   # ok, message
    import_finished = Signal(bool, str)

    def __init__(self, settings: AppSettings | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.settings = settings or AppSettings()
        self.session = ProjectSession(self)
        share_the_gil_often()  # the window's thread is never long behind a worker thread
        collect_on_gui_thread()  # the app's, before any thread of the window starts: passes on this thread only
        self.tasks = JobRunner(self)
        self.export_check_dialog: QDialog | None = None  # the pre-export check's warnings, while shown
        self.setWindowIcon(style.app_icon())
        self.setDockOptions(QMainWindow.DockOption.AllowTabbedDocks | QMainWindow.DockOption.AnimatedDocks |
                            QMainWindow.DockOption.AllowNestedDocks)
        self.setDocumentMode(True)
        self.setTabPosition(Qt.DockWidgetArea.AllDockWidgetAreas, QTabWidget.TabPosition.North)

        self.docks: dict[str, QDockWidget] = {}
        self.views: list[ProjectView] = []      # tabs that follow the open project
        self._live_views: list[ProjectView] = []  # ... and refresh while a run trains
        self._log_dialog: LogDialog | None = None
        self.current_panel = "corpus"  # the tab in front (followed through the docks' visibility)
        self._opening = 0  # open_project's generation: a newer open overtakes an older one
        self._opening_path: tuple[int, Path] | None = None  # the open under way, if any
        # A project read on the worker, held for a turn while the Train tab is shown (see _adopt).
        self._held: tuple[tuple[int, Path], OpenedProject] | None = None
        self._held_timer = QTimer(self)
        self._held_timer.setSingleShot(True)
        self._held_timer.setInterval(0)
        self._held_timer.timeout.connect(self._timed_adopt)
        self._last_refusal: str | None = None  # a refused file's message, shown on the next turn
        # An untitled project being saved while the window leaves it: where, and the leave to finish
        # (close, open, new) once the copy is written (see _save_copy_and_leave).
        self._leave_save: tuple[Path, Callable[[], object] | None] | None = None
        self._build_tabs()
        first = next(iter(self.docks.values()))
        for dock in list(self.docks.values())[1:]:
            self.tabifyDockWidget(first, dock)
        first.raise_()

        self._build_actions()
        self._build_menus()
        self._build_status_bar()
        self._build_guide()
        self._wire()
        self._restore_layout()
        self._name_unnamed_views()
        self.guide_bar.hide()  # a restored layout must not bring the guide back: start_demo does
        self._update_title()

    # ---- panels ----------------------------------------------------------------------------------
    def _build_tabs(self) -> None:
        """The tabs, in order (Alt+1… follows it). Adding a tab is one line here."""
        self.corpus = self._add_tab("corpus", "Corpus", CorpusPanel(self.settings))
        self.training = self._add_tab("train", "Train", TrainingPanel(self.session, self.corpus, self.settings))
        self.inspect = self._add_view("inspect", "Inspect", InspectPanel(session=self.session))
        self.merges = self._add_view("merges", "Merges", MergePanel(), live=True)
        self.compare = self._add_view("compare", "Compare", ComparePanel(self.session))

    def _add_tab(self, key: str, title: str, widget: W) -> W:
        self._add_dock(key, title, widget)
        return widget

    def _add_view(self, key: str, title: str, view: W, *, live: bool = False) -> W:
        """A tab that follows the open project (it must satisfy :class:`ProjectView`)."""
        assert isinstance(view, ProjectView), f"{type(view).__name__} is not a ProjectView"
        self.views.append(view)
        if live:
            self._live_views.append(view)
        return self._add_tab(key, title, view)

    def _add_dock(self, key: str, title: str, widget: QWidget) -> None:
        dock = QDockWidget(title, self)
        dock.setObjectName(f"dock_{key}")
        dock.setWidget(widget)
        dock.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetMovable |
                         QDockWidget.DockWidgetFeature.DockWidgetFloatable |
                         QDockWidget.DockWidgetFeature.DockWidgetClosable)
        dock.setTitleBarWidget(QWidget(dock))  # the tab shows the title; no second bar above it
        self.addDockWidget(Qt.DockWidgetArea.TopDockWidgetArea, dock)
        self.docks[key] = dock
        widget.setAccessibleName(f"{title} panel")
        dock.visibilityChanged.connect(lambda visible, k=key: self._on_dock_visible(k, visible))

    def _name_unnamed_views(self) -> None:
        """Give every table, text view and plot a screen-reader name, and let Tab leave every table
        (issue 14).

        The panels name their own; one left unnamed gets "<what> in the <tab> panel" here, so
        a screen reader never announces a bare "table". Combo box pop-ups and headers are Qt's.
        """
        kinds = ((QAbstractItemView, "Table"), (QPlainTextEdit, "Text"), (QGraphicsView, "Chart"))
        for dock in self.docks.values():
            for table in dock.widget().findChildren(QAbstractItemView):
                table.setTabKeyNavigation(False)  # Tab leaves a table (arrows move between cells), never a trap
            for cls, what in kinds:
                for view in dock.widget().findChildren(cls):
                    if view.accessibleName() or isinstance(view, QHeaderView) or _in_combo_popup(view):
                        continue
                    view.setAccessibleName(f"{what} in the {dock.windowTitle()} panel")

    def _on_dock_visible(self, key: str, visible: bool) -> None:
        if visible and not self.docks[key].isFloating():
            self.current_panel = key

    def focusNextPrevChild(self, next: bool) -> bool:  # noqa: N802, A002 - Qt override
        """Tab / Shift+Tab: the next control the user can see, never one in a tab behind the current one.

        Qt moves a tabified dock that is not in front out of view instead of hiding it, so its
        controls stayed in the Tab chain: from the Corpus tab, the eighth Tab press went on into the
        invisible Train form (issue 14). This walks the same chain and skips those.
        """
        start = QApplication.focusWidget()
        if start is None or start.window() is not self:
            return super().focusNextPrevChild(next)
        widget = start
        for _ in range(5000):
            following = widget.nextInFocusChain() if next else widget.previousInFocusChain()
            if following is None or following is start:
                break
            widget = following
            if _takes_tab_focus(widget, self) and not self._behind_another_tab(widget):
                widget.setFocus(Qt.FocusReason.TabFocusReason if next else Qt.FocusReason.BacktabFocusReason)
                return True
        return super().focusNextPrevChild(next)

    def _behind_another_tab(self, widget: QWidget) -> bool:
        """Inside a docked panel that is not the tab in front (Qt parks those outside the window)."""
        docks = set(self.docks.values())
        w: QWidget | None = widget
        while w is not None and w is not self:
            if w in docks:
                return not w.isFloating() and not self.rect().intersects(w.geometry())
            w = w.parentWidget()
        return False

    def show_panel(self, key: str) -> None:
        dock = self.docks[key]
        dock.show()
        dock.raise_()
        dock.widget().setFocus()
        self.current_panel = key

    def next_panel(self, step: int = 1) -> None:
        """Ctrl+Tab / Ctrl+PgDown (step 1) and Ctrl+Shift+Tab / Ctrl+PgUp (-1): the next shown tab."""
        keys = [k for k, d in self.docks.items() if not d.isHidden() or k == self.current_panel]
        if not keys:
            return
        i = keys.index(self.current_panel) if self.current_panel in keys else 0
        self.show_panel(keys[(i + step) % len(keys)])

    def focus_search(self) -> None:
        """Ctrl+F: the current tab's search field (a panel's ``focus_search``); from a tab without
        one, the merge filter."""
        panel = self.docks[self.current_panel].widget()
        if not hasattr(panel, "focus_search"):
            self.show_panel("merges")
            panel = self.merges
        panel.focus_search()

    def save(self) -> bool:
        """Ctrl+S: Save As for an untitled project; a named one is already saved, so say so."""
        if not self.session.is_open:
            return False
        if self.session.untitled:
            return self.save_as()
        self._save_inspect_session()
        self.statusBar().showMessage(SAVED_MESSAGE, 6000)
        return True

    # ---- actions and menus -------------------------------------------------------------------------
    def _action(self, text: str, slot: Callable[[], object], shortcut=None, tip: str = "") -> QAction:
        act = QAction(text, self)
        if shortcut is not None:
            if isinstance(shortcut, (list, tuple)):
                keys: list[QKeySequence] = []
                for s in shortcut:  # a standard key may stand for several sequences on a platform
                    keys.extend(QKeySequence.keyBindings(s) if isinstance(s, QKeySequence.StandardKey)
                                else [QKeySequence(s)])
                act.setShortcuts(keys)
            else:
                act.setShortcut(QKeySequence(shortcut))
        if tip:
            act.setStatusTip(tip)
        act.triggered.connect(lambda _checked=False: slot())
        self.addAction(act)
        return act

    def _build_actions(self) -> None:
        K = QKeySequence.StandardKey  # noqa: N806 - reads as the key names it abbreviates
        self.act_new = self._action("&New Project", self.new_project, K.New, "Start an empty untitled project")
        self.act_open = self._action("&Open Project…", self.choose_project, K.Open, "Open a .tokproj file")
        self.act_save = self._action("&Save", self.save, K.Save,
                                     "An untitled project asks for a name; a named one saves itself after every change")
        self.act_save_as = self._action("Save Project &As…", self.save_as, K.SaveAs,
                                        "Write a copy of the project (SQLite backup API) and continue there")
        self.act_add_files = self._action("Add Corpus &Files…", self.corpus.choose_files, "Ctrl+Shift+O")
        self.act_add_folder = self._action("Add Corpus Fol&der…", self.corpus.choose_folder, "Ctrl+Shift+D")
        self.act_add_location = self._action("Add Corpus &Location…", self.corpus.choose_location)
        self.act_demo = self._action("Add the &Demo Corpus", self.corpus.add_demo)
        self.act_import = self._action("&Import Tokenizer…", self.import_tokenizer, "Ctrl+I",
                                       "Add a tokenizer.json, .tiktoken, vocab.json, vocab.txt or SentencePiece .model "
                                       "as a reference")
        self.act_export = self._action("&Export Tokenizer…", self.export_dialog, "Ctrl+E",
                                       "Write a run as tokenizer.json, GPT-2 files, .tiktoken, vocab.txt, "
                                       "SentencePiece .model or CSV")
        self.act_quit = self._action("&Quit", self.close, K.Quit)
        self.act_quit.setMenuRole(QAction.MenuRole.QuitRole)
        self.act_train = self._action("&Train", self.training.start, ["F5", "Ctrl+Return"],
                                      "Train on the loaded corpus with the settings in the Train panel")
        self.act_pause = self._action("&Pause / Resume", self.training.toggle_pause, "F6")
        self.act_cancel = self._action("&Cancel Run", self.training.cancel, "Shift+F5")
        self.act_rename = self._action("&Rename Run", self._rename_run, "F2")
        self.act_shortcuts = self._action("&Keyboard Shortcuts", self.show_shortcuts, K.HelpContents)
        self.act_guide = self._action("Show the &Guide", self.show_guide,
                                      tip="A short tour: Corpus → Train → Inspect → Merges → Compare → "
                                          "Export")
        self.act_find = self._action("&Find", self.focus_search, K.Find,
                                     "Focus the merge filter (or this tab's search)")
        self.act_next_tab = self._action("Next Tab", lambda: self.next_panel(1), [K.NextChild, "Ctrl+PgDown"])
        self.act_prev_tab = self._action("Previous Tab", lambda: self.next_panel(-1), [K.PreviousChild, "Ctrl+PgUp"])
        self.act_show_log = self._action("Show &Log", self.show_log,
                                         tip="The window's log: what failed and why, with tracebacks")
        self.act_about = self._action("&About Tokenizer Workbench", self.show_about)
        self.act_about.setMenuRole(QAction.MenuRole.AboutRole)

    def _build_menus(self) -> None:
        bar = self.menuBar()
        m = bar.addMenu("&File")
        m.addAction(self.act_new)
        m.addAction(self.act_open)
        self.recent_menu = m.addMenu("Open &Recent")
        self.recent_menu.aboutToShow.connect(self._fill_recent)
        self._fill_recent()
        m.addAction(self.act_save)
        m.addAction(self.act_save_as)
        m.addSeparator()
        m.addAction(self.act_add_files)
        m.addAction(self.act_add_folder)
        m.addAction(self.act_add_location)
        m.addAction(self.act_demo)
        m.addSeparator()
        m.addAction(self.act_import)
        m.addAction(self.act_export)
        m.addSeparator()
        m.addAction(self.act_quit)

        r = bar.addMenu("&Run")
        for act in (self.act_train, self.act_pause, self.act_cancel):
            r.addAction(act)
        r.addSeparator()
        r.addAction(self.act_rename)

        v = bar.addMenu("&View")
        go_menu = v.addMenu("&Go to")
        for i, key in enumerate(self.docks, 1):
            # Alt+N switches tabs; Ctrl+N no longer hides a panel (issue 14: it fought the habit of
            # Ctrl+1… switching tabs). Showing and hiding stays in the menu, without a shortcut.
            go = QAction(self.docks[key].windowTitle(), self)
            go.setShortcut(QKeySequence(f"Alt+{i}"))
            go.triggered.connect(lambda _c=False, k=key: self.show_panel(k))
            go_menu.addAction(go)
            self.addAction(go)
        go_menu.addSeparator()
        go_menu.addAction(self.act_next_tab)
        go_menu.addAction(self.act_prev_tab)
        v.addAction(self.act_find)
        v.addSeparator()
        for key in self.docks:
            v.addAction(self.docks[key].toggleViewAction())
        v.addSeparator()
        theme_menu = v.addMenu("&Appearance")
        self.theme_group = QActionGroup(self)
        for value, label in (("system", "Follow the &System"), ("light", "&Light"), ("dark", "&Dark")):
            act = theme_menu.addAction(label)
            act.setCheckable(True)
            act.setChecked(self.settings.theme == value)
            act.setData(value)
            self.theme_group.addAction(act)
            act.triggered.connect(lambda _c=False, t=value: self.set_theme(t))
        v.addSeparator()
        v.addAction("Reset &Layout", self.reset_layout)

        h = bar.addMenu("&Help")
        h.addAction(self.act_guide)
        h.addAction(self.act_shortcuts)
        h.addAction(self.act_show_log)
        h.addSeparator()
        h.addAction(self.act_about)

    def _build_status_bar(self) -> None:
        sb = self.statusBar()
        self.project_label = QLabel()
        self.project_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.run_label = QLabel()
        # "Opening huge.tokproj…" while open_project reads the file on a worker: muted, no animation
        self.opening_label = QLabel()
        self.opening_label.setObjectName("openingLabel")
        self.opening_label.setAccessibleName("Opening a project")
        self.opening_label.hide()
        # A long path beside "Opening <long name>…" asked for more than the window's width: the
        # window grew by a few pixels while a project opened, and repainted whole (~25 ms). These
        # labels shrink instead (cut at the right; the project's full path is in the tooltip).
        for label in (self.opening_label, self.project_label):
            label.setMinimumWidth(1)
        sb.addPermanentWidget(self.opening_label)
        sb.addPermanentWidget(self.run_label)
        sb.addPermanentWidget(self.project_label)

    def _build_guide(self) -> None:
        """The first-run guide, as a banner in a toolbar above the tabs (non-modal, dismissible)."""
        self.guide = GuideBanner()
        self.guide.go_to.connect(self._on_guide_go_to)
        self.guide.dismissed.connect(self._on_guide_dismissed)
        self.guide_bar = QToolBar("Guide", self)
        self.guide_bar.setObjectName("guideBar")
        self.guide_bar.setMovable(False)
        self.guide_bar.setFloatable(False)
        self.guide_bar.toggleViewAction().setVisible(False)
        self.guide_bar.addWidget(self.guide)
        self.addToolBar(Qt.ToolBarArea.TopToolBarArea, self.guide_bar)

    def show_guide(self) -> None:
        """Help ▸ Show the Guide (and the demo's first start): from its first step."""
        self.guide.set_step(0)
        self.guide.dont_show.setChecked(not self.settings.show_guide)
        self.guide_bar.show()

    @Slot(str)
    def _on_guide_go_to(self, key: str) -> None:
        if key == "export":
            if self.session.runs():
                self.export_dialog()
            else:
                self.statusBar().showMessage("Train a run first (F5): then File ▸ Export Tokenizer writes it.", 8000)
        elif key in self.docks:
            self.show_panel(key)

    @Slot(bool)
    def _on_guide_dismissed(self, dont_show: bool) -> None:
        self.settings.show_guide = not dont_show
        self.guide_bar.hide()

    def _compare_runs(self, run_ids: list) -> None:
        self.compare.compare_runs(run_ids)
        self.show_panel("compare")

    @Slot(str, list)
    def _inspect_word(self, word: str, srcs: list) -> None:
        """A Compare "split differences" row: the word in Inspect, under A and B side by side."""
        from workbench.tasks.sources import project_source

        sources = [project_source(src, self.session.path) for src in srcs]
        shown = [0]
        self._guarded(self.inspect, "show_word", lambda: shown.__setitem__(0, self.inspect.show_word(word, sources)))
        self.show_panel("inspect")
        missing = len(sources) - shown[0]
        self.statusBar().showMessage(
            f"“{word}” from Compare" + (f": {missing} of its tokenizers is a file outside this project, import it "
                                        "in Inspect to see it" if missing else ", split by both tokenizers"), 10000)

    def _wire(self) -> None:
        self.session.project_changed.connect(self._on_project_changed)
        self.session.settled.connect(self._on_settled)
        self.session.modified_changed.connect(lambda _m: self._update_title())
        self.session.runs_changed.connect(self._refresh_views)
        self.session.runs_changed.connect(self._update_actions)
        self.session.references_changed.connect(self._refresh_views)
        self.session.references_changed.connect(self._update_actions)
        self.inspect.import_finished.connect(self._on_inspect_imported)
        self.training.process.state_changed.connect(self._on_process_state)
        self.training.message.connect(lambda m: self.statusBar().showMessage(m, 8000))
        self.training.training_changed.connect(self._on_training_changed)
        self.training.steps_arrived.connect(self._on_steps_arrived)
        self.training.history.export_requested.connect(lambda rid: self.export_dialog(rid))
        self.training.history.compare_requested.connect(self._compare_runs)
        self.compare.inspect_requested.connect(self._inspect_word)
        self.corpus.file_rejected.connect(self._on_file_rejected)
        self.corpus.scan_finished.connect(self._on_scan_finished)
        self.corpus.train_requested.connect(lambda: self.show_panel("train"))
        self.corpus.message.connect(lambda m: self.statusBar().showMessage(m, 10000))
        self.inspect.token_selected.connect(self._on_token_selected)
        self.merges.merge_selected.connect(self._on_merge_selected)
        self.tasks.busy_changed.connect(self._update_actions)
        self._update_actions()

    @Slot(object, int)
    def _on_token_selected(self, source, token_id: int) -> None:
        self._guarded(self.merges, "select_token", lambda: self.merges.select_token(source, token_id))

    @Slot(object, int)
    def _on_merge_selected(self, source, token_id: int) -> None:
        self._guarded(self.inspect, "highlight_token", lambda: self.inspect.highlight_token(source, token_id))

    def _guarded(self, panel: object, what: str, call: Callable[[], object]) -> None:
        """Run one call into a panel; a panel's bug is logged and shown, and must not break the others."""
        try:
            call()
        except Exception as exc:  # noqa: BLE001
            log.exception("%s.%s failed", type(panel).__name__, what)
            self.statusBar().showMessage(f"{type(panel).__name__}.{what}: {exc} (details: Help ▸ Show Log)", 8000)

    def _set_views_project(self, path: Path | None) -> None:
        """Each view opens the project; a view that follows the session itself already has.

        The Merges tab (not the one shown on open: the Train tab is) lists the runs and opens the
        newest in a later turn of the event loop (``ProjectSession.after_open``), so opening the
        project is not one stretch of the window's thread; a project opened meanwhile cancels it."""
        for view in self.views:
            if getattr(view, "follows_session", False):
                continue
            if path is not None and view is self.merges:  # closed now (the last project's runs never show)
                self._guarded(view, "set_project", lambda v=view: v.set_project(None))  # type: ignore[misc]
                # opened and listed in one turn, the chooser filled and the newest run shown in the next
                self.session.after_open(partial(self._open_merges_later, path))
                self.session.after_open(partial(self._show_merges_later, path))
                continue
            if path is not None and self.session.adopting():  # listed in a turn of its own, not the take-over's
                self.session.after_open(partial(self._set_view_project_later, view, path))
                continue
            self._guarded(view, "set_project", lambda v=view: v.set_project(path))  # type: ignore[misc]

    def _set_view_project_later(self, view: ProjectView, path: Path) -> None:
        if self.session.path == path:  # not another project opened (or this one closed) since
            self._guarded(view, "set_project", lambda: view.set_project(path))

    def _open_merges_later(self, path: Path) -> None:
        if self.session.path == path:  # not another project opened since
            self._guarded(self.merges, "open_project", lambda: self.merges.open_project(path))

    def _show_merges_later(self, path: Path) -> None:
        if self.session.path == path and self.merges.path == path:
            self._guarded(self.merges, "show_listed", self.merges.show_listed)

    @Slot()
    def _refresh_views(self) -> None:
        for view in self.views:
            if not getattr(view, "follows_session", False):
                self._guarded(view, "refresh", view.refresh)

    @Slot(int)
    def _on_steps_arrived(self, _run_id: int) -> None:
        for view in self._live_views:
            self._guarded(view, "refresh", view.refresh)

    # ---- project lifecycle ----------------------------------------------------------------------
    def _may_leave_project(self, then: Callable[[], object] | None = None) -> bool:
        """Ask about a running run and an untitled project with content; False to stay (for now:
        see :meth:`_keep_or_discard_untitled` for ``then``)."""
        if self.training.is_training():
            QMessageBox.information(self, "Training in progress",
                                    "A training run is in progress. Wait for it to finish or cancel it first.")
            return False
        return self._keep_or_discard_untitled("continuing", then)

    def _keep_or_discard_untitled(self, before: str, then: Callable[[], object] | None = None) -> bool:
        """For an untitled project with runs: Save (as), Discard or Cancel; False means stay.

        Save copies on a worker (:meth:`_save_copy_and_leave`): this returns False — the leave
        waits — and ``then`` (the close, open or new project asked for) runs once the copy is
        written; when it cannot be written the window stays on the project and says why.
        """
        if self._leave_save is not None:
            return False  # a copy is being written: its leave follows when it is done
        if self.session.copied or not self.session.is_modified():
            return True
        answer = ask(self, "Save the untitled project?",
                     f"This untitled project holds training runs. Save it before {before}?",
                     QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Discard |
                     QMessageBox.StandardButton.Cancel, QMessageBox.StandardButton.Save)
        if answer == QMessageBox.StandardButton.Cancel:
            return False
        if answer == QMessageBox.StandardButton.Save:
            self.save_as(leaving=True, then=then)
            return False
        self.session.discard()
        return True

    def start_demo(self) -> None:
        """An untitled project with the bundled demo corpus loaded, ready to train (and the guide)."""
        self._new_untitled()
        self.corpus.add_demo()
        self.show_panel("corpus")
        if self.settings.show_guide:
            self.show_guide()
        self.statusBar().showMessage("Demo corpus loaded (English, German, Russian, Chinese). "
                                     "Press F5 to train a 1,000-token BPE vocabulary on it.", 15000)

    def new_project(self, files: list[str] | None = None) -> bool:
        """A new untitled project (with ``files`` in its corpus); False when the window stays (the
        user cancelled, or the untitled project in front is being saved first: then it follows)."""
        if not self._may_leave_project(partial(self.new_project, files)):
            return False
        self._save_inspect_session()
        self._new_untitled()
        if files:
            self.corpus.add_paths(files)
        self.show_panel("corpus")
        return True

    def _new_untitled(self) -> None:
        try:
            self.session.new_untitled()
        except WorkbenchError as exc:
            self._error("Cannot create a project", str(exc))
            return
        self.corpus.clear()

    def choose_project(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open project", self.settings.last_folder, PROJECT_FILTER)
        if path:
            self.open_project(path)

    def open_project(self, path: str | Path, *, ask_first: bool = True) -> bool:
        """Open ``path``: False when the user chose to stay; True when the open has started.

        The file is opened and its runs decoded on a worker (:func:`prepare_open`: the writable
        open, the upgrade, the dead runs marked, every run's settings — ~0.1 s for 300 runs, all of
        it on the window's thread before); the window shows "Opening …" meanwhile and takes the
        project over when it is read (:meth:`_adopt`), then emits :attr:`project_opened`, or
        :attr:`open_failed` with the message it showed. A newer open overtakes an older one. Wait
        for :meth:`is_opening` to turn False (or one of the two signals) before using the project.
        """
        path = Path(path)
        if ask_first and not self._may_leave_project(partial(self.open_project, path)):
            return False
        if self._leave_save is not None:
            return False  # the project in front is being copied: its leave decides what follows
        self._save_inspect_session()
        self._opening += 1
        generation = self._opening_path = self._opening, path
        keep_what_is_built()  # the window as it is: the new project's rows are what the collector sees
        self._show_opening(path)
        keys = (INSPECT_SESSION_KEY, COMPARE_SESSION_KEY)
        self.tasks.submit(partial(prepare_open, path, list_below=LIST_OFF_THREAD, settings_keys=keys),
                          lambda opened: self._adopt(generation, opened),
                          lambda message: self._open_failed(generation, message),
                          discard=OpenedProject.discard)  # closed at once if nobody adopts it
        return True

    def is_opening(self) -> bool:
        """A project is being opened (read on a worker, or still taken over by the views)."""
        return self._opening_path is not None

    def _show_opening(self, path: Path, doing: str = "Opening") -> None:
        self.opening_label.setText(f"{doing} {path.name}…")
        self.opening_label.setToolTip(str(path))
        self.opening_label.setStyleSheet(f"color: {style.muted(self.palette()).name()}")
        self.opening_label.show()
        self.statusBar().clearMessage()  # "Opened …" of the last project is no longer true
        self.training.set_opening(True)
        self._update_actions()

    def _end_opening(self) -> None:
        self._opening_path = None
        self.opening_label.hide()
        self.training.set_opening(False)
        self._update_actions()

    def _open_failed(self, generation: tuple[int, Path], message: str) -> None:
        if self._opening_path != generation:
            return  # a newer open overtook this one
        self._end_opening()
        if self.session.copied:  # saved as a copy to be left, and not left: ask again next time
            self.session.copied = False
        self.statusBar().clearMessage()
        self._error("Cannot open the project", message)
        self.open_failed.emit(message)

    def _adopt(self, generation: tuple[int, Path], opened: OpenedProject) -> None:
        """The project read on the worker becomes the window's (views fill on later turns)."""
        if self._opening_path != generation or self.training.is_training():
            opened.discard()  # overtaken by a newer open (or a run started meanwhile)
            if self._opening_path == generation:
                self._end_opening()
            return
        if opened.runs and self.current_panel != "train" and self._held is None:
            # The Train tab's show (its layout and the paint of the whole tab) in a turn of its own,
            # before the take-over's: shown after the take-over it laid out and painted the filled
            # history too, one 30-50 ms stretch (a project with no runs leaves the tab in front).
            self.show_panel("train")
            self._held = (generation, opened)
            self._held_timer.start()
            return
        path = generation[1]
        self.session.adopt(opened)
        self.settings.add_recent_project(path)
        self.settings.last_folder = str(path.absolute().parent)
        if opened.corpus_paths is not None:
            self.corpus.set_files(opened.corpus_paths)
        else:  # read on a worker's connection, listed in batches
            self.corpus.list_project(path)
        if self.session.note:
            self.statusBar().showMessage(self.session.note, 15000)
        else:
            self.statusBar().showMessage(f"Opened {path.name}.", 5000)
        self.project_opened.emit(str(path))
        if not self.session.settling():
            self._on_settled()

    def _timed_adopt(self) -> None:
        """The take-over of a project held while the Train tab was shown (see :meth:`_adopt`), in
        a turn with room: not the one that paints the tab."""
        if self._held is not None and turns.room(self._held_timer):
            (generation, opened), self._held = self._held, None
            self._adopt(generation, opened)

    @Slot()
    def _on_settled(self) -> None:
        """The steps of taking the project over have all run: it is loaded."""
        if self._opening_path is not None and self.session.path == self._opening_path[1].expanduser().absolute():
            path = self.session.path
            self._end_opening()
            self.project_loaded.emit(str(path))

    def save_as(self, *, leaving: bool = False, then: Callable[[], object] | None = None) -> bool:
        """File ▸ Save As: ask where, then copy and continue on the copy (:meth:`save_as_path`).

        ``leaving``: the window is about to leave this project (an untitled one the user chose to
        save): the copy is written on a worker, nothing opens it, and ``then`` (the leave) runs when
        it is done (:meth:`_save_copy_and_leave`). True when the copy started (or, not leaving, the
        Save As did).
        """
        if self.session.store is None:
            return False
        if self.training.is_training():
            QMessageBox.information(self, "Training in progress",
                                    "Save As is available when the run has finished or been cancelled.")
            return False
        self._save_inspect_session()  # the copy takes the Inspect session along
        start = self.settings.last_folder  # never inside the installation (AppSettings.last_folder)
        current = self.session.path
        suggested = str(Path(start) / ("tokenizer-project.tokproj" if self.session.untitled or current is None
                                       else current.name))
        path, _ = QFileDialog.getSaveFileName(self, "Save project as", suggested, PROJECT_FILTER)
        if not path:
            return False
        if leaving:
            return self._save_copy_and_leave(path, then)
        return self.save_as_path(path, force=True)

    def is_saving_to_leave(self) -> bool:
        """An untitled project is being copied before the window leaves it (see :meth:`_save_copy_and_leave`)."""
        return self._leave_save is not None

    def _save_copy_and_leave(self, path: str | Path, then: Callable[[], object] | None) -> bool:
        """Copy the untitled project to ``path`` on a worker, then run ``then`` (the leave).

        The copy was written on the window's thread (a large project: seconds of a frozen window).
        Meanwhile the status bar says "Saving as …" and the actions that would leave or change the
        project wait; the project in front stays open and untouched. A copy that cannot be written
        leaves the window on the project with one message (nothing is lost: the untitled file is
        as it was); a change committed while it was copied has it copied again. Closing the
        window meanwhile waits for the copy (the close follows it, the event loop keeps running).
        """
        if self.session.store is None or self.session.path is None:
            return False
        dest = project_dest(path)
        source, version = self.session.path, self.session.store.data_version()
        self._leave_save = (dest, then)
        self._show_opening(dest, "Saving as")
        self.tasks.submit(partial(copy_project, source, dest, force=True),
                          lambda copied: self._left_copy_written(source, version, copied),
                          self._left_copy_failed)
        return True

    def _left_copy_written(self, source: Path, version: int, dest: Path) -> None:
        pending, self._leave_save = self._leave_save, None
        self._end_leave_save()
        if pending is None or self.session.path != source or self.session.store is None:
            return
        then = pending[1]
        if self.session.store.data_version() != version:  # written while it was copied: copy again
            self._save_copy_and_leave(dest, then)
            return
        self.settings.add_recent_project(dest)
        self.settings.last_folder = str(dest.parent)
        self.session.copied = True  # the untitled original goes when the window leaves it
        self.statusBar().showMessage(f"Saved as {dest}.", 8000)
        self.leave_saved.emit(str(dest))
        if then is not None:
            then()

    def _left_copy_failed(self, message: str) -> None:
        self._leave_save = None
        self._end_leave_save()
        self.statusBar().showMessage("Not saved: the untitled project stays open, unchanged.", 15000)
        self._error("Cannot save the project", message)
        self.leave_save_failed.emit(message)

    def _end_leave_save(self) -> None:
        if self._opening_path is None:  # (an open under way keeps its own label)
            self.opening_label.hide()
            self.training.set_opening(False)
        self._update_actions()

    def save_as_path(self, path: str | Path, *, force: bool = False) -> bool:
        """Save a copy at ``path`` and continue on it: False when it cannot start, True when started.

        The copy is written and opened on a worker (:func:`prepare_save_as`: the backup, then the
        same read as :meth:`open_project`) while the status bar says "Saving as …" and the
        project's actions wait (:meth:`is_opening` is True); the window then continues on the
        copy (:meth:`_adopt_copy`, :attr:`project_saved`), or shows why it could not.
        """
        if self.session.store is None or self.session.path is None or self.is_opening():
            return False
        dest = project_dest(path)
        self._opening += 1
        generation = self._opening_path = self._opening, dest
        source, version = self.session.path, self.session.store.data_version()
        self._show_opening(dest, "Saving as")
        keys = (INSPECT_SESSION_KEY, COMPARE_SESSION_KEY)
        self.tasks.submit(partial(prepare_save_as, source, dest, force=force, settings_keys=keys),
                          lambda opened: self._adopt_copy(generation, source, version, opened),
                          lambda message: self._save_failed(generation, message),
                          discard=OpenedProject.discard)
        return True

    def _adopt_copy(self, generation: tuple[int, Path], source: Path, version: int,
                    opened: OpenedProject) -> None:
        """The copy read on the worker becomes the window's project (Save As)."""
        if self._opening_path != generation or self.session.path != source or self.session.store is None:
            opened.discard()  # overtaken by an open (or the project was closed meanwhile)
            return
        if self.session.store.data_version() != version:  # written while it was copied: copy again
            opened.discard()
            self._end_opening()
            self.save_as_path(generation[1], force=True)
            return
        dest = generation[1]
        self.session.adopt_copy(opened)
        self.settings.add_recent_project(dest)
        self.settings.last_folder = str(dest.parent)
        self.statusBar().showMessage(f"Saved as {dest}.", 8000)
        self.project_saved.emit(str(dest))
        if not self.session.settling():
            self._on_settled()

    def _save_failed(self, generation: tuple[int, Path], message: str) -> None:
        if self._opening_path != generation:
            return
        self._end_opening()
        self._error("Cannot save the project", message)

    @Slot()
    def _on_project_changed(self) -> None:
        path = self.session.path
        self._set_views_project(path)
        if path is not None:
            if self.session.moved_from is not None:  # Save As: the Compare tab kept its state; the copy keeps it too
                self._guarded(self.compare, "session_state",
                              lambda: self.session.save_compare_session(self.compare.session_state()))
            # each in a later turn of its own (after_open), in this order
            self.session.after_open(lambda: self._restore_inspect(path))
            if self.session.moved_from is None:
                self.session.after_open(lambda: self._restore_compare(path))
        self._update_title()
        self._update_actions()

    def _restore_inspect(self, path: Path) -> None:
        state = self.session.inspect_session() if self.session.path == path else {}
        if state:
            self._guarded(self.inspect, "restore_session", lambda: self.inspect.restore_session(state))

    def _restore_compare(self, path: Path) -> None:
        compare = self.session.compare_session() if self.session.path == path else {}
        if compare:
            self._guarded(self.compare, "restore_session", lambda: self.compare.restore_session(compare))

    def _save_inspect_session(self) -> None:
        """Keep the Inspect tab's text, columns and options, and the Compare tab's selection and the
        questions behind its results, in the project before leaving it."""
        if self.session.is_open and not self.session.read_only:
            self._guarded(self.inspect, "session_state",
                          lambda: self.session.save_inspect_session(self.inspect.session_state()))
            self._guarded(self.compare, "session_state",
                          lambda: self.session.save_compare_session(self.compare.session_state()))

    def _fill_recent(self) -> None:
        self.recent_menu.clear()
        recent = self.settings.recent_projects
        for i, path in enumerate(recent, 1):
            act = self.recent_menu.addAction(f"&{i % 10}  {Path(path).name}")
            act.setToolTip(path)
            act.setStatusTip(path)
            act.triggered.connect(lambda _c=False, p=path: self._open_recent(p))
        if recent:
            self.recent_menu.addSeparator()
            self.recent_menu.addAction("Clear the List", self.settings.clear_recent_projects)
        else:
            none = self.recent_menu.addAction("No recent projects")
            none.setEnabled(False)

    def _open_recent(self, path: str) -> None:
        if not Path(path).exists():
            self.settings.remove_recent_project(path)
            self._error("Cannot open the project", f"{path} no longer exists; it was removed from the list.")
            return
        self.open_project(path)

    # ---- import / export ------------------------------------------------------------------------------
    def import_tokenizer(self, path: str | None = None) -> None:
        if self.session.path is None:
            return
        if path is None:
            path, _ = QFileDialog.getOpenFileName(self, "Import a tokenizer", self.settings.last_folder, TOKENIZER_FILTER)
            if not path:
                return
        project = self.session.path

        def work():
            from workbench.tasks.import_export import import_reference

            ref = import_reference(path, project)
            return f"Imported “{ref.name}” as reference {ref.ref_id} ({ref.vocab_size:,} ids, {ref.merge_count:,} merges)."

        self.statusBar().showMessage(f"Importing {Path(path).name}…")
        self.tasks.submit(work, self._imported, self._import_failed)

    def _imported(self, message: str) -> None:
        self.statusBar().showMessage(message, 10000)
        self.session.notify_references_changed()
        self.import_finished.emit(True, message)

    @Slot(object)
    def _on_inspect_imported(self, outcome) -> None:
        """An import from the Inspect tab: the other tabs' lists must offer the reference too."""
        if getattr(outcome, "error", None) is None:
            self.session.notify_references_changed()

    def _import_failed(self, message: str) -> None:
        self.statusBar().clearMessage()
        self._error("Cannot import the tokenizer", message)
        self.import_finished.emit(False, message)

    def export_dialog(self, run_id: int | None = None) -> None:
        if self.session.path is None:
            return
        selected = run_id if run_id is not None else next(iter(self.training.history.selected_ids()), None)
        dialog = ExportDialog(self.session.runs(), selected, self.settings.last_folder, self)
        if dialog.exec() != ExportDialog.DialogCode.Accepted:
            return
        rid, fmt, out, force = dialog.choice()
        self.check_then_export(rid, fmt, out, force=force)

    def check_then_export(self, run_id: int, fmt: str, out: str, *, force: bool = False) -> None:
        """Run the pre-export check off the GUI thread; export at once when it is silent, else show
        its warnings first (``export_check_dialog``) and export only on "Export anyway"."""
        project = self.session.path
        if project is None:
            self._export_failed("No project is open: open or train one to export its runs.")
            return

        def work():
            from workbench.tasks.export_check import check_run

            return check_run(project, run_id, fmt)[1]

        def checked(findings) -> None:
            self.statusBar().clearMessage()
            if not findings:
                self.export_run(run_id, fmt, out, force=force)
                return
            from workbench.ui.export_check import ExportCheckDialog

            dialog = ExportCheckDialog(findings, f"Run {run_id} as {fmt}", self)
            dialog.accepted.connect(lambda: self.export_run(run_id, fmt, out, force=force))
            dialog.finished.connect(lambda _code: dialog.deleteLater())
            self.export_check_dialog = dialog
            dialog.open()  # window-modal, without a nested event loop

        self.statusBar().showMessage(f"Checking run {run_id} before exporting it as {fmt}…")
        self.tasks.submit(work, checked, self._export_failed)

    def export_run(self, run_id: int, fmt: str, out: str, *, force: bool = False) -> None:
        project = self.session.path
        if project is None:
            self._export_failed("No project is open: open or train one to export its runs.")
            return

        def work():
            from workbench.errors import ConfigError
            from workbench.tasks.import_export import export_run

            try:
                result = export_run(project, run_id, fmt, out, force=force)
            except ConfigError as exc:
                if exc.field != "force":
                    raise
                raise WorkbenchError(f"{exc.message} or tick “Replace existing files” to replace it") from None
            checks = f" (verified: {'; '.join(result.checks)})" if result.checks else ""
            return f"Wrote {', '.join(str(p) for p in result.paths)}{checks}"

        self.statusBar().showMessage(f"Exporting run {run_id} as {fmt}…")
        self.settings.last_folder = str(Path(out).parent)
        self.tasks.submit(work, self._exported, self._export_failed)

    def _exported(self, message: str) -> None:
        # The whole report (every path, every check) is too long for the status bar, where it was
        # cut off mid-path: the bar gets the start, its tooltip and the log the whole text.
        log.info("%s", message)
        self.statusBar().showMessage(short_message(message), 15000)
        self.statusBar().setToolTip(message)
        self.export_finished.emit(True, message)

    def _export_failed(self, message: str) -> None:
        self.statusBar().clearMessage()
        self._error("Export failed", message)
        self.export_finished.emit(False, message)

    # ---- view ----------------------------------------------------------------------------------------
    def set_theme(self, theme: str) -> None:
        self.settings.theme = theme
        style.apply_theme(cast(QApplication, QApplication.instance()), theme)  # stubs: QCoreApplication
        for act in self.theme_group.actions():
            act.setChecked(act.data() == theme)

    def reset_layout(self) -> None:
        docks = list(self.docks.values())
        for dock in docks:
            dock.setFloating(False)
            self.addDockWidget(Qt.DockWidgetArea.TopDockWidgetArea, dock)
            dock.show()
        for dock in docks[1:]:
            self.tabifyDockWidget(docks[0], dock)
        docks[0].raise_()

    def _restore_layout(self) -> None:
        geometry = self.settings.geometry
        if geometry.isEmpty() or not self.restoreGeometry(geometry):
            self.resize(1280, 820)
        state = self.settings.window_state
        if not state.isEmpty():
            self.restoreState(state)

    def save_layout(self) -> None:
        self.settings.geometry = self.saveGeometry()
        self.settings.window_state = self.saveState()
        self.settings.sync()

    def show_shortcuts(self) -> None:
        rows = []
        for act in (self.act_new, self.act_open, self.act_save, self.act_save_as, self.act_add_files,
                    self.act_add_folder, self.act_import, self.act_export, self.act_train, self.act_pause,
                    self.act_cancel, self.act_rename, self.act_find, self.act_next_tab, self.act_prev_tab,
                    self.act_shortcuts, self.act_show_log, self.act_quit):
            keys = ", ".join(s.toString(QKeySequence.SequenceFormat.NativeText) for s in act.shortcuts())
            rows.append((act.text().replace("&", "").rstrip("…"), keys))
        for i, dock in enumerate(self.docks.values(), 1):
            key = dock.windowTitle()
            rows.append((f"Go to the {key} panel", f"Alt+{i}"))
        rows += [("Remove corpus files / delete runs", "Delete"), ("Rename the selected run", "F2"),
                 ("Leave the Inspect text (Tab types a tab there)", "Esc, then Tab")]
        shortcuts_dialog(rows, self).exec()

    def show_log(self) -> LogDialog:
        """Help ▸ Show Log: the log's tail in a non-modal dialog (reused while it is open)."""
        if self._log_dialog is None:
            self._log_dialog = LogDialog(window_log_path(), self)
        else:
            self._log_dialog.reload()
        self._log_dialog.show()
        self._log_dialog.activateWindow()
        return self._log_dialog

    def show_about(self) -> None:
        version = _version()
        QMessageBox.about(self, "About Tokenizer Workbench",
                          f"<h3>Tokenizer Workbench {version}</h3>"
                          "<p>See how text splits into tokens, train BPE tokenizers offline on your own corpora "
                          "while the vocabulary grows, browse the merges and export vocab files that "
                          "Hugging Face <code>tokenizers</code>, <code>tiktoken</code> and GPT-2 loaders read as they are.</p>"
                          "<p>Everything in the window is also a <code>workbench</code> command.</p>"
                          "<p>MIT licence. Demo corpus sources: <code>workbench/resources/demo/SOURCES.md</code>.</p>")

    # ---- state ----------------------------------------------------------------------------------------
    def _update_title(self) -> None:
        name = self.session.display_name or "No project"
        suffix = " (read-only)" if self.session.read_only else ""
        self.setWindowTitle(f"{name}[*]{suffix} — {APP_NAME}")
        self.setWindowModified(self.session.is_modified())
        if self.session.path is not None:
            where = "unsaved — File ▸ Save Project As… to keep it" if self.session.untitled else str(self.session.path)
            self.project_label.setText(where)
            self.project_label.setToolTip(str(self.session.path))
        else:
            self.project_label.setText("")

    def _update_actions(self, *_args) -> None:
        is_open = self.session.is_open
        training = self.training.is_training()
        opening = getattr(self, "_opening_path", None) is not None
        saving = getattr(self, "_leave_save", None) is not None  # copied before the window leaves it
        self.act_train.setEnabled(not opening and not saving)  # the project in front is about to be replaced
        self.act_save_as.setEnabled(is_open and not training and not opening and not saving)
        for act in (self.act_new, self.act_open, self.act_save):
            act.setEnabled(not saving)
        self.recent_menu.setEnabled(not saving)
        self.act_import.setEnabled(is_open and not self.session.read_only and not saving)
        self.act_export.setEnabled(is_open and bool(self.session.runs()))
        self.act_pause.setEnabled(training)
        self.act_cancel.setEnabled(training)

    @Slot(bool)
    def _on_training_changed(self, running: bool) -> None:
        if running:
            self.show_panel("train")  # F5 from another panel: show the curves filling in
        self._on_process_state(self.training.process.state if running else "idle")
        self._update_actions()
        self._update_title()

    @Slot(str)
    def _on_process_state(self, state: str) -> None:
        """The status bar's run marker follows the child: training, paused, stopping — or nothing."""
        words = {"starting": "starting", "reading": "reading the corpus", "training": "training",
                 "paused": "paused", "stopping": "stopping"}
        text = words.get(state, "") if self.training.is_training() else ""
        self.run_label.setText(f"● {text}" if text else "")
        colour = style.STATUS_STYLE.get("paused" if state == "paused" else "running", style.STATUS_STYLE["running"])[0]
        self.run_label.setStyleSheet(f"color: {colour}")
        self.run_label.setAccessibleName(f"Run: {text}" if text else "No run in progress")

    @Slot(str)
    def _on_file_rejected(self, message: str) -> None:
        """The status bar names the last refused file, once per turn of the event loop: 5,000
        refusals piled up while the window was busy were 5,000 status-bar updates in one stretch."""
        pending = self._last_refusal is not None
        self._last_refusal = message
        if not pending:
            QTimer.singleShot(0, self._show_refusal)

    def _show_refusal(self) -> None:
        message, self._last_refusal = self._last_refusal, None
        if message is not None:
            self.statusBar().showMessage(f"Not loaded: {message}", 10000)

    @Slot()
    def _on_scan_finished(self) -> None:
        entries = self.corpus.entries()
        bad = len(self.corpus.rejected_messages())
        if entries:
            self.statusBar().showMessage(f"{len(entries)} corpus file{'s' if len(entries) != 1 else ''} ready"
                                         + (f"; {bad} not loaded (see the Corpus panel)" if bad else "") + ".", 8000)

    def _rename_run(self) -> None:
        self.show_panel("train")
        self.training.history.edit_selected_name()

    def _error(self, title: str, message: str) -> None:
        box = QMessageBox(QMessageBox.Icon.Warning, title, message.splitlines()[0] if message else title,
                          QMessageBox.StandardButton.Ok, self)
        fit_title(box)
        box.exec()

    # ---- closing --------------------------------------------------------------------------------------
    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802
        if self._leave_save is not None:  # the untitled project is being copied: close when it is written
            self._leave_save = (self._leave_save[0], self.close)
            self.statusBar().showMessage("Closing once the copy is written…")
            event.ignore()
            return
        if self.training.is_training():
            answer = ask(self, "A run is training",
                         "A training run is in progress. Stop it and close?\n\n"
                         "The merges made so far stay in the project; the run is marked cancelled.",
                         QMessageBox.StandardButton.Close | QMessageBox.StandardButton.Cancel,
                         QMessageBox.StandardButton.Cancel)
            if answer != QMessageBox.StandardButton.Close:
                event.ignore()
                return
            self.statusBar().showMessage("Stopping the run…")
            self.training.stop_and_wait()
        if not self._keep_or_discard_untitled("closing", self.close):
            event.ignore()
            return
        self._save_inspect_session()
        self.save_layout()
        self.shutdown()
        event.accept()

    def shutdown(self) -> None:
        """Join every thread and process and close the project (also used by tests)."""
        if self._held is not None:  # read, and never to be taken over: its connection closed now
            self._held_timer.stop()
            self._held[1].discard()
            self._held = None
        self.training.shutdown()
        self.corpus.shutdown()
        self.tasks.shutdown()
        self._set_views_project(None)
        for view in self.views:  # the views own worker threads too
            self._guarded(view, "shutdown", view.shutdown)
        self.session.close(discard_untitled=True)


def _takes_tab_focus(widget: QWidget, window: QWidget) -> bool:
    """What Qt's own Tab chain accepts: Tab focus, no focus proxy, shown and enabled in ``window``."""
    return (bool(widget.focusPolicy() & Qt.FocusPolicy.TabFocus) and widget.focusProxy() is None
            and widget.window() is window and widget.isVisibleTo(window) and widget.isEnabled())


def _in_combo_popup(view: QWidget) -> bool:
    """A combo box's drop-down list (Qt names it after the combo box)."""
    frame = view.parentWidget()
    return isinstance(frame, QFrame) and isinstance(frame.parentWidget(), QComboBox)


def _version() -> str:
    try:
        return version("tokenizer-workbench")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return ""
