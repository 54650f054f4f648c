"""The six trainers side by side on the shared corpora, through the real CLI.

    python bench/bench_frontier.py [--vocab 8000 32000] [--models bpe superbpe parity-hybrid ...]
                                   [--out DIR] [--stop-after SECONDS] [--table-only]

The shared corpora (``../shared/corpora/*.txt``, ~9 MB, four languages) are cut by language into
training text and held-out text: every tenth line of each corpus is held out, the two English
corpora go into one ``en`` file. Files are named by language (``de_train.txt``, ``de_heldout.txt``)
because parity-aware BPE labels its languages from file names.

**The parallel development set.** The shared corpora are not translations of each other, and
parity-aware BPE needs a parallel set (it serves the language whose development text takes the
most tokens for the same content). This script builds one from vim's message catalogs where the
machine has them (``/usr/share/vim/vim90/lang/{de,ru,zh_CN.UTF-8}/LC_MESSAGES/vim.mo``: each message
that all three translate, its English original and the three translations, one a line; ~2,750 lines,
~100 KB a language — UI strings, another domain than the corpora), else ``--parallel-dev DIR``
(``<lang>_dev.txt`` for de, en, ru, zh, line-aligned). Every model is also measured on it:
"Gini (same content)" is the Gini of the tokens each language needs for it (``stats --parallel``).

``parity-hybrid`` is parity-aware BPE with its first V/2 merges global (``--parity-global-merges``:
the paper's hybrid; the number is ours).

Each model is trained by ``workbench train … --model M --vocab-size V --no-count-cache`` in its own
process under ``nice -n 5`` (every count cold, like for like: SuperBPE's own stage-2 count honours
``--no-count-cache`` too since issue 23's third pass — before, it used the cache whatever the flag,
so from the second run on its extra pass was warm while BPE's count was cold) with each model's own
defaults (BPE family: byte-level, GPT-2 split; WordPiece: BERT normalizer and split; Unigram:
SentencePiece's). Training CPU time is the user + system time of the process and every process it
waited for (``os.wait4``); peak memory is the largest sum of the RSS of the process tree, sampled
every 50 ms. Then ``workbench stats HELDOUT --tokenizer P --json`` measures the held-out text:
tokens, characters per token, Rényi efficiency (α 2.5, |V| = the declared vocabulary), Gini of
per-language token cost (tokens per character), and the share of characters lost to unknown tokens.

Results go to ``DIR/results.jsonl`` one line per run as it ends, so a run cut short (``--stop-after``:
start no new training after that many seconds) still leaves a table; ``--table-only`` prints it
again. Running the script again adds a round: the table shows the median CPU time and peak memory
of the rounds (the token counts are the same every round). Not a test: it prints a markdown table for docs/frontier.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT.parent / "shared" / "corpora"  # as the tests find them: beside the checkout
WORKBENCH = Path(sys.executable).with_name("workbench")
MODELS = ("bpe", "superbpe", "parity-bpe", "parity-hybrid", "pickybpe", "wordpiece", "unigram")
LABELS = {
    "bpe": "BPE",
    "superbpe": "SuperBPE (t 0.9)",
    "parity-bpe": "parity-aware BPE",
    "parity-hybrid": "parity-aware BPE, hybrid (V/2 global)",
    "pickybpe": "PickyBPE (τ 0.9)",
    "wordpiece": "WordPiece",
    "unigram": "Unigram",
}


def split_corpora(out: Path) -> tuple[list[Path], list[Path]]:
    """Write <lang>_train.txt and <lang>_heldout.txt (every tenth line held out) per language."""
    train: dict[str, list[str]] = {}
    held: dict[str, list[str]] = {}
    for path in sorted(CORPORA.glob("*.txt")):
        lang = path.name.split("_", 1)[0]
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        for i, line in enumerate(lines):
            (held if i % 10 == 9 else train).setdefault(lang, []).append(line)
    data = out / "data"
    data.mkdir(parents=True, exist_ok=True)
    train_files: list[Path] = []
    held_files: list[Path] = []
    for lang in sorted(train):
        for kind, table, files in (("train", train, train_files), ("heldout", held, held_files)):
            p = data / f"{lang}_{kind}.txt"
            text = "".join(table[lang])
            if not text.endswith("\n"):
                text += "\n"
            if not p.exists() or p.read_text(encoding="utf-8") != text:
                p.write_text(text, encoding="utf-8")
            files.append(p)
    return train_files, held_files


VIM_LANG = "/usr/share/vim/vim90/lang/{}/LC_MESSAGES/vim.mo"


def parallel_dev(out: Path, given: Path | None) -> list[Path]:
    """de/en/ru/zh development files with the same content, one message a line (see the docstring)."""
    if given is not None:
        files = [given / f"{lang}_dev.txt" for lang in ("de", "en", "ru", "zh")]
        missing = [str(f) for f in files if not f.is_file()]
        if missing:
            raise SystemExit(f"--parallel-dev: missing {', '.join(missing)}")
        return files
    import gettext

    catalogs = {}
    for lang, folder in (("de", "de"), ("ru", "ru"), ("zh", "zh_CN.UTF-8")):
        try:
            with open(VIM_LANG.format(folder), "rb") as handle:
                catalogs[lang] = gettext.GNUTranslations(handle)._catalog  # type: ignore[attr-defined]
        except OSError:
            raise SystemExit("no parallel development set: vim's message catalogs are not on this machine; "
                             "give --parallel-dev DIR with de_dev.txt, en_dev.txt, ru_dev.txt, zh_dev.txt") from None
    keys = [k for k in catalogs["de"] if isinstance(k, str) and k.strip()
            and all(isinstance(catalogs[c].get(k), str) and catalogs[c][k].strip() for c in catalogs)]

    def one_line(text: str) -> str:
        return " ".join(text.split())

    data = out / "data"
    data.mkdir(parents=True, exist_ok=True)
    texts = {"en": [one_line(k) for k in keys], **{c: [one_line(catalogs[c][k]) for k in keys] for c in catalogs}}
    files = []
    for lang in ("de", "en", "ru", "zh"):
        path = data / f"{lang}_dev.txt"
        path.write_text("\n".join(texts[lang]) + "\n", encoding="utf-8")
        files.append(path)
    return files


def hybrid_global_merges(vocab: int) -> int:
    """The hybrid row's global merges: half the vocabulary (the paper leaves the number to the user)."""
    return vocab // 2


def train(model: str, vocab: int, train_files: list[Path], dev_files: list[Path], out: Path) -> dict:
    """Train one model in its own process tree; return its CPU seconds, wall seconds and peak RSS."""
    project = out / "projects" / f"{model}-{vocab}.tokproj"
    project.parent.mkdir(parents=True, exist_ok=True)
    if project.exists():
        project.unlink()
    family = "parity-bpe" if model == "parity-hybrid" else model
    cmd = ["nice", "-n", "5", str(WORKBENCH), "train", *map(str, train_files),
           "--project", str(project), "--model", family, "--vocab-size", str(vocab),
           "--name", f"{model}-{vocab}", "--no-count-cache", "--progress", "none", "--json"]
    if family == "parity-bpe":
        cmd += ["--parity-dev", ",".join(map(str, dev_files))]
    if model == "parity-hybrid":  # the paper's hybrid: plain BPE's first merges, then parity-driven ones
        cmd += ["--parity-global-merges", str(hybrid_global_merges(vocab))]
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = str(ROOT)
    log = open(out / f"train-{model}-{vocab}.log", "wb")
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    root = psutil.Process(proc.pid)
    peak = 0
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        try:
            tree = [root, *root.children(recursive=True)]
            rss = 0
            for p in tree:
                try:
                    rss += p.memory_info().rss
                except psutil.Error:
                    pass
            peak = max(peak, rss)
        except psutil.Error:
            pass
        time.sleep(0.05)
    proc.returncode = os.waitstatus_to_exitcode(status)
    log.close()
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{model} V {vocab} failed ({proc.returncode}): see {log.name}")
    return {"cpu_s": usage.ru_utime + usage.ru_stime, "wall_s": wall,
            "peak_mb": max(peak, usage.ru_maxrss * 1024) / 2**20, "project": str(project)}


def _stats_total(project: str, files: list[Path], *extra: str) -> dict:
    cmd = ["nice", "-n", "5", str(WORKBENCH), "stats", *map(str, files), "--tokenizer", project,
           "--no-cache", "--json", *extra]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    doc = json.loads(subprocess.run(cmd, check=True, capture_output=True, env=env, text=True).stdout)
    totals = doc["totals"]
    return totals[0] if isinstance(totals, list) else totals


def measure(project: str, held_files: list[Path], dev_files: list[Path]) -> dict:
    """The held-out text under one tokenizer (the stats total row), and the Gini of the tokens each
    language needs for the parallel development set's content."""
    row = _stats_total(project, held_files)
    same = _stats_total(project, dev_files, "--parallel")
    return {**{k: row.get(k) for k in ("tokens", "chars", "chars_per_token", "renyi_efficiency",
                                       "gini_language_cost", "chars_lost_to_unknown", "vocab_size")},
            "gini_parallel": same.get("gini_language_cost")}


def line_breaks(project: str, held_files: list[Path], out: Path) -> dict:
    """Tokens of the held-out lines that are nothing but line breaks, under the run's export.

    SuperBPE's stage 2 may join a line's final word or punctuation with its line break (``.\\n``),
    which GPT-2's split keeps apart: this separates that saving from the superwords proper.
    Encoded line by line with `tokenizers` from the run's ``tokenizer.json`` (the same ids).
    """
    from tokenizers import Tokenizer

    path = out / (Path(project).stem + ".json")
    path.unlink(missing_ok=True)  # export never overwrites a file
    subprocess.run(["nice", "-n", "5", str(WORKBENCH), "export", project, "--format", "hf", "--out", str(path)],
                   check=True, capture_output=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    tok = Tokenizer.from_file(str(path))
    tokens = breaks = 0
    for f in held_files:
        for enc in tok.encode_batch(f.read_text(encoding="utf-8").splitlines(keepends=True)):
            tokens += len(enc.tokens)
            breaks += sum(1 for t in enc.tokens if set(t) == {"Ċ"})
    return {"lb_tokens": tokens, "lb_breaks": breaks}


def superbpe_note(rows: list[dict]) -> str:
    """SuperBPE's saving against BPE, with and without the tokens that are only line breaks."""
    out = ["| V | BPE tokens | SuperBPE tokens | saving | line-break-only tokens BPE → SuperBPE "
           "| saving on the other tokens |", "|---:|---:|---:|---:|---:|---:|"]
    for vocab in sorted({r["vocab"] for r in rows}):
        b = next((r for r in rows if r["vocab"] == vocab and r["model"] == "bpe" and "lb_tokens" in r), None)
        s = next((r for r in rows if r["vocab"] == vocab and r["model"] == "superbpe" and "lb_tokens" in r), None)
        if b is None or s is None:
            continue
        rest_b, rest_s = b["lb_tokens"] - b["lb_breaks"], s["lb_tokens"] - s["lb_breaks"]
        out.append(f"| {vocab:,} | {b['lb_tokens']:,} | {s['lb_tokens']:,} "
                   f"| {(1 - s['lb_tokens'] / b['lb_tokens']) * 100:.1f} % | {b['lb_breaks']:,} → {s['lb_breaks']:,} "
                   f"| {(1 - rest_s / rest_b) * 100:.1f} % |")
    return "\n".join(out)


def table(rows: list[dict]) -> str:
    out = ["| V | model | held-out tokens | chars/token | tokens vs BPE | Rényi eff. (α 2.5) "
           "| Gini (lang. cost) | Gini (same content) | chars lost to unk | train CPU s | × BPE | peak MB |",
           "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    base = {r["vocab"]: r for r in rows if r["model"] == "bpe"}
    order = {m: i for i, m in enumerate(MODELS)}
    for r in sorted(rows, key=lambda r: (r["vocab"], order[r["model"]])):
        b = base.get(r["vocab"])
        vs = ("—" if b is None or r["model"] == "bpe"
              else f"{(r['tokens'] / b['tokens'] - 1) * 100:+.1f} %".replace("-", "−"))
        cpu_x = "—" if b is None else f"{r['cpu_s'] / b['cpu_s']:.2f}"
        lost = r.get("chars_lost_to_unknown") or 0.0
        same = "—" if r.get("gini_parallel") is None else f"{r['gini_parallel']:.4f}"
        out.append(
            f"| {r['vocab']:,} | {LABELS[r['model']]} | {r['tokens']:,} | {r['chars_per_token']:.3f} | {vs} "
            f"| {r['renyi_efficiency']:.4f} | {r['gini_language_cost']:.4f} | {same} | {lost * 100:.2f} % "
            f"| {r['cpu_s']:.1f} | {cpu_x} | {r['peak_mb']:.0f} |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vocab", type=int, nargs="+", default=[8000, 32000])
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    ap.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "bench_frontier")
    ap.add_argument("--stop-after", type=float, default=None, help="start no training after this many seconds")
    ap.add_argument("--table-only", action="store_true")
    ap.add_argument("--parallel-dev", type=Path, default=None,
                    help="a folder with de_dev.txt en_dev.txt ru_dev.txt zh_dev.txt (default: vim's catalogs)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    results = args.out / "results.jsonl"
    if not args.table_only:
        train_files, held_files = split_corpora(args.out)
        dev_files = parallel_dev(args.out, args.parallel_dev)
        begun = time.perf_counter()
        for vocab in args.vocab:
            for model in args.models:
                if args.stop_after is not None and time.perf_counter() - begun > args.stop_after:
                    print(f"skipped {model} V {vocab}: past --stop-after", file=sys.stderr)
                    continue
                cost = train(model, vocab, train_files, dev_files, args.out)
                row = {"model": model, "vocab": vocab, **cost, **measure(cost["project"], held_files, dev_files),
                       "load": os.getloadavg()}
                print(f"{model} V {vocab}: {row['cpu_s']:.1f} s CPU, {row['peak_mb']:.0f} MB, "
                      f"{row['tokens']} tokens, load {row['load'][0]:.1f}", file=sys.stderr, flush=True)
                with results.open("a", encoding="utf-8") as f:
                    f.write(json.dumps(row) + "\n")
    rounds: dict[tuple[str, int], list[dict]] = {}
    for line in results.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        rounds.setdefault((r["model"], r["vocab"]), []).append(r)
    rows: dict[tuple[str, int], dict] = {}
    for key, runs in rounds.items():  # tokens are the same each round; cost: the median of the rounds
        rows[key] = {**runs[-1], "rounds": len(runs), "cpu_s": statistics.median(r["cpu_s"] for r in runs),
                     "peak_mb": statistics.median(r["peak_mb"] for r in runs)}
        if len({r["tokens"] for r in runs}) > 1:
            print(f"note: {key} gave different token counts in different rounds", file=sys.stderr)
    _train, held_files = split_corpora(args.out)
    for r in rows.values():
        if r["model"] in ("bpe", "superbpe") and Path(r["project"]).exists():
            r.update(line_breaks(r["project"], held_files, args.out))
    print(table(list(rows.values())))
    print()
    print(superbpe_note(list(rows.values())))


if __name__ == "__main__":
    main()
