"""How fast the merge browser is on a 100k-merge run: open, jump to the end, scroll, filter, sort.

    python bench/bench_merge_table.py [--merges 100000] [--train] [--repeat 3] [--keep PATH]

Builds a project with ``--merges`` merges — synthetic rows written through the store's
``RunWriter`` (a second), or with ``--train`` a real byte-level BPE run on ../shared/corpora to
vocabulary 256 + merges (a minute or so) — then, in an offscreen window, times (best of
``--repeat``): opening the project and the model; jumping to the last row and painting it;
painting 20 random scroll positions; filters (substring in any piece, regex on the result, a
length range in characters, a frequency range); sorting by every column; and a live refresh that
appends 1,000 merges. The issue's target: open, jump and filter each well under a second.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "merges"))  # merge_helpers: the synthetic run the tests use


def build(path: Path, merges: int, train: bool) -> str:
    if train:
        from workbench.core.bpe import TrainConfig
        from workbench.tasks.train import train_into_project

        corpora = sorted((ROOT.parent / "shared" / "corpora").glob("*.txt"))
        if not corpora:
            raise SystemExit("--train needs ../shared/corpora beside the checkout")
        t = time.perf_counter()
        train_into_project([str(p) for p in corpora], path,
                           TrainConfig(units="bytes", vocab_size=256 + merges, pretokenizer="gpt2"), name="bench")
        return f"trained on {len(corpora)} corpus files in {time.perf_counter() - t:.1f} s"
    from merge_helpers import write_synthetic

    t = time.perf_counter()
    write_synthetic(path, merges, seed=1)
    return f"synthetic rows written in {time.perf_counter() - t:.2f} s"


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--merges", type=int, default=100_000)
    ap.add_argument("--train", action="store_true", help="train a real run instead of writing synthetic rows")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", help="build (or reuse) the project at this path instead of a temporary folder")
    args = ap.parse_args(argv)

    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication

    from workbench.store import ProjectStore
    from workbench.ui.merges.panel import MergePanel

    app = QApplication.instance() or QApplication([])
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.keep) if args.keep else Path(tmp) / "bench.tokproj"
        if not path.exists():
            print(build(path, args.merges, args.train))
        panel = MergePanel()
        panel.resize(1400, 900)
        panel.show()
        app.processEvents()
        model, view = panel.model, panel.table
        results: list[tuple[str, float, str]] = []

        def paint() -> None:
            view.viewport().repaint()

        def open_project() -> None:
            panel.set_project(path)
            paint()

        results.append(("open project + model + first paint", best(open_project, args.repeat),
                        f"{model.rowCount():,} rows"))
        n = model.rowCount()

        def jump_last() -> None:
            model._pages.clear()
            view.scrollToBottom()
            paint()
            model.data(model.index(n - 1, 3))

        results.append(("jump to the last row + paint", best(jump_last, args.repeat), ""))
        rng = random.Random(0)

        def scroll() -> None:
            for _ in range(20):
                view.scrollTo(model.index(rng.randrange(n), 0))
                paint()

        results.append(("20 random scroll positions, painted", best(scroll, args.repeat), "(total)"))

        filters = [
            ("filter: substring 'ab' in any piece", dict(text="ab")),
            ("filter: regex ^\\s?[a-z]{3}$ on result", dict(text=r"^\s?[a-z]{3}$", regex=True, field="result")),
            ("filter: length 4–6 characters", dict(min_length=4, max_length=6, unit="chars")),
            ("filter: length 4–6 bytes", dict(min_length=4, max_length=6)),
            ("filter: frequency range (middle third)", "freq"),
        ]
        store = ProjectStore.open(path, readonly=True)
        run_id = store.latest_run_id()
        freqs = [r.frequency for r in store.merges(run_id, n // 3, 1)] + \
                [r.frequency for r in store.merges(run_id, 2 * n // 3, 1)]
        store.close()
        for label, kw in filters:
            if kw == "freq":
                kw = dict(min_frequency=min(freqs), max_frequency=max(freqs))

            def apply(kw=kw) -> None:
                panel.set_filter()
                t = time.perf_counter()
                panel.set_filter(**kw)
                paint()
                apply.elapsed = time.perf_counter() - t

            times = []
            for _ in range(args.repeat):
                apply()
                times.append(apply.elapsed)
            results.append((label, min(times), f"{model.rowCount():,} match"))
        panel.set_filter()

        for column, (title, _key, _tip) in enumerate(model.COLUMNS):
            def sort(column=column) -> None:
                view.sortByColumn(0, Qt.SortOrder.AscendingOrder)
                t = time.perf_counter()
                view.sortByColumn(column, Qt.SortOrder.DescendingOrder)
                paint()
                sort.elapsed = time.perf_counter() - t

            times = []
            for _ in range(args.repeat):
                sort()
                times.append(sort.elapsed)
            results.append((f"sort by {title} (descending)", min(times), ""))
        view.sortByColumn(0, Qt.SortOrder.AscendingOrder)

        # Live refresh: another writer appends 1,000 merges; refresh() inserts them.
        live = Path(tmp) / "live.tokproj"
        from merge_helpers import synthetic_run, write_synthetic

        data = write_synthetic(live, 50_000, seed=2)
        panel.set_project(live)
        more = synthetic_run(1_000, seed=3, start_step=len(data.events) + 1, base=data)
        with ProjectStore.open(live) as writer_store:
            writer = writer_store.run_writer(1, interval=float("inf"))
            for e, p in zip(more.events[len(data.events):], more.pieces[len(data.events):]):
                writer.add(e, p)
            writer.flush()
            t = time.perf_counter()
            inserted = model.refresh()
            paint()
            results.append(("refresh: append 1,000 live merges", time.perf_counter() - t, f"{inserted:,} inserted"))
            view.sortByColumn(3, Qt.SortOrder.AscendingOrder)
            for e, p in zip(synthetic_run(1_000, seed=4, start_step=len(more.events) + 1, base=more).events[-1000:],
                            synthetic_run(1_000, seed=4, start_step=len(more.events) + 1, base=more).pieces[-1000:]):
                writer.add(e, p)
            writer.flush()
            t = time.perf_counter()
            inserted = model.refresh()
            paint()
            results.append(("refresh, sorted by piece: 1,000 inserted in place", time.perf_counter() - t,
                            f"{inserted:,} inserted"))
            writer.close()
        panel.shutdown()

    width = max(len(r[0]) for r in results)
    print(f"\n{'operation':<{width}}  {'best ms':>9}")
    for label, seconds, note in results:
        print(f"{label:<{width}}  {seconds * 1000:9.1f}  {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
