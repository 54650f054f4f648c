"""Unigram training fingerprint: every event and the final pieces and scores, exactly, as JSON.

    python bench/unigram_fingerprint.py OUT.json [--full]

For speed work on ``core/unigram.py``: run it before and after a change and compare the two files
(``cmp``, or ``--compare OLD.json``); any difference in a piece, a float32 score, a pruning step's
size or token count, or an EM step's log-likelihood (``repr``, all digits) shows. Cases: the demo
corpus at three sizes (one with byte fallback, one plain EM), a coverage below 1 (unknown
characters), and a ~1.3 MB slice of ``../shared/corpora`` at 8,000; ``--full`` adds the benchmark's
whole training set (every 10th line held out, as ``bench_unigram.py``) at 8,000 (about a minute).
Not a test: it needs the shared corpora and minutes; the test suite holds the properties.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CORPORA = ROOT.parent / "shared" / "corpora"
DEMO = ROOT / "workbench" / "resources" / "demo"

from workbench.core.unigram import UnigramConfig, UnigramTrainer, count_spm_words


def lines_of(folder: Path, every: int = 1, limit: int | None = None) -> list[str]:
    out: list[str] = []
    for path in sorted(folder.glob("*.txt")):
        kept = [line for i, line in enumerate(path.read_text(encoding="utf-8").split("\n"))
                if line and (every == 1 or i % every)]
        out.extend(kept[:limit] if limit else kept)
    return out


def fingerprint(lines: list[str], config: UnigramConfig) -> dict:
    t0 = time.perf_counter()
    trainer = UnigramTrainer(count_spm_words(lines), config)
    events = [[e.step, e.phase, e.vocab_size, e.token_count, repr(e.log_likelihood)] for e in trainer.run()]
    tok = trainer.tokenizer()
    pieces = [[p.decode("utf-8", "replace"), repr(s)] for p, s in zip(tok.vocab, tok.scores)]
    body = json.dumps([events, pieces], ensure_ascii=False)
    return {"sha256": hashlib.sha256(body.encode()).hexdigest(), "seconds": round(time.perf_counter() - t0, 2),
            "initial_size": trainer.initial_size, "events": events, "pieces": pieces}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--compare", help="an earlier output: report the cases that differ")
    args = parser.parse_args()
    demo = lines_of(DEMO)
    cases = {
        "demo_1000": (demo, UnigramConfig(vocab_size=1000)),
        "demo_2000_bytes": (demo, UnigramConfig(vocab_size=2000, byte_fallback=True)),
        "demo_1200_plain_em": (demo, UnigramConfig(vocab_size=1200, bayesian=False)),
        "demo_1000_coverage": (demo, UnigramConfig(vocab_size=1000, character_coverage=0.995)),
        "shared_slice_8000": (lines_of(CORPORA, limit=6000), UnigramConfig(vocab_size=8000)),
    }
    if args.full:
        cases["shared_full_8000"] = (lines_of(CORPORA, every=10), UnigramConfig(vocab_size=8000))
    result = {}
    for name, (lines, config) in cases.items():
        result[name] = fingerprint(lines, config)
        print(name, result[name]["sha256"][:16], result[name]["seconds"], "s", flush=True)
    Path(args.out).write_text(json.dumps(result, ensure_ascii=False, indent=0), encoding="utf-8")
    if args.compare:
        old = json.loads(Path(args.compare).read_text(encoding="utf-8"))
        differ = [name for name in result if name in old and old[name]["sha256"] != result[name]["sha256"]]
        print("identical" if not differ else f"DIFFERENT: {differ}")
        sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
