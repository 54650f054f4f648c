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
    Planted("lone-cr-breaks-lines", "workbench/core/count.py", 'lines = text.split("\\n")',
            'lines = __import__("re").split(r"\\r(?!\\n)|\\n", text)',
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
    # Issue 25, second pass: bugs of the kinds the recent speed-ups could make (flat store, numpy
    # kernel, cold heap entries, SuperBPE's segment cuts, counting a file per process, opening on a worker).
    Planted("bpe-split-rare-at-floor", "workbench/core/bpe_kernel.py", "rare = vals < floor", "rare = vals <= floor",
            ("tests/core/test_bpe_kernel.py::test_split_rare_keeps_every_pair_tied_with_the_last_kept_hot",),
            "a pair tied at the floor left without a heap entry (it can lose a first-seen tie)"),
    Planted("bpe-kernel-word-listed-twice", "workbench/core/bpe_kernel.py",
            "        if dup.size:\n            wu = np.delete(wu, dup)\n", "        pass\n",
            ("tests/core/test_bpe_kernel.py::test_a_merge_given_a_word_twice_merges_it_once",),
            "a word listed twice under the merged pair: its changes counted twice"),
    Planted("bpe-kernel-front-not-min", "workbench/core/bpe_kernel.py", "if front_min and w < listed[0]:", "if False:",
            ("tests/core/test_bpe_kernel.py::test_a_smaller_word_added_to_a_pair_goes_in_front",),
            "a smaller word appended behind a pair's front: the first-seen bound is no lower bound"),
    Planted("bpe-kernel-runs-not-even", "workbench/core/bpe_kernel.py",
            "cand = prev_a[1:] & is_a[1:] & ((np.arange(total - 1) - marks[:-1]) % 2 == 0)",
            "cand = prev_a[1:] & is_a[1:]", ("tests/core/test_bpe_kernel.py",),
            "a run a a a merged at every offset instead of left to right"),
    Planted("bpe-flat-adjacent-matches", "workbench/core/bpe.py",
            "if i >= last_end and i + 1 < n and sym[i + 1] == b:", "if i > last_end and i + 1 < n and sym[i + 1] == b:",
            ("tests/core/test_bpe_kernel.py",), "the flat loop skips a match right after the one before (a b a b)"),
    Planted("bpe-cold-only-when-dry", "workbench/core/bpe.py", "if cold and (best is None or counts[best] < floor):",
            "if cold and best is None:", ("tests/core/test_bpe_kernel.py",),
            "the cold pairs given entries only when the heap is empty, not when the best count falls below them"),
    Planted("wordpiece-rescore-one-side", "workbench/core/wordpiece.py", "for s in (a, b) if a != b else (a,):",
            "for s in (a,):", ("tests/core/test_wordpiece_incremental.py",),
            "after a merge only the pairs holding its left half are scored again"),
    Planted("wordpiece-empty-entry-is-a-step", "workbench/core/wordpiece.py", "            if made:  # an entry",
            "            if True:  # an entry",
            ("tests/core/test_wordpiece_vs_tokenizers.py::test_queue_quirks_are_the_library_s",),
            "a queue entry whose words no longer hold the pair logged as a merge that joined nothing"),
    Planted("superbpe-spine-wrong-side", "workbench/core/superbpe.py",
            "members.update(_spine(halves[side], side, made_by, memo))",
            "members.update(_spine(halves[0], side, made_by, memo))",
            ("tests/core/test_superbpe.py::test_stage_two_pieces_of_real_text_get_the_ids_of_encoding_them_whole",),
            "stage 2 cuts a piece where a merge joins the two sides (a token's spine followed on the wrong side)"),
    Planted("superbpe-rejudge-once", "workbench/core/superbpe.py",
            "while done and joined(done[-1][-1], seg_ids[0]):",
            "for _ in range(1) if done and joined(done[-1][-1], seg_ids[0]) else ():",
            ("tests/core/test_superbpe.py::test_stage_two_pieces_of_real_text_get_the_ids_of_encoding_them_whole",),
            "a joined segment's new first token judged against one cut before it, not all"),
    Planted("count-files-flush-no-reset", "workbench/corpus/counts.py",
            "                flush(dict(counts))\n                counts = Counter()\n    finally:",
            "                flush(dict(counts))\n    finally:", ("tests/corpus/test_count_file_per_process.py",),
            "a bounded count a file per process keeps its sum after a flush (early rows counted twice)"),
    Planted("count-files-skip-in-workers", "workbench/corpus/counts.py",
            ' and getattr(src, "on_bad_record", "fail") != "skip"', "",
            ("tests/corpus/test_count_file_per_process.py",),
            "files read under on_bad_record=skip counted in workers: the skipped records are never reported"),
    Planted("count-pooled-flush-no-reset", "workbench/core/count.py",
            "            flush(dict(counts))\n            counts = Counter()\n    return dict(counts)",
            "            flush(dict(counts))\n    return dict(counts)", ("tests/corpus/test_count_file_per_process.py",),
            "a bounded pooled count keeps its sum after a flush"),
    Planted("pool-own-share-ignores-own", "workbench/core/count.py", "compute = own or fn", "compute = fn",
            ("tests/core/test_count_pool.py",),
            "the trainer's own share counted without its own stop check (a whole file not cancellable)"),
    Planted("pool-own-share-out-of-turn", "workbench/core/count.py",
            "done[first] = compute(mine.pop(first))", "done[taken + 1] = compute(mine.pop(first))",
            ("tests/core/test_count_pool.py", "tests/core/test_count.py"),
            "the trainer's own item counted while it waits filed under the next index, not its own"),
    Planted("open-state-without-version", "workbench/ui/project_session.py",
            "self.store.data_version() == self._states[0]:", "True:",
            ("tests/ui/test_ui_project_settings.py",),
            "a tab session read while opening answered after another connection changed it"),
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
    stale = [p.name for p in chosen if (ROOT / p.file).read_text(encoding="utf-8").count(p.old) != 1]
    if stale:  # checked before any run: a stale entry would otherwise stop the check halfway
        raise SystemExit(f"the text to replace is not in the file exactly once — update: {', '.join(stale)}")
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
