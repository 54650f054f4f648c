"""Vocabulary-size sweep benchmark: our sweep against doing the same with ``tokenizers``, as a ratio.

    python bench/bench_sweep.py [--model bpe|wordpiece|unigram] [--merges 32000] [--vocab-size 8000]
                                [--points 16] [--threads 1]

Set-up (not timed), by ``--model``:

* ``bpe`` (default): a byte-level BPE with ``--merges`` merges is trained by Hugging Face
  ``tokenizers`` on the shared corpora (8.9 MB, GPT-2 pre-tokenizer) and saved as tokenizer.json;
  the workbench imports that file, so both sides use the very same merges.
* ``wordpiece``: the workbench trains a WordPiece run (BERT normalizer and pre-tokenizer) to
  ``--vocab-size`` on the corpora; both sides sweep its first k merges.
* ``unigram``: the workbench trains a Unigram run to ``--vocab-size`` on the corpora (one sequence a
  line), keeping its pruning checkpoints; the points are the cuts of the final model and the
  pruning rounds.

The trained run is pickled next to the cache, so a second benchmark run skips the training.

* **ours** — :func:`workbench.tasks.compare.sweep_files` at ``--points`` vocabulary sizes over the
  five corpus files (streamed, no cache), then the same call again answered from the cache.
* **anchor** — what a user would do without the workbench: for each of the same points, build a
  ``tokenizers`` tokenizer of that vocabulary and encode the same files with ``encode_batch``,
  summing the tokens. BPE: the first k merges, the text in ~256 KB chunks cut where the GPT-2
  pattern cannot notice. WordPiece: the run's tokenizer.json with the vocabulary limited to the
  pieces made by the first k merges, in the same chunks cut at line ends. Unigram: each point's
  pieces and scores as a tokenizer.json, each line one sequence.
  ``--threads`` sets ``RAYON_NUM_THREADS`` (1 = the same
  single core our pure-Python sweep gets).

Each side runs in its own process, so its peak memory (ru_maxrss) is its own. The token counts of
the two sides are compared point by point (they must be equal for BPE and WordPiece: same
vocabulary, same text; Unigram may differ on a few near ties, where ``tokenizers`` sums scores in
double per word and the workbench, like SentencePiece, in float32 over the line).
Not a test: timings never decide pass/fail.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPORA = sorted((ROOT.parent / "shared" / "corpora").glob("*.txt"))
CACHE = Path(os.environ.get("TMPDIR", "/tmp")) / "workbench-bench"


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_s() -> float:
    """User + system CPU seconds of this process: steadier than wall time on a shared machine."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def tokenizer_json(merges: int) -> Path:
    """A byte-level BPE with ``merges`` merges trained by ``tokenizers`` on the corpora (cached)."""
    out = CACHE / f"sweep-bpe-{merges}.json"
    if out.exists():
        return out
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    CACHE.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    trainer = trainers.BpeTrainer(vocab_size=256 + merges, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False, min_frequency=1)
    tok.train([str(p) for p in CORPORA], trainer)
    tok.save(str(out))
    return out


def trained_run(model: str, vocab_size: int) -> Path:
    """A WordPiece or Unigram run trained by the workbench on the corpora, pickled (cached):
    ``(tokenizer, pruning checkpoints)``."""
    import pickle

    out = CACHE / f"sweep-{model}-{vocab_size}.pickle"
    if out.exists():
        return out
    from workbench.core import unigram, wordpiece
    from workbench.core.count import count_pretokens

    CACHE.mkdir(parents=True, exist_ok=True)
    texts = [p.read_text(encoding="utf-8") for p in CORPORA]
    if model == "wordpiece":
        counts = count_pretokens(texts, pretokenizer="bert", normalizer=("bert",))
        tok, _ = wordpiece.train(counts, wordpiece.WordPieceConfig(vocab_size=vocab_size))
        run: tuple = (tok, ())
    else:
        lines = [line for text in texts for line in text.splitlines()]
        trainer = unigram.UnigramTrainer(unigram.count_spm_words(lines), unigram.UnigramConfig(vocab_size=vocab_size))
        for _event in trainer.run():
            pass
        run = (trainer.tokenizer(), tuple(trainer.checkpoints))
    out.write_bytes(pickle.dumps(run))
    return out


def load_run(path: Path) -> tuple:
    import pickle

    return pickle.loads(path.read_bytes())


def steps(total: int, points: int) -> list[int]:
    from workbench.core.vocab_sweep import sweep_steps

    return sweep_steps(total, points)


def child_ours(path: Path, points: int) -> dict:
    from workbench.corpus import open_source
    from workbench.formats import load_tokenizer_file
    from workbench.tasks.compare import ResultCache, sweep_files

    tok, pruning = (load_tokenizer_file(path), ()) if path.suffix == ".json" else load_run(path)
    sources = [open_source(p) for p in CORPORA]
    cache_dir = CACHE / f"sweep-cache-{os.getpid()}"
    cache = ResultCache(cache_dir)
    t0, c0 = time.perf_counter(), cpu_s()
    result = sweep_files(tok, sources, points=points, pruning=pruning, cache=cache)
    seconds, cpu = time.perf_counter() - t0, cpu_s() - c0
    peak = peak_mb()
    t1 = time.perf_counter()
    again = sweep_files(tok, sources, points=points, pruning=pruning, cache=cache)
    cached = time.perf_counter() - t1
    assert again is not None and result is not None
    assert [p.tokens for p in again.points] == [p.tokens for p in result.points]
    return {"seconds": seconds, "cpu": cpu, "cached_seconds": cached, "peak_mb": peak, "merges": len(tok.merges),
            "steps": [p.step for p in result.points], "tokens": [p.tokens for p in result.points],
            "sizes": [p.vocab_size for p in result.points], "kinds": [p.kind for p in result.points],
            "knee": result.as_dict()["knee_vocab_size"]}


def child_anchor(path: Path, points: int) -> dict:
    from tokenizers import Tokenizer

    doc = json.loads(path.read_text(encoding="utf-8"))
    all_merges = doc["model"]["merges"]
    from workbench.core.count import chunks_for

    # The exact bytes (no newline translation), cut only where the GPT-2 pattern cannot notice, so
    # both sides pre-tokenize the very same text.
    texts = []
    for p in CORPORA:
        with open(p, encoding="utf-8", newline="") as handle:
            texts.append(list(chunks_for("gpt2", [handle.read()], 1 << 18)))
    t0, c0 = time.perf_counter(), cpu_s()
    tokens = []
    ks = steps(len(all_merges), points)
    from tokenizers import pre_tokenizers

    full_vocab = doc["model"]["vocab"]
    alphabet = set(pre_tokenizers.ByteLevel.alphabet())
    for k in ks:
        # The first k merges and the vocabulary they reach: the 256 byte symbols plus each merge's result.
        merges = all_merges[:k]
        keep = alphabet | {(m[0] + m[1]) if isinstance(m, list) else m.replace(" ", "", 1) for m in merges}
        doc["model"]["merges"] = merges
        doc["model"]["vocab"] = {p: i for p, i in full_vocab.items() if p in keep}
        tok = Tokenizer.from_str(json.dumps(doc))
        total = 0
        for chunks in texts:
            total += sum(len(e.ids) for e in tok.encode_batch(chunks, add_special_tokens=False))
        tokens.append(total)
    seconds, cpu = time.perf_counter() - t0, cpu_s() - c0
    return {"seconds": seconds, "cpu": cpu, "peak_mb": peak_mb(), "steps": ks, "tokens": tokens}


def _line_chunks(size: int = 1 << 18) -> list[list[str]]:
    """Each corpus file in chunks of about ``size`` characters cut at line ends (exact text)."""
    out = []
    for p in CORPORA:
        with open(p, encoding="utf-8", newline="") as handle:
            text = handle.read()
        chunks, start = [], 0
        while start < len(text):
            end = text.find("\n", start + size)
            end = len(text) if end < 0 else end + 1
            chunks.append(text[start:end])
            start = end
        out.append(chunks)
    return out


def child_anchor_wordpiece(path: Path, points: int) -> dict:
    from tokenizers import Tokenizer

    from workbench.core.vocab_sweep import wordpiece_plan
    from workbench.formats.hf_json import render_hf_json

    tok, _pruning = load_run(path)
    doc = json.loads(render_hf_json(tok)[0])
    plan, born = wordpiece_plan(tok, points)
    full_vocab = doc["model"]["vocab"]
    texts = _line_chunks()
    t0, c0 = time.perf_counter(), cpu_s()
    tokens = []
    for k, _size in plan:
        doc["model"]["vocab"] = {piece: i for piece, i in full_vocab.items() if born[i] < k}
        hf = Tokenizer.from_str(json.dumps(doc))
        tokens.append(sum(len(e.ids) for chunks in texts
                          for e in hf.encode_batch(chunks, add_special_tokens=False)))
    seconds, cpu = time.perf_counter() - t0, cpu_s() - c0
    return {"seconds": seconds, "cpu": cpu, "peak_mb": peak_mb(), "steps": [k for k, _v in plan], "tokens": tokens}


def child_anchor_unigram(path: Path, points: int) -> dict:
    from tokenizers import Tokenizer

    from workbench.core.vocab_sweep import unigram_checkpoints
    from workbench.formats.hf_json import render_hf_json

    tok, pruning = load_run(path)
    docs = [render_hf_json(cp.encoder.tok)[0] for cp in unigram_checkpoints(pruning)(tok, points)]
    lines = []
    for p in CORPORA:
        with open(p, encoding="utf-8", newline="") as handle:
            lines.append(handle.read().split("\n"))
    t0, c0 = time.perf_counter(), cpu_s()
    tokens = []
    for doc in docs:
        hf = Tokenizer.from_str(doc.decode("utf-8"))
        tokens.append(sum(len(e.ids) for file_lines in lines
                          for e in hf.encode_batch(file_lines, add_special_tokens=False)))
    seconds, cpu = time.perf_counter() - t0, cpu_s() - c0
    return {"seconds": seconds, "cpu": cpu, "peak_mb": peak_mb(), "tokens": tokens}


def run_child(kind: str, path: Path, points: int, threads: int) -> dict:
    env = dict(os.environ, RAYON_NUM_THREADS=str(threads), PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, __file__, "--child", kind, "--path", str(path), "--points", str(points)],
                         capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{kind} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=["bpe", "wordpiece", "unigram"], default="bpe")
    parser.add_argument("--merges", type=int, default=32000, help="BPE")
    parser.add_argument("--vocab-size", type=int, default=8000, help="WordPiece and Unigram")
    parser.add_argument("--points", type=int, default=16)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--child", choices=["ours", "anchor", "anchor-wordpiece", "anchor-unigram"])
    parser.add_argument("--path", type=Path)
    args = parser.parse_args()
    if args.child:
        fn = {"ours": child_ours, "anchor": child_anchor, "anchor-wordpiece": child_anchor_wordpiece,
              "anchor-unigram": child_anchor_unigram}[args.child]
        print(json.dumps(fn(args.path, args.points)))
        return
    size = sum(p.stat().st_size for p in CORPORA)
    t0 = time.perf_counter()
    if args.model == "bpe":
        path, what, anchor_kind = tokenizer_json(args.merges), f"BPE with {args.merges} merges", "anchor"
    else:
        path, what = trained_run(args.model, args.vocab_size), f"{args.model} run of {args.vocab_size} pieces"
        anchor_kind = f"anchor-{args.model}"
    print(f"corpus: {len(CORPORA)} files, {size / 1e6:.1f} MB; {what} "
          f"({time.perf_counter() - t0:.0f} s to train/load); {args.points} points; anchor threads {args.threads}")
    anchor = run_child(anchor_kind, path, args.points, args.threads)
    ours = run_child("ours", path, args.points, args.threads)
    same = ours["tokens"] == anchor["tokens"]
    print(f"ours   : {ours['seconds']:7.1f} s wall, {ours['cpu']:7.1f} s CPU, peak {ours['peak_mb']:6.0f} MB "
          f"(from the cache: {ours['cached_seconds']:.2f} s)")
    print(f"anchor : {anchor['seconds']:7.1f} s wall, {anchor['cpu']:7.1f} s CPU, peak {anchor['peak_mb']:6.0f} MB "
          f"(tokenizers, {len(ours['steps'])} truncated tokenizers × {size / 1e6:.1f} MB)")
    print(f"ratio  : wall ours/anchor {ours['seconds'] / anchor['seconds']:.2f}×, "
          f"CPU {ours['cpu'] / anchor['cpu']:.2f}×, "
          f"peak memory {ours['peak_mb'] / anchor['peak_mb']:.2f}×; token counts equal at every point: {same}")
    if not same:
        for k, a, b in zip(ours["steps"], ours["tokens"], anchor["tokens"]):
            if a != b:
                print(f"  k={k}: ours {a} anchor {b} ({(a - b) / b:+.2e})")
    print(f"knee (1 % chars/token per 1k entries): |V| = {ours['knee']}")
    print(json.dumps({"ours": ours, "anchor": anchor}))


if __name__ == "__main__":
    main()
