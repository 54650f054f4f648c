"""SuperBPE's stage 2 before and after a change, interleaved in one process on the same counts.

    python bench/bench_superbpe_ab.py --before 5ce4732 [--vocab 8000 32000] [--transition 0.9 0.4] [--rounds 2]

Two runs of bench_superbpe.py at different loads are too noisy to compare one change closely: this
loads ``workbench/core/superbpe.py`` as it was at ``--before`` (``git show``) beside the current one,
counts the training text once (bench_superbpe.py's: the shared corpora, every tenth line held out,
GPT-2 split and the stage-2 split), and trains plain BPE, SuperBPE before and SuperBPE after, round
after round, in that order. It prints the fastest CPU time of each, the ratios to plain BPE, the load
average, and whether before and after made the same merges (a hash of the merge list). Both versions
use the current plain trainer (``workbench/core/bpe.py``). Not a test.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CORPORA = ROOT.parent / "shared" / "corpora"
if not CORPORA.is_dir():
    CORPORA = Path("/work/shared/corpora")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="a commit whose superbpe.py is the 'before'")
    parser.add_argument("--vocab", type=int, nargs="+", default=[8000, 32000])
    parser.add_argument("--transition", type=float, nargs="+", default=[0.9, 0.4])
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    from workbench.core import superbpe as after
    from workbench.core.bpe import BpeTrainer, TrainConfig
    from workbench.tasks.train import count_words, open_sources, resolve_files

    folder = Path(tempfile.mkdtemp(prefix="bench-superbpe-ab-"))
    old_source = subprocess.run(["git", "show", f"{args.before}:workbench/core/superbpe.py"], cwd=ROOT,
                                check=True, capture_output=True, text=True).stdout
    (folder / "superbpe_before.py").write_text(old_source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("superbpe_before", folder / "superbpe_before.py")
    assert spec is not None and spec.loader is not None
    before = importlib.util.module_from_spec(spec)
    sys.modules["superbpe_before"] = before
    spec.loader.exec_module(before)

    lines: list[str] = []
    for path in sorted(CORPORA.glob("*.txt")):
        lines += [line for i, line in enumerate(path.read_text(encoding="utf-8").split("\n")) if i % 10]
    train = folder / "train.txt"
    train.write_text("\n".join(lines) + "\n", encoding="utf-8")
    c1, _ = count_words(open_sources(resolve_files([str(train)])), "gpt2", (), cache=False)
    c2, _ = count_words(open_sources(resolve_files([str(train)])), after.STAGE2_PATTERN, (), cache=False)
    c1, c2 = dict(c1), dict(c2)

    def run(kind: str, vocab: int, t: float) -> tuple[float, str]:
        start = time.process_time()
        if kind == "bpe":
            trainer = BpeTrainer(c1, TrainConfig(vocab_size=vocab))
        else:
            m = before if kind == "before" else after
            trainer = m.SuperBpeTrainer(c1, c2, m.SuperBpeConfig(TrainConfig(vocab_size=vocab), t))
        for _event in trainer.run():
            pass
        merges = trainer.merges if kind == "bpe" else trainer.log.merges
        return time.process_time() - start, hashlib.sha1(repr(merges).encode()).hexdigest()

    print(f"before = {args.before}'s superbpe.py; load {os.getloadavg()[0]:.1f} (1 min)")
    for vocab in args.vocab:
        for t in args.transition:
            times: dict[str, list[float]] = {"bpe": [], "before": [], "after": []}
            hashes: dict[str, str] = {}
            for _round in range(args.rounds):
                for kind in times:
                    secs, digest = run(kind, vocab, t)
                    times[kind].append(secs)
                    hashes[kind] = digest
            b = min(times["bpe"])
            print(f"V {vocab:,} t {t:g}: load {os.getloadavg()[0]:.1f} · BPE {b:.1f} s · before "
                  f"{min(times['before']):.1f} s × {min(times['before']) / b:.2f} · after {min(times['after']):.1f} s "
                  f"× {min(times['after']) / b:.2f} · same merges: {hashes['before'] == hashes['after']}", flush=True)


if __name__ == "__main__":
    main()
