"""Planted bugs: a cheap mutation check of the suite (issue 25). Not collected by pytest.

    python tests/planted_bugs.py [--only NAME …] [--list]

Each entry plants one realistic bug in a copy of this checkout (the files as they are now, committed
or not) and runs the tests named beside it; a planted bug that the tests let pass "survives".
Run it before resolving an issue that touches a trainer, an encoder, counting or a cache, and give
the kill rate in the closing note. Add an entry when a bug slips through: the bug, and the test that
now catches it. The tests are run with a per-test timeout, so a bug that makes something hang
counts as caught only if a test fails by name (pytest-timeout), never by a job timeout.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Planted:
    name: str
    file: str
    old: str
    new: str
    tests: tuple[str, ...]
    why: str


PLANTED = [
    Planted("lone-cr-breaks-lines", "workbench/core/count.py", 'parts = text.split("\\n")',
            'parts = __import__("re").split(r"\\r(?!\\n)|\\n", text)',
            ("tests/corpus/test_sequences.py", "tests/test_train_sequences.py"),
            "a lone CR taken for a line break (tokenizers' train(files) splits at LF only)"),
    Planted("unigram-m-step-log", "workbench/core/unigram.py",
            "f = digamma if self.config.bayesian else math.log", "f = math.log",
            ("tests/core/test_unigram_fingerprint.py",), "the M step without digamma"),
    Planted("unigram-prune-one-short", "workbench/core/unigram.py",
            "            if len(kept) >= size:\n", "            if len(kept) >= size - 1:\n",
            ("tests/core/test_unigram_fingerprint.py",), "pruning keeps one piece fewer"),
    Planted("unigram-prune-no-progress", "workbench/core/unigram.py",
            "size = max(desired, int(self.config.shrinking_factor * n_pieces))", "size = n_pieces",
            ("tests/core/test_unigram_fingerprint.py",), "a pruning step that cannot shrink (looped forever)"),
    Planted("unigram-no-rebase", "workbench/core/unigram.py", "SPM_REBASE = 1e5", "SPM_REBASE = 1e12",
            ("tests/formats/test_fmt_spm_model.py",), "float32 sums not rebased as sentencepiece's (long lines)"),
    Planted("compare-cache-ignores-reader", "workbench/tasks/compare.py",
            "return [fp, src.reader_options()]", "return [fp]",
            ("tests/compare/test_compare_task.py",), "the Compare cache not keyed by the JSONL field / CSV column"),
    Planted("decode-ignores-cut-characters", "workbench/core/encoder.py",
            'def decode(self, ids: Iterable[int], errors: str = "replace",',
            'def decode(self, ids: Iterable[int], errors: str = "ignore",',
            ("tests/core/test_encoder_cl100k.py",), "a cut emoji decodes to nothing instead of U+FFFD"),
    Planted("wordpiece-length-off-by-one", "workbench/core/wordpiece.py",
            "if n > self.max_chars:", "if n >= self.max_chars:",
            ("tests/core/test_wordpiece_vs_tokenizers.py",), "a 100-character word becomes [UNK]"),
    Planted("special-shortest-first", "workbench/core/encoder.py",
            "ordered = sorted((t for t in tokens if t), key=len, reverse=True)",
            "ordered = sorted((t for t in tokens if t), key=len)",
            ("tests/core/test_encoder_cl100k.py",), "<eot> matched inside <eot>_2"),
    Planted("bpe-merge-leftmost-not-lowest", "workbench/core/encoder.py",
            "if found is not None and (best is None or found[0] < best[0]):",
            "if found is not None and best is None:",
            ("tests/core/test_encoder_roundtrip.py", "tests/formats/test_fmt_hf_json.py"),
            "encoding of a trained run applies the leftmost mergeable pair, not the lowest rank"),
    Planted("byte-table-shifted", "workbench/core/byte_level.py",
            "chars.append(256 + shift)", "chars.append(257 + shift)",
            ("tests/formats/test_fmt_hf_json.py", "tests/core/test_bpe_vs_tokenizers.py"),
            "GPT-2's byte stand-ins off by one"),
    Planted("lowercase-ascii-only", "workbench/core/normalize.py",
            'value = self[code] = "" if unicodedata.category(ch) == "Mn" else ch.lower()',
            'value = self[code] = "" if unicodedata.category(ch) == "Mn" else ch.lower() if ch.isascii() else ch',
            ("tests/core/test_wordpiece_vs_tokenizers.py",), "lowercasing only ASCII"),
]


def copy_checkout(target: Path) -> None:
    """The checkout's files as they are now (tracked and new, not ignored ones)."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True,
                            capture_output=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


def run(planted: Planted, copy: Path) -> tuple[bool, float, str]:
    path = copy / planted.file
    original = path.read_text(encoding="utf-8")
    if original.count(planted.old) != 1:
        raise SystemExit(f"{planted.name}: the text to replace is not in {planted.file} exactly once — update the entry")
    path.write_text(original.replace(planted.old, planted.new), encoding="utf-8")
    try:
        start = time.monotonic()
        env = dict(os.environ, PYTHONPATH=str(copy), PYTHONDONTWRITEBYTECODE="1")
        done = subprocess.run([sys.executable, "-m", "pytest", "-n0", "-x", "-q", "-p", "no:cacheprovider",
                               "--timeout", "120", *planted.tests], cwd=copy, env=env, capture_output=True, text=True)
        last = (done.stdout.strip().splitlines() or [""])[-1]
        return done.returncode not in (0, 5), time.monotonic() - start, last
    finally:
        path.write_text(original, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="*", help="names of the entries to run")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args()
    chosen = [p for p in PLANTED if not args.only or p.name in args.only]
    if args.list:
        for p in chosen:
            print(f"{p.name:34} {p.why}")
        return
    with tempfile.TemporaryDirectory(prefix="planted-") as folder:
        copy = Path(folder) / "checkout"
        copy_checkout(copy)
        if (ROOT.parent / "shared").exists():  # the tests find the corpora beside the checkout
            (Path(folder) / "shared").symlink_to(ROOT.parent / "shared")
        killed = 0
        for planted in chosen:
            caught, seconds, last = run(planted, copy)
            killed += caught
            print(f"{'caught  ' if caught else 'SURVIVED'} {planted.name:34} {seconds:6.1f} s  {last}", flush=True)
    print(f"kill rate: {killed}/{len(chosen)}")
    sys.exit(0 if killed == len(chosen) else 1)


if __name__ == "__main__":
    main()
