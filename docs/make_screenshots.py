"""Retake the screenshots in docs/ from the real window, following the first session of docs/guide.md.

    QT_QPA_PLATFORM=offscreen python docs/make_screenshots.py [OUT] [--shared ../shared/corpora]

Offscreen, with a fresh settings and cache folder (so it sees what a first start sees): opens the
window on the demo corpus, trains a BPE, a WordPiece and a Unigram run through the Train tab (the
real child processes), fills the Inspect, Merges and Compare tabs as the guide does, opens File ▸
Export's dialog for each run (the formats each family is offered) and exports the Unigram run as
``tokenizer.json``, then checks that `tokenizers`
loads it with the window's ids. Each step is saved in both themes as ``OUT/NN-name-{light,dark}.png``
and described in ``OUT/log.txt``. ``--shared DIR`` adds the Compare tab on those corpus files with
``cl100k_base`` (tiktoken's file, found offline) beside the three runs — slower (minutes).

A tool for the docs, not a test: the test suite checks the same paths with assertions.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile
import time
from pathlib import Path

SAMPLE = ("Tokenizers split unbelievable words — Hello world! Привет, мир. 世界 👋\n"
          "    def greet(name):\n        return f\"Hello, {name}!\"\n")


def main() -> int:  # noqa: C901, PLR0915 - one linear script, step by step as the guide reads
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", default="docs/screenshots/session")
    parser.add_argument("--shared", metavar="DIR", help="also compare on these corpus files with cl100k_base")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="wb-shots-"))
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    for var in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        os.environ[var] = str(base / var.lower())
    from PySide6.QtCore import QEventLoop, QSettings, Qt, QTimer
    from PySide6.QtWidgets import QApplication

    app = QApplication([])
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(base / "config"))
    from workbench.ui.app import configure_app

    configure_app(app)
    from workbench.ui.dialogs import ExportDialog
    from workbench.ui.main_window import MainWindow

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = (out / "log.txt").open("w", encoding="utf-8")

    def say(*parts: object) -> None:
        print(*parts, file=log, flush=True)
        print(*parts, flush=True)

    def wait(cond, timeout: float = 300.0) -> bool:
        end = time.monotonic() + timeout
        while not cond() and time.monotonic() < end:
            app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 50)
        return bool(cond())

    def pause(seconds: float = 0.5) -> None:
        loop = QEventLoop()
        QTimer.singleShot(int(seconds * 1000), loop.quit)
        loop.exec()

    counter = iter(range(1, 100))

    def shot(name: str, widget=None) -> None:
        number = next(counter)
        for theme in ("light", "dark"):
            window.set_theme(theme)
            pause(0.6)
            (widget or window).grab().save(str(out / f"{number:02d}-{name}-{theme}.png"))
        window.set_theme("light")
        say(f"  shot {number:02d}-{name}")

    window = MainWindow()
    window.resize(1440, 900)
    window.show()
    window.start_demo()
    wait(lambda: not window.corpus.is_scanning())
    pause(0.5)
    say("1. The window opens on the demo corpus, the guide above the Corpus tab.")
    shot("corpus-guide")
    window.guide_bar.hide()  # read and closed, as a user does (the close button)

    runs: dict[str, int] = {}
    done: list[tuple[int, str]] = []
    window.training.run_finished.connect(lambda rid, status: done.append((rid, status)))
    window.show_panel("train")
    for model, size in (("bpe", 1000), ("wordpiece", 2000), ("unigram", 2000)):
        panel = window.training
        panel.model_combo.setCurrentIndex(panel.model_combo.findData(model))
        panel.model_combo.activated.emit(panel.model_combo.currentIndex())
        panel.set_options(vocab_size=size)
        n = len(done)
        t0 = time.monotonic()
        if not panel.start():
            say(f"   {model}: the form refused to start: {panel.state_label.text()}")
            return 1
        wait(lambda n=n: len(done) > n, 900)
        rid, status = done[-1]
        runs[model] = rid
        wait(lambda panel=panel: not panel.settle_timer.isActive(), 40)
        pause(0.8)
        say(f"2. {model}: run {rid} {status} in {time.monotonic() - t0:.1f} s — {panel.state_label.text()!r}")
        shot(f"train-{model}")

    window.show_panel("inspect")
    inspect = window.inspect
    inspect.set_text(SAMPLE)
    inspect.primary.set_source(("run", runs["bpe"]))
    inspect.add_pane(("run", runs["wordpiece"]))
    unigram_pane = inspect.add_pane(("run", runs["unigram"]))
    wait(lambda: inspect.colouring_done(), 60)
    if unigram_pane is not None:  # the cursor on "unbelievable": the Unigram column lists its best splits
        cursor = unigram_pane.editor.textCursor()
        cursor.setPosition(SAMPLE.index("unbelievable") + 3)
        unigram_pane.editor.setTextCursor(cursor)
    pause(1.5)
    say("3. Inspect: the three runs side by side; the Unigram column's n-best list below it.")
    shot("inspect-three")

    window.show_panel("merges")
    merges = window.merges
    for model in ("bpe", "wordpiece", "unigram"):
        index = merges.chooser.findData(("run", runs[model]))
        if index < 0:
            index = next((i for i in range(merges.chooser.count())
                          if tuple(merges.chooser.itemData(i) or ()) == ("run", runs[model])), -1)
        merges.chooser.setCurrentIndex(index)
        pause(1.0)
        merges.set_filter("ing" if model == "bpe" else "")
        pause(0.8)
        say(f"4. Merges: run {runs[model]} ({model}) — {merges.status.text()!r}")
        shot(f"merges-{model}")

    window.show_panel("compare")
    compare = window.compare
    project = window.session.path
    compare.set_project(project)
    pause(0.5)
    for i in range(compare.tokenizer_list.count()):
        compare.tokenizer_list.item(i).setCheckState(Qt.CheckState.Checked)
    compare.baseline.setCurrentText("en")
    results: list = []
    compare.computed.connect(results.append)
    t0 = time.monotonic()
    if compare.compute():
        wait(lambda: bool(results) or not compare.tasks.busy(), 900)
        if not results:
            say(f"5. Compare failed: {compare.status.text()!r}")
            return 1
        say(f"5. Compare on the demo files: {time.monotonic() - t0:.1f} s, "
            f"{[(m.label, m.tokens) for m in results[-1].totals]}")
        pause(1.0)
        shot("compare-demo")
    sweeps: list = []
    compare.swept.connect(sweeps.append)
    for model in ("bpe", "wordpiece", "unigram"):
        compare.sweep_source.setCurrentIndex(compare.sweep_source.findData(f"{project}#{runs[model]}"))
        n = len(sweeps)
        if compare.run_sweep():
            wait(lambda n=n: len(sweeps) > n, 600)
    compare.tabs.setCurrentIndex(3)
    pause(1.0)
    say(f"6. Sweep: {len(sweeps)} runs on one chart; knees at "
        f"{[None if s.knee is None else s.points[s.knee].vocab_size for s in sweeps]}")
    shot("compare-sweep")

    if args.shared:
        from workbench.tasks.import_export import import_reference

        cl100k = None
        for folder in importlib.util.find_spec("tiktoken_ext").submodule_search_locations:  # type: ignore[union-attr]
            candidate = Path(folder) / "data" / "cl100k_base.tiktoken"
            cl100k = candidate if candidate.exists() else cl100k
        if cl100k is not None:
            import_reference(cl100k, project, name="cl100k_base")
            window.session.notify_references_changed()
            pause(0.5)
        langs = {"de": "de", "en": "en", "ru": "ru", "zh": "zh"}
        for path in sorted(Path(args.shared).glob("*.txt")):
            compare.add_corpus_file(path, language=langs.get(path.name[:2]))
        for listed in list(compare.files.paths):
            compare.set_file_checked(listed, listed.startswith(str(Path(args.shared).resolve())))
        for i in range(compare.tokenizer_list.count()):
            compare.tokenizer_list.item(i).setCheckState(Qt.CheckState.Checked)
        compare.tabs.setCurrentIndex(0)
        n = len(results)
        t0 = time.monotonic()
        if compare.compute():
            wait(lambda: len(results) > n, 1800)
            say(f"7. Compare on {args.shared} with cl100k: {time.monotonic() - t0:.1f} s")
            pause(1.0)
            shot("compare-shared")
            compare.tabs.setCurrentIndex(2)
            pause(0.8)
            shot("compare-shared-bars")

    # One dialog per family: each is offered only the formats that fit it, the rest greyed out with why.
    for model in ("bpe", "wordpiece"):
        family_dialog = ExportDialog(window.session.runs(), runs[model], str(base), window)
        family_dialog.show()
        pause(0.5)
        shot(f"export-{model}", family_dialog)
        family_dialog.reject()
    dialog = ExportDialog(window.session.runs(), runs["unigram"], str(base), window)
    dialog.show()
    pause(0.8)
    shot("export-unigram", dialog)
    rid, fmt, target, force = dialog.choice()
    dialog.reject()
    target = str(out / "tokenizer.json")
    window.export_run(rid, "hf", target, force=True)
    wait(lambda: Path(target).exists(), 60)
    pause(0.5)
    say(f"8. Exported run {rid} as hf: {target} — status bar: {window.statusBar().currentMessage()!r}")
    try:
        import tokenizers

        from workbench.core.encoder import Encoder
        from workbench.tasks.sources import load_tokenizer

        words = "Tokenizers split unbelievable words — Привет, мир. 世界"
        theirs = tokenizers.Tokenizer.from_file(target).encode(words, add_special_tokens=False).ids
        ours = Encoder(load_tokenizer(f"{project}#{rid}")).encode(words)
        say(f"9. tokenizers loads it: ids {'identical' if list(theirs) == list(ours) else 'DIFFERENT'} "
            f"({len(ours)} tokens)")
    except ImportError:
        say("9. (tokenizers not installed: pip install tokenizers to check the export)")
    window.shutdown()
    window.session.discard()
    say("done:", out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
