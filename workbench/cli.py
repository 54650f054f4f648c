"""The headless commands: ``workbench train | runs | encode | decode | export | import | stats | sweep``.

Thin over the core: parse arguments, call the same functions the window calls, print results to
stdout (``--json`` makes them machine-readable) and progress to stderr. Every :class:`WorkbenchError`
becomes one line on stderr and exit status 2; nothing here prints a traceback for bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Sequence

from workbench.errors import WorkbenchError

EXPORT_FORMATS = ("hf", "gpt2", "tiktoken", "wordpiece", "spm-vocab", "merges-csv")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="workbench",
        description="Tokenizer Workbench: train, inspect and export BPE tokenizers. "
        "Without a command it opens the window (on a bundled demo corpus when nothing is given).",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    train = sub.add_parser("train", help="train a BPE tokenizer on corpus files and store the run in a project")
    train.add_argument("files", nargs="+", metavar="FILES", help="corpus files or folders")
    train.add_argument("--project", required=True, help="project file (*.tokproj), created if missing")
    size = train.add_argument_group("size (one or both)")
    size.add_argument("--vocab-size", type=int, help="target vocabulary size |V| (initial symbols + merges)")
    size.add_argument("--merges", type=int, help="number of merges")
    train.add_argument("--model", default="bpe", choices=["bpe"], help="model (BPE; WordPiece and Unigram later)")
    train.add_argument("--units", default="bytes", choices=["bytes", "chars"])
    train.add_argument("--end-of-word", default="", metavar="MARKER", help='end-of-word marker for --units chars, e.g. "</w>" ("" = none)')
    train.add_argument("--pretokenizer", default="gpt2", metavar="PRESET|REGEX",
                       help="gpt2, cl100k, o200k, whitespace, digits, none, metaspace, or a regular expression")
    train.add_argument("--normalize", default="none", metavar="LIST", help="none, nfc, nfkc, lower, strip-accents; comma-separated to combine")
    train.add_argument("--min-frequency", type=int, default=1, metavar="K", help="stop when no pair occurs K times")
    train.add_argument("--special", action="append", default=[], metavar="TOKEN", help="special token (repeatable); reserves the first ids")
    train.add_argument("--tie-break", default="first-seen", choices=["first-seen", "hf"])
    train.add_argument("--name", default="", help="run name")
    train.add_argument("--encoding", help="text encoding of the corpus files (default UTF-8)")
    train.add_argument("--field", help="JSONL field holding the text (dots for nested keys)")
    train.add_argument("--column", help="CSV/TSV column holding the text")
    train.add_argument("--progress", choices=["text", "json", "none"], default="text",
                       help="progress on stderr: human lines, JSON lines (for the window), or nothing")
    train.add_argument("--json", action="store_true", help="print the result as JSON")

    runs = sub.add_parser("runs", help="list the runs of a project")
    runs.add_argument("project")
    runs.add_argument("--json", action="store_true")

    enc = sub.add_parser("encode", help="encode text to ids")
    enc.add_argument("--tokenizer", required=True, metavar="SRC", help="P.tokproj[#RUN], tokenizer.json, .tiktoken or vocab.json")
    src = enc.add_mutually_exclusive_group(required=True)
    src.add_argument("--text")
    src.add_argument("--file")
    enc.add_argument("--allow-special", action="store_true", help="recognise special tokens in the text")
    enc.add_argument("--greedy", action="store_true", help="greedy longest match instead of BPE merges")
    enc.add_argument("--pattern", help="pre-tokenizer for a .tiktoken file that is not a known public one")
    enc.add_argument("--json", action="store_true", help='print {"ids": [...], "tokens": [...], "count": N}')

    dec = sub.add_parser("decode", help="decode ids to text")
    dec.add_argument("--tokenizer", required=True, metavar="SRC")
    dec.add_argument("--ids", required=True, help="comma- or space-separated ids, or a JSON list")
    dec.add_argument("--pattern", help=argparse.SUPPRESS)

    exp = sub.add_parser("export", help="export a run in a format other tools load as is")
    exp.add_argument("project")
    exp.add_argument("--run", type=int, help="run id (default: the latest finished run)")
    exp.add_argument("--format", required=True, choices=EXPORT_FORMATS)
    exp.add_argument("--out", required=True, help="output file (gpt2: a folder)")
    exp.add_argument("--force", action="store_true", help="replace an existing output (atomically)")
    exp.add_argument("--legacy-merges", action="store_true", help='hf: write merges as "a b" strings for older readers')

    imp = sub.add_parser("import", help="import a tokenizer file into a project as a reference")
    imp.add_argument("path")
    imp.add_argument("--project", required=True)
    imp.add_argument("--name", default="")
    imp.add_argument("--pattern", help="pre-tokenizer for a .tiktoken file that is not a known public one")

    stats = sub.add_parser("stats", help="corpus statistics, and per tokenizer: tokens, compression, fertility, "
                                          "L², unknown rate, vocabulary use, V×d, fairness per language")
    stats.add_argument("files", nargs="+")
    stats.add_argument("--tokenizer", action="append", default=[], metavar="SRC", help="repeatable")
    stats.add_argument("--language", action="append", default=[], metavar="FILE=LANG",
                       help="the language of a file (default: its dominant script); repeatable")
    stats.add_argument("--baseline-language", metavar="LANG", help="report tokens per language relative to LANG")
    stats.add_argument("--parallel", action="store_true",
                       help="the files are translations of each other: the ratio is the tokenization premium")
    stats.add_argument("--d", type=int, default=768, metavar="D", help="embedding width for V×d (default 768)")
    stats.add_argument("--no-cache", action="store_true", help="neither read nor write the metrics cache")
    stats.add_argument("--json", action="store_true")

    swp = sub.add_parser("sweep", help="vocabulary-size sweep of a run over held-out files")
    swp.add_argument("tokenizer", metavar="P.tokproj[#RUN]", help="a project (latest run), a run, or another SRC with merges")
    swp.add_argument("files", nargs="+", metavar="FILES", help="held-out text")
    swp.add_argument("--points", type=int, default=16, metavar="N", help="vocabulary sizes to measure (default 16)")
    swp.add_argument("--d", type=int, default=768, metavar="D", help="embedding width for V×d (default 768)")
    swp.add_argument("--threshold", type=float, default=0.01, metavar="X",
                     help="knee: gain in chars/token per 1k entries below X (default 0.01 = 1%%)")
    swp.add_argument("--no-cache", action="store_true", help="neither read nor write the metrics cache")
    out = swp.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true")
    out.add_argument("--csv", action="store_true")
    return parser


# ---- commands ------------------------------------------------------------------------------------
def cmd_train(args: argparse.Namespace) -> int:
    from workbench.core.bpe import TrainConfig
    from workbench.core.normalize import parse_normalizer
    from workbench.core.pretokenize import make_pretokenizer
    from workbench.tasks.train import train_into_project

    if args.vocab_size is None and args.merges is None:
        raise WorkbenchError("say how far to train: --vocab-size N or --merges N")
    for flag, value in (("--vocab-size", args.vocab_size), ("--merges", args.merges)):
        if value is not None and value < 0:
            raise WorkbenchError(f"{flag} must be a positive number, not {value}")
    if args.end_of_word and args.units != "chars":
        raise WorkbenchError("--end-of-word needs --units chars")
    minimum = 256 + len(set(args.special))
    if args.units == "bytes" and args.vocab_size is not None and args.vocab_size < minimum:
        raise WorkbenchError(f"--vocab-size {args.vocab_size} is below the initial vocabulary of {minimum} "
                             f"(256 bytes{' + specials' if args.special else ''}): choose at least {minimum}")
    pre = make_pretokenizer(args.pretokenizer)
    config = TrainConfig(
        units=args.units, vocab_size=args.vocab_size, merges=args.merges, min_frequency=args.min_frequency,
        special_tokens=tuple(args.special), end_of_word=args.end_of_word, tie_break=args.tie_break,
        pretokenizer=pre.spec(), normalizer=parse_normalizer(args.normalize),
    )
    stop = {"flag": False}

    def request_stop(_signum, _frame) -> None:
        stop["flag"] = True

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    reporter = _Reporter(args.progress)
    t0 = time.monotonic()
    run_id, status = train_into_project(
        args.files, args.project, config, name=args.name, report=reporter,
        should_stop=lambda: stop["flag"], encoding=args.encoding, field=args.field, column=args.column,
    )
    if run_id is None:
        if args.json:
            print(json.dumps({"run_id": None, "status": status, "project": str(args.project)}))
        print("workbench train: cancelled while reading the corpus; nothing was stored", file=sys.stderr)
        return 3
    from workbench.store import ProjectStore

    with ProjectStore.open(args.project, readonly=True) as store:
        run = store.run(run_id)
    result = {"run_id": run_id, "status": status, "merges": run.merge_count, "vocab_size": run.vocab_size,
              "project": str(args.project), "seconds": round(time.monotonic() - t0, 3)}
    if args.json:
        print(json.dumps(result))
    else:
        print(f"run {run_id} {status}: {run.merge_count} merges, vocabulary {run.vocab_size} "
              f"({result['seconds']:.1f} s) in {args.project}")
    return 0 if status == "finished" else 3


class _Reporter:
    """Progress on stderr: a human line (rewritten in place on a terminal) or JSON lines."""

    def __init__(self, mode: str):
        self.mode = mode
        self.tty = sys.stderr.isatty()
        self.last_line = 0.0

    def __call__(self, progress) -> None:
        if self.mode == "none":
            return
        if self.mode == "json":
            sys.stderr.write(json.dumps(progress.as_dict()) + "\n")
            sys.stderr.flush()
            return
        now = time.monotonic()
        if not self.tty and now - self.last_line < 2.0 and progress.event not in ("started", "finished"):
            return
        self.last_line = now
        if progress.event == "reading":
            pct = 100.0 * progress.bytes_read / max(progress.bytes_total, 1)
            line = f"reading corpus: {pct:5.1f}% of {progress.bytes_total / 1e6:.1f} MB"
        elif progress.event == "started":
            line = f"run {progress.run_id}: training {progress.target} merges"
        elif progress.event == "merges":
            eta = f", ETA {progress.eta_s:.0f} s" if progress.eta_s is not None else ""
            line = (f"merge {progress.step}/{progress.target}  vocab {progress.vocab_size}  "
                    f"{progress.merges_per_s:.0f} merges/s{eta}")
        else:
            line = f"run {progress.run_id} {progress.status}"
        if self.tty:
            sys.stderr.write("\r\033[K" + line + ("\n" if progress.event == "finished" else ""))
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()


def cmd_runs(args: argparse.Namespace) -> int:
    from workbench.store import ProjectStore

    with ProjectStore.open(_existing(args.project), readonly=True) as store:
        runs = store.runs()
    if args.json:
        print(json.dumps([_run_dict(r) for r in runs], indent=None))
        return 0
    if not runs:
        print(f"{args.project}: no runs yet")
        return 0
    print(f"{'id':>4}  {'status':<11} {'vocab':>7} {'merges':>7}  {'started':<19}  name / settings")
    for r in runs:
        s = r.settings
        summary = f"{s.get('units', '?')}, {s.get('pretokenizer', '?')}, tie-break {s.get('tie_break', '?')}"
        print(f"{r.id:>4}  {r.status:<11} {r.vocab_size:>7} {r.merge_count:>7}  {_when(r.started):<19}  {r.name} ({summary})")
    return 0


def _run_dict(r) -> dict:
    return {"id": r.id, "name": r.name, "status": r.status, "settings": r.settings, "vocab_size": r.vocab_size,
            "merges": r.merge_count, "started": r.started, "ended": r.ended, "timings": r.timings, "error": r.error}


def _when(value) -> str:
    if value is None:
        return ""
    if isinstance(value, (int, float)):
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(value))
    return str(value)[:19]


def cmd_encode(args: argparse.Namespace) -> int:
    from workbench.core.encoder import Encoder
    from workbench.tasks.sources import load_tokenizer

    tokenizer = load_tokenizer(args.tokenizer, pattern=args.pattern)
    if args.file is not None:
        text = _read_text(args.file)
    else:
        text = args.text
    encoder = Encoder(tokenizer, greedy=args.greedy)
    ids = encoder.encode(text, allow_special=args.allow_special)
    if args.json:
        tokens = [tokenizer.piece_text(i) for i in ids]
        print(json.dumps({"ids": ids, "tokens": tokens, "count": len(ids)}, ensure_ascii=False))
    else:
        print(" ".join(map(str, ids)))
    return 0


def _read_text(path: str) -> str:
    p = Path(path)
    if p.is_dir():
        raise WorkbenchError(f"{path}: is a folder; --file takes one text file")
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise WorkbenchError(f"{path}: no such file") from None
    except OSError as exc:
        raise WorkbenchError(f"{path}: cannot read it ({exc.strerror})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise WorkbenchError(f"{path}:{line}: not valid UTF-8 (byte {exc.start}); convert the file to UTF-8") from None


def parse_ids(text: str) -> list[int]:
    """``"1,2,3"``, ``"1 2 3"`` or ``"[1, 2, 3]"`` → ids (the inspector's decode box rules)."""
    from workbench.core.display import parse_ids as parse

    try:
        ids = parse(text)
    except WorkbenchError as exc:
        raise WorkbenchError(f"--ids: {exc}") from None
    if not ids:
        raise WorkbenchError("--ids: no ids given (e.g. --ids 1,2,3)")
    return ids


def cmd_decode(args: argparse.Namespace) -> int:
    from workbench.core.encoder import Encoder
    from workbench.tasks.sources import load_tokenizer

    ids = parse_ids(args.ids)
    tokenizer = load_tokenizer(args.tokenizer, pattern=args.pattern)
    data = Encoder(tokenizer).decode_bytes(ids)
    sys.stdout.write(data.decode("utf-8", "replace") + "\n")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from workbench.tasks.import_export import export_run

    result = export_run(_existing(args.project), args.run, args.format, args.out, force=args.force,
                        legacy_merges=args.legacy_merges)
    checks = f" (verified: {'; '.join(result.checks)})" if result.checks else ""
    print(f"wrote {', '.join(str(p) for p in result.paths)}{checks}")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from workbench.tasks.import_export import import_reference

    ref = import_reference(args.path, args.project, name=args.name, pattern=args.pattern)
    pre = ref.pretokenizer if len(ref.pretokenizer) < 20 else "custom"
    print(f"imported {ref.name!r} as reference {ref.ref_id} ({ref.vocab_size} ids, {ref.merge_count} merges, "
          f"pre-tokenizer {pre}) into {args.project}")
    for note in ref.notes:
        print(f"  note: {note}")
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    from workbench.tasks.compare import compare_corpus

    sources = _corpus_sources(args.files, "stats")
    names = list(dict.fromkeys(args.tokenizer))
    tokenizers = _load_tokenizers(names)
    labels = {}
    for item in args.language:
        path, sep, lang = item.rpartition("=")
        if not sep or not path or not lang.strip():
            raise WorkbenchError(f"--language {item}: write FILE=LANG, e.g. --language de.txt=German")
        labels[path] = lang.strip()
    result = compare_corpus(tokenizers, sources, labels=labels, baseline=args.baseline_language,
                            parallel=args.parallel, d=args.d, cache=_metrics_cache(args),
                            progress=_progress_line("stats"))
    assert result is not None  # nothing asks it to stop
    _end_progress_line()
    if args.json:
        print(json.dumps(result.as_dict(dict(tokenizers)), ensure_ascii=False))
        return 0
    for index, info in enumerate(result.files):
        scripts = ", ".join(f"{k} {v}" for k, v in sorted(info.scripts.items(), key=lambda kv: -kv[1])[:4])
        print(f"{info.path}: {info.bytes} bytes, {info.chars} chars, {info.lines} lines, "
              f"{info.distinct_pretokens} distinct pre-tokens; scripts: {scripts}; language {info.language}")
        for m in result.per_file[index :: len(result.files)]:
            print(f"    {m.tokenizer}: {m.tokens} tokens, {_num(m.chars_per_token, 3)} chars/token, "
                  f"fertility {_num(m.fertility, 3)}, {_num(m.bytes_per_token, 3)} bytes/token, "
                  f"L² {m.counts.attention}, unknown {_pct(m.unknown_rate)}, vocab used {_pct(m.utilisation)}")
    if not tokenizers:
        return 0
    print(f"\nper language ({len(result.languages)}):")
    header = (f"  {'tokenizer':<24} {'language':<12} {'tokens':>10} {'chars/tok':>9} {'bytes/tok':>9} "
              f"{'fertility':>9} {'unknown':>8} {'vocab used':>10} {'never used':>10} {'V×d':>12}")
    print(header)
    for m in result.per_language + result.totals:
        print(f"  {_short(m.tokenizer, 24):<24} {_short(m.label, 12):<12} {m.tokens:>10} "
              f"{_num(m.chars_per_token, 3):>9} {_num(m.bytes_per_token, 3):>9} {_num(m.fertility, 3):>9} "
              f"{_pct(m.unknown_rate):>8} {_pct(m.utilisation):>10} {m.never_used:>10} {m.embedding_params:>12}")
    if result.baseline:
        what = ("tokenization premium on parallel text: tokens(lang) / tokens(baseline)" if result.parallel
                else "per character, not parallel text: (tokens/char) / (tokens/char of the baseline)")
        print(f"\nrelative to {result.baseline} ({what}):")
        for f in result.fairness:
            print(f"  {_short(f.tokenizer, 24):<24} {_short(f.language, 12):<12} {_num(f.ratio, 3):>9}")
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    from workbench.formats.tables import write_table_csv
    from workbench.tasks.compare import sweep_files
    from workbench.tasks.sources import load_tokenizer

    if args.points < 2:
        raise WorkbenchError(f"--points {args.points}: a sweep needs at least 2 points")
    if args.threshold < 0:
        raise WorkbenchError(f"--threshold {args.threshold}: must be 0 or more (0.01 = 1% per 1k entries)")
    tokenizer = load_tokenizer(args.tokenizer)
    sources = _corpus_sources(args.files, "sweep")
    result = sweep_files(tokenizer, sources, name=args.tokenizer, points=args.points, d=args.d,
                         threshold=args.threshold, cache=_metrics_cache(args), progress=_progress_line("sweep"))
    assert result is not None
    _end_progress_line()
    doc = result.as_dict()
    header = ("merges", "vocab_size", "tokens", "chars_per_token", "bytes_per_token", "attention",
              "embedding_params", "gain_per_1k")
    if args.json:
        print(json.dumps(doc, ensure_ascii=False))
    elif args.csv:
        rows = [[row[h] if row[h] is not None else "" for h in header] for row in doc["points"]]
        sys.stdout.write(write_table_csv(None, header, rows))
    else:
        print(f"{'merges':>8} {'|V|':>8} {'tokens':>10} {'chars/tok':>9} {'bytes/tok':>9} {'L²':>14} "
              f"{'V×d':>12} {'gain/1k':>8}")
        for row in doc["points"]:
            knee = "  ← knee" if row["merges"] == doc["knee"] else ""
            gain = "" if row["gain_per_1k"] is None else f"{100 * row['gain_per_1k']:.2f}%"
            print(f"{row['merges']:>8} {row['vocab_size']:>8} {row['tokens']:>10} {row['chars_per_token']:>9.3f} "
                  f"{row['bytes_per_token']:>9.3f} {row['attention']:>14} {row['embedding_params']:>12} {gain:>8}{knee}")
        if doc["knee"] is None:
            print(f"no knee: chars/token still grows by {100 * args.threshold:g}% or more per 1k entries at the end")
        else:
            print(f"knee at {doc['knee']} merges (|V| = {doc['knee_vocab_size']}): later segments gain "
                  f"less than {100 * args.threshold:g}% chars/token per 1k entries")
    return 0


def _corpus_sources(files: list[str], command: str) -> list:
    from workbench.corpus import expand_paths

    sources, rejected = expand_paths(list(files))
    if not sources:
        more = f" (and {len(rejected) - 1} more)" if len(rejected) > 1 else ""
        raise WorkbenchError((rejected[0] + more) if rejected else "no readable corpus files among those given")
    for message in rejected:  # the others are still counted
        print(f"workbench {command}: skipped: {message}", file=sys.stderr)
    return sources


def _load_tokenizers(names: list[str]) -> list:
    from workbench.tasks.sources import load_tokenizer

    return [(name, load_tokenizer(name)) for name in names]


def _metrics_cache(args: argparse.Namespace):
    from workbench.tasks.compare import ResultCache

    return ResultCache(None) if args.no_cache else ResultCache.default()


def _progress_line(command: str):
    """Progress on stderr for a person at a terminal (rewritten in place); nothing when piped."""
    if not sys.stderr.isatty():
        return None
    last = [0.0]

    def report(done: int, total: int, what: str) -> None:
        now = time.monotonic()
        if now - last[0] < 0.2:
            return
        last[0] = now
        sys.stderr.write(f"\r\033[K{command}: {what} {100.0 * done / max(total, 1):5.1f}%")
        sys.stderr.flush()
    return report


def _end_progress_line() -> None:
    if sys.stderr.isatty():
        sys.stderr.write("\r\033[K")
        sys.stderr.flush()


def _num(value: float | None, digits: int) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.2f}%"


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else "…" + text[-(width - 1):]


def _existing(project: str) -> Path:
    path = Path(project)
    if not path.exists():
        raise WorkbenchError(f"{project}: no such project file")
    return path


COMMANDS = {
    "train": cmd_train, "runs": cmd_runs, "encode": cmd_encode, "decode": cmd_decode,
    "export": cmd_export, "import": cmd_import, "stats": cmd_stats, "sweep": cmd_sweep,
}


def run_cli(argv: Sequence[str]) -> int:
    """Run one headless command; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    try:
        return COMMANDS[args.command](args)
    except WorkbenchError as exc:
        print(f"workbench {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"workbench {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `workbench encode … | head`: the reader left; not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:  # a path the system refused (permissions, missing folder, full disk)
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        print(f"workbench {args.command}: error: {where}{exc.strerror or exc}: check the path and its permissions",
              file=sys.stderr)
        return 2
