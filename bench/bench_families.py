"""WordPiece and Unigram training, whole process, against their anchors: CPU time and peak RSS ratios.

    python bench/bench_families.py [--family wordpiece unigram] [--corpus shared slice39]
                                   [--rounds 2] [--before DIR] [--pure] [--profile]

Each measurement is one child process timed from its start (imports, reading, counting, training,
storing) to its end; CPU time counts its own and its children's (counting may use a second process),
peak RSS is the larger of the two (``ru_maxrss``: the trainer's own peak); ``tree`` is the peak of
the summed RSS of the process tree, polled every 20 ms (the trainer and the store's writer process
at once); ``pss`` the peak of its summed PSS (proportional set size, ``/proc/PID/smaps_rollup``):
what the machine holds, where summed RSS counts twice the pages a forked child shares with its
parent — the counting worker forked on a corpus of 8 MB or more (the trainer counts the other share), and a child caught between
``fork`` and ``exec`` (the writer being started) shows the trainer's whole RSS again. Rounds are
interleaved (anchor, ours, anchor, ours …) and the medians are reported as ratios of the same run,
with the load average beside them.

* WordPiece: ``tokenizers``' ``WordPieceTrainer`` with one thread (``RAYON_NUM_THREADS=1``),
  ``BertNormalizer()`` with its defaults (uncased: lower-casing and accents stripped — our family's
  default ``bert-lower``; until issue 24's WordPiece round the anchor was the cased normalizer
  against our uncased run) and ``BertPreTokenizer``, ``train([file])`` — the same lines ours reads —
  against ``workbench.tasks.train.train_run`` (model ``wordpiece``, its defaults: frequency score,
  ``bert-lower``, the same five specials) into a fresh project, count cache off.
* Unigram: ``sentencepiece`` with ``num_threads=1`` and its defaults (``nmt_nfkc`` normalization,
  ``remove_extra_whitespaces``, ``character_coverage=0.9995``, ``max_sentencepiece_length=16``,
  seed size 1,000,000, shrinking factor 0.75, 2 EM sub-iterations) against ``train_run`` with the
  same settings (normalizer ``nmt-nfkc,spm-whitespace``, coverage 0.9995; the rest are our defaults
  and equal to its), from the file to the stored model.

Corpora: ``shared`` — the five files of ``../shared/corpora`` concatenated in name order (8.9 MB);
``slice39`` — the first 3.9 MB of that concatenation cut at a line end (German quotes, Shakespeare,
the Taylor Swift article and the start of the Russian fortunes); or the path of any text file. ``--before DIR`` runs our side a
second time with the package from ``DIR`` (a checkout of an earlier commit) and prints after ÷ before;
``--pure`` runs it once more with ``WORKBENCH_PURE=1`` (the pure-Python loops, not the C ones).
``--profile`` prints cProfile's top functions of our side instead. Not a test: timings never decide
pass/fail.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT.parent / "shared" / "corpora"
CACHE = Path(os.environ.get("TMPDIR", "/tmp")) / "workbench-bench"
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
VOCAB = {"wordpiece": 30000, "unigram": 8000}
SLICE_BYTES = 3_900_000


def corpus_file(name: str) -> Path:
    """The corpus as one file, made once (every contender reads the same bytes); a path to a text
    file is used as it is (text the team did not tune on)."""
    if name not in ("shared", "slice39") and Path(name).is_file():
        return Path(name).resolve()
    CACHE.mkdir(parents=True, exist_ok=True)
    out = CACHE / f"families-{name}.txt"
    if out.exists():
        return out
    data = b"".join(p.read_bytes() for p in sorted(CORPORA.glob("*.txt")))
    if name == "slice39":
        data = data[: data.rindex(b"\n", 0, SLICE_BYTES) + 1]
    elif name != "shared":
        raise SystemExit(f"unknown corpus {name}: use shared, slice39 or a text file's path")
    out.write_bytes(data)
    return out


def usage() -> tuple[float, float]:
    """(CPU seconds, peak RSS MB) of this process and its children."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
    return cpu, max(me.ru_maxrss, kids.ru_maxrss) / 1024


# ---- one measurement each (in a child process) -------------------------------------------------------
def hf_wordpiece(path: Path, vocab: int) -> dict:
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer()  # uncased, as our default (bert-lower)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(vocab_size=vocab, special_tokens=SPECIALS, show_progress=False)
    tok.train([str(path)], trainer)
    with tempfile.TemporaryDirectory() as folder:
        tok.save(str(Path(folder) / "tokenizer.json"))
    return {"vocab": tok.get_vocab_size()}


def spm_unigram(path: Path, vocab: int) -> dict:
    import sentencepiece as spm

    with tempfile.TemporaryDirectory() as folder:
        spm.SentencePieceTrainer.train(input=str(path), model_prefix=str(Path(folder) / "m"), vocab_size=vocab,
                                       model_type="unigram", num_threads=1, minloglevel=2)
        size = spm.SentencePieceProcessor(model_file=str(Path(folder) / "m.model")).get_piece_size()
    return {"vocab": size}


def _spec(path: Path, family: str, vocab: int):
    from workbench.tasks.spec import RunSpec
    from workbench.tasks.train import resolve_files

    files = tuple(resolve_files([str(path)]))
    if family == "unigram":
        return RunSpec(files=files, model="unigram", vocab_size=vocab, normalizer=("nmt-nfkc", "spm-whitespace"),
                       options={"character_coverage": 0.9995})
    return RunSpec(files=files, model="wordpiece", vocab_size=vocab, special_tokens=tuple(SPECIALS))


def ours(path: Path, family: str, vocab: int) -> dict:
    from workbench.tasks.train import train_run

    with tempfile.TemporaryDirectory() as folder:
        run_id, status = train_run(_spec(path, family, vocab), Path(folder) / "bench.tokproj", count_cache=False)
    if status != "finished":
        raise SystemExit(f"our {family} run ended {status}")
    return {"run": run_id}


def profile(path: Path, family: str, vocab: int) -> None:
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    ours(path, family, vocab)
    profiler.disable()
    stats = pstats.Stats(profiler, stream=sys.stderr)
    stats.sort_stats("tottime").print_stats(25)
    stats.sort_stats("cumulative").print_stats(30)


def _pss(pid: int) -> int:
    """The process's proportional set size in bytes (0 when it is gone or the kernel lacks smaps_rollup)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def run_child(kind: str, family: str, corpus: str, vocab: int, root: Path = ROOT, extra_env: dict | None = None
              ) -> dict:
    """One measurement; besides the child's own figures, ``tree_mb``: the peak of the summed RSS of
    its process tree, polled every 20 ms (as bench_bpe_train.py) — the trainer and the store's
    writer process together. ``peak_mb`` (``ru_maxrss``) cannot say that: a child's ``ru_maxrss``
    starts from its parent's resident size when it was spawned (Linux keeps the high-water mark
    across exec), so it never shows the writer's own ~15 MB, only the trainer's peak."""
    import psutil

    env = dict(os.environ, RAYON_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false", PYTHONPATH=str(root),
               **(extra_env or {}))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen([sys.executable, __file__, "--child", kind, family, corpus, str(vocab)], env=env,
                                stdout=out, stderr=err, text=True, cwd=root)
        ps, tree, pss = psutil.Process(proc.pid), 0, 0
        while proc.poll() is None:
            try:
                kids = ps.children(recursive=True)
                tree = max(tree, ps.memory_info().rss + sum(c.memory_info().rss for c in kids))
                pss = max(pss, _pss(proc.pid) + sum(_pss(c.pid) for c in kids))
            except psutil.Error:
                pass
            time.sleep(0.02)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise SystemExit(f"{kind} {family} on {corpus} failed:\n{err.read()[-3000:]}")
        result = json.loads(out.read().strip().splitlines()[-1])
    result["wall_s"] = time.perf_counter() - t0
    result["tree_mb"] = max(tree / 2**20, result["peak_mb"])
    result["pss_mb"] = pss / 2**20
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--family", nargs="+", default=["wordpiece", "unigram"], choices=sorted(VOCAB))
    parser.add_argument("--corpus", nargs="+", default=["shared", "slice39"])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--vocab", type=int, help="override the vocabulary size (default: wordpiece "
                        f"{VOCAB['wordpiece']:,}, unigram {VOCAB['unigram']:,})")
    parser.add_argument("--before", type=Path, help="a checkout whose workbench package is measured too")
    parser.add_argument("--pure", action="store_true", help="also run ours with WORKBENCH_PURE=1 (no C loops)")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, family, corpus, vocab = args.child
        path = corpus_file(corpus)
        if kind == "anchor":
            result = hf_wordpiece(path, int(vocab)) if family == "wordpiece" else spm_unigram(path, int(vocab))
        else:
            result = ours(path, family, int(vocab))
        result["cpu_s"], result["peak_mb"] = usage()
        print(json.dumps(result))
        return
    if args.profile:
        for family in args.family:
            for corpus in args.corpus:
                print(f"== profile: {family} on {corpus} ==", file=sys.stderr)
                profile(corpus_file(corpus), family, args.vocab or VOCAB[family])
        return
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores; load {os.getloadavg()}; anchors with one thread")
    contenders = [("anchor", ROOT), ("ours", ROOT)] + ([("pure", ROOT)] if args.pure else []) \
        + ([("before", args.before.resolve())] if args.before else [])
    for family in args.family:
        vocab = args.vocab or VOCAB[family]
        for corpus in args.corpus:
            size = corpus_file(corpus).stat().st_size / 1e6
            rows: dict[str, list[dict]] = {name: [] for name, _root in contenders}
            for _ in range(args.rounds):
                for name, root in contenders:
                    row = run_child("anchor" if name == "anchor" else "ours", family, corpus, vocab, root,
                                    {"WORKBENCH_PURE": "1"} if name == "pure" else None)
                    row["load"] = os.getloadavg()[0]
                    rows[name].append(row)
            med = {name: {k: statistics.median(r[k] for r in rs)
                          for k in ("cpu_s", "peak_mb", "tree_mb", "pss_mb", "wall_s")}
                   for name, rs in rows.items()}
            anchor = "tokenizers WordPieceTrainer" if family == "wordpiece" else "sentencepiece"
            loads = ", ".join(f"{r['load']:.1f}" for rs in rows.values() for r in rs)
            print(f"\n-- {family} V {vocab:,} on {corpus} ({size:.1f} MB); load during the rounds: {loads} --")
            for name, _root in contenders:
                m = med[name]
                label = anchor if name == "anchor" else f"workbench ({name})"
                print(f"{label:<30} CPU {m['cpu_s']:7.2f} s ({m['cpu_s'] / med['anchor']['cpu_s']:.2f}×)  "
                      f"peak {m['peak_mb']:6.0f} MB ({m['peak_mb'] / med['anchor']['peak_mb']:.2f}×)  "
                      f"tree {m['tree_mb']:4.0f} MB ({m['tree_mb'] / med['anchor']['tree_mb']:.2f}×)  "
                      f"pss {m['pss_mb']:4.0f} MB ({m['pss_mb'] / max(med['anchor']['pss_mb'], 1e-9):.2f}×)  "
                      f"wall {m['wall_s']:6.2f} s   rounds CPU: "
                      + ", ".join(f"{r['cpu_s']:.2f}" for r in rows[name])
                      + "; tree: " + ", ".join(f"{r['tree_mb']:.0f}" for r in rows[name]))
            if args.before:
                print(f"after ÷ before: CPU {med['ours']['cpu_s'] / med['before']['cpu_s']:.2f}×, "
                      f"peak {med['ours']['peak_mb'] / med['before']['peak_mb']:.2f}×")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
