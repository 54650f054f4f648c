"""The headless commands: ``workbench train | runs | encode | decode | export | import | stats | sweep``.

Thin over the core: parse arguments, call the same functions the window calls, print results to
stdout (``--json`` makes them machine-readable) and progress to stderr. Every :class:`WorkbenchError`
becomes one line on stderr and exit status 2; nothing here prints a traceback for bad input. An
SQLite error that escapes the store (a damaged page met while reading) is one line too. Notes the
lower layers log on the ``workbench.notes`` logger (a project recovered after a full disk, a file
given twice, a partial run exported) are printed as one ``note:`` line each.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import signal
import sqlite3
import sys
import time
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from workbench import logfile
from workbench.errors import WorkbenchError
from workbench.tasks.models import family, family_of

log = logging.getLogger(__name__)

EXPORT_FORMATS = ("hf", "hf-folder", "gpt2", "tiktoken", "wordpiece", "spm", "spm-vocab", "merges-csv")
# ``encode --file`` reads the whole file into memory: far beyond any text one encodes in one go,
# and small enough that /dev/zero-like input is refused before it costs gigabytes.
MAX_TEXT_FILE_BYTES = 256 << 20


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="workbench",
        description="Tokenizer Workbench: train, inspect, compare and export BPE, WordPiece and Unigram tokenizers. "
        "Without a command it opens the window (on a bundled demo corpus when nothing is given).",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    add_train_parser(sub)
    add_extend_parser(sub)

    runs = sub.add_parser("runs", help="list the runs of a project")
    runs.add_argument("project")
    runs.add_argument("--json", action="store_true")

    enc = sub.add_parser("encode", help="encode text to ids")
    enc.add_argument("--tokenizer", required=True, metavar="SRC", help="P.tokproj[#RUN], tokenizer.json, .tiktoken or vocab.json")
    src = enc.add_mutually_exclusive_group(required=True)
    src.add_argument("--text")
    src.add_argument("--file")
    enc.add_argument("--allow-special", action="store_true", help="recognise special tokens in the text")
    enc.add_argument("--special", action="append", metavar="MODE",
                     help="special tokens (repeatable): add (the default, as tokenizers' encode(): the "
                          "post-processor's [CLS] … [SEP]), none, allow=all|TOKEN,… (tiktoken's allowed_special), "
                          "disallow=all|none|TOKEN,… (tiktoken's disallowed_special: refuse such text)")
    enc.add_argument("--no-special-tokens", action="store_true",
                     help="tokenizers' add_special_tokens=False: no post-processor additions")
    enc.add_argument("--tiktoken-errors", action="store_true",
                     help="for a disallowed special token print tiktoken's own error text (several lines)")
    enc.add_argument("--greedy", action="store_true", help="greedy longest match instead of BPE merges")
    enc.add_argument("--pattern", help="pre-tokenizer for a .tiktoken file that is not a known public one")
    enc.add_argument("--json", action="store_true", help='print {"ids": [...], "tokens": [...], "count": N}')
    enc.add_argument("--jsonl", action="store_true",
                     help='one {"ids": [...], "count": N} per input line (line break not encoded)')

    rt = sub.add_parser("roundtrip", help="which lines survive decode(encode(line)), and which stage loses the others")
    rt.add_argument("tokenizer", metavar="SRC", help="P.tokproj[#RUN], tokenizer.json, .tiktoken, vocab.json …")
    rt.add_argument("files", nargs="+", metavar="FILES", help="UTF-8 text files, one line per text")
    rt.add_argument("--limit", type=int, metavar="N", help="at most N lines of each file")
    rt.add_argument("--pattern", help=argparse.SUPPRESS)
    rt.add_argument("--json", action="store_true",
                    help='print {"lines", "survived", "share", "causes": {CAUSE: {"lines", "first": {...}}}}')

    dec = sub.add_parser("decode", help="decode ids to text")
    dec.add_argument("--tokenizer", required=True, metavar="SRC")
    dec.add_argument("--ids", required=True, help="comma- or space-separated ids, or a JSON list")
    dec.add_argument("--pattern", help=argparse.SUPPRESS)
    dec.add_argument("--skip-special-tokens", action="store_true",
                     help="leave special tokens out (tokenizers' decode(skip_special_tokens=True))")

    exp = sub.add_parser("export", help="export a run in a format other tools load as is")
    exp.add_argument("project")
    exp.add_argument("--run", type=int, help="run id (default: the latest finished run)")
    exp.add_argument("--format", required=True, choices=EXPORT_FORMATS,
                     help="one that fits the run's model (a format whose library would give other ids is "
                          "refused with the reason and the formats that fit)")
    exp.add_argument("--out", required=True, help="output file (gpt2, hf-folder: a folder)")
    exp.add_argument("--force", action="store_true", help="replace an existing output (atomically)")
    exp.add_argument("--legacy-merges", action="store_true", help='hf: write merges as "a b" strings for older readers')
    exp.add_argument("--chat-template", metavar="FILE", help="hf-folder: a Jinja chat template for tokenizer_config.json")
    exp.add_argument("--strict", action="store_true",
                     help="refuse to write (exit 2) when the pre-export check warns (printed either way)")
    exp.add_argument("--model-max-length", type=int, metavar="N",
                     help="hf-folder: the longest input the model takes, in tokens (default: no limit given)")

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
                       help="the language of a file (default: a code in its name, as in en_wiki.txt or "
                       "news.de.txt, else its dominant script); repeatable")
    stats.add_argument("--baseline-language", metavar="LANG", help="report tokens per language relative to LANG")
    stats.add_argument("--parallel", action="store_true",
                       help="the files are translations of each other: the ratio is the tokenization premium")
    stats.add_argument("--d", type=int, default=768, metavar="D", help="embedding width for V×d (default 768)")
    stats.add_argument("--no-cache", action="store_true", help="neither read nor write the metrics cache")
    stats.add_argument("--renyi-alpha", type=float, default=2.5, metavar="A",
                       help="α of the Rényi efficiency (default 2.5; 1 is Shannon efficiency)")
    stats.add_argument("--vocab-basis", choices=["declared", "observed"], default="declared",
                       help="|V| of the Rényi and Shannon efficiencies: the vocabulary's size (default) "
                            "or the distinct ids that occur")
    stats.add_argument("--json", action="store_true")
    _add_count_parser(sub)
    demo = sub.add_parser("demo", help="list the bundled demo corpus files, or copy them to a folder (--copy DIR)")
    demo.add_argument("--copy", metavar="DIR", help="copy the demo corpus into DIR (created; existing files are kept)")

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
    from workbench.cli_audit import add_audit_parsers

    add_audit_parsers(sub)
    return parser


def _add_count_parser(sub) -> None:
    count = sub.add_parser("count", help="count pre-tokens into a word-count table, or add tables (--merge)")
    count.add_argument("files", nargs="*", metavar="FILES", help="corpus files or folders")
    count.add_argument("--out", required=True, help="the table to write (*.wordcounts.tsv)")
    count.add_argument("--merge", nargs="+", metavar="TABLE", help="add these counts tables instead of reading text")
    count.add_argument("--pretokenizer", default="gpt2", metavar="PRESET|REGEX")
    count.add_argument("--normalize", default="none", metavar="LIST")
    count.add_argument("--sequences", default="lines", choices=["lines", "documents"],
                       help="lines: each line is a sequence (as tokenizers/sentencepiece); documents: each file/record")
    count.add_argument("--kind", choices=["text", "jsonl", "csv", "tsv", "parquet", "wordcounts"],
                       help="read every file as this kind, whatever its name")
    count.add_argument("--field", help="JSONL field holding the text")
    count.add_argument("--column", help="CSV/TSV/Parquet column holding the text")
    count.add_argument("--cache", action="store_true", help="reuse and keep per-file counts in the user cache folder")
    count.add_argument("--max-memory", metavar="SIZE", help="bound the memory counting holds (e.g. 2G, 512M; default "
                       "half the RAM): partial tables beyond it are spilled to disk, sorted and merged")
    count.add_argument("--json", action="store_true", help="print the result as JSON")


# ---- commands ------------------------------------------------------------------------------------
# ---- train -------------------------------------------------------------------------------------
#: Which flag sets each RunSpec field: a ConfigError about a field names its flag.
SPEC_FLAGS = {
    "vocab_size": "--vocab-size", "merges": "--merges", "model": "--model", "units": "--units",
    "end_of_word": "--end-of-word", "pretokenizer": "--pretokenizer", "normalizer": "--normalize",
    "min_frequency": "--min-frequency", "special_tokens": "--special", "tie_break": "--tie-break",
    "sequences": "--sequences", "sample_lines": "--sample-lines", "sample_seed": "--seed",
    "special_roles": "--special", "template": "--template",
    "name": "--name", "project": "--project", "files": "FILES", "files.kind": "--kind",
    "files.field": "--field", "files.column": "--column", "files.encoding": "--encoding",
    "files.on_bad_record": "--on-bad-record",
}


def _option_flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def add_train_parser(sub) -> None:
    """``workbench train``: flags for every RunSpec field, one per declared model option too."""
    from workbench.corpus import KINDS
    from workbench.tasks.models import FAMILIES

    train = sub.add_parser("train", help="train a tokenizer on corpus files and store the run in a project",
                           description="Train from FILES and flags, or run exactly what a RUN.json spec "
                           "says (--spec: its files, with each file's own reader options).")
    train.add_argument("files", nargs="*", metavar="FILES", help="corpus files or folders")
    train.add_argument("--spec", metavar="RUN.json", help="a run spec (JSON) as the window writes it; "
                       "no FILES or setting flags with it")
    train.add_argument("--project", help="project file (*.tokproj), created if missing")
    size = train.add_argument_group("size (one or both)")
    size.add_argument("--vocab-size", type=int, help="target vocabulary size |V| (initial symbols + merges)")
    size.add_argument("--merges", type=int, help="number of merges (BPE)")
    train.add_argument("--model", choices=list(FAMILIES), help="model (default bpe); each brings its own defaults")
    train.add_argument("--units", choices=["bytes", "chars"], help="base symbols (BPE; default bytes)")
    train.add_argument("--end-of-word", metavar="MARKER", help='end-of-word marker for --units chars, e.g. "</w>" ("" = none)')
    train.add_argument("--pretokenizer", metavar="PRESET|REGEX",
                       help="gpt2 (BPE's default), cl100k, o200k, whitespace, digits, bert (WordPiece's), "
                       "metaspace (Unigram's), none, or a regular expression")
    train.add_argument("--normalize", metavar="LIST",
                       help="none, nfc, nfd, nfkc, nfkd, lower, strip-accents, bert, bert-lower, nmt, spm-whitespace, "
                       "nmt-nfkc; comma-separated to combine (Unigram's default: nmt,spm-whitespace)")
    train.add_argument("--min-frequency", type=int, metavar="K", help="stop when no pair occurs K times")
    train.add_argument("--special", action="append", metavar="TOKEN|ROLE=TOKEN",
                       help="special token (repeatable); reserves the first ids. ROLE=TOKEN also says what it is "
                       "for (bos, eos, unk, pad, mask, cls, sep), e.g. --special cls=[CLS]; exports write the roles")
    train.add_argument("--template", choices=["none", "bert", "llama"],
                       help="post-processor template: what encode adds around each text in exported files "
                       "(bert: [CLS] text [SEP], needs cls and sep roles; llama: <s> text, needs a bos role)")
    train.add_argument("--tie-break", choices=["first-seen", "hf"], help="rule between equally frequent pairs")
    train.add_argument("--sequences", choices=["lines", "documents"],
                       help="what one training sequence is: each line with its line break (default; as tokenizers "
                       "and sentencepiece read text files) or a whole file / JSONL record / CSV cell")
    train.add_argument("--no-count-cache", dest="count_cache", action="store_false",
                       help="count the corpus again instead of reusing cached pre-token counts")
    train.add_argument("--name", help="run name")
    files = train.add_argument_group("reader options (for every file given)")
    files.add_argument("--kind", choices=KINDS, help="reader, instead of the one the file name says")
    files.add_argument("--encoding", help="text encoding of the corpus files (default UTF-8)")
    files.add_argument("--field", help="JSONL field holding the text (dots for nested keys)")
    files.add_argument("--column", help="CSV/TSV/Parquet/Arrow column holding the text")
    files.add_argument("--on-bad-record", choices=["fail", "skip"],
                       help="a bad JSONL line / CSV row / count line: fail (default, naming file:line) or skip "
                       "it, then report how many were skipped and where")
    for fam in FAMILIES.values():
        if not fam.options:
            continue
        group = train.add_argument_group(f"{fam.label} options")
        for option in fam.options:
            kwargs: dict = {"dest": f"option_{option.name}", "help": f"{option.help} (default {option.default})"}
            if option.type is not bool:
                kwargs["metavar"] = {int: "N", float: "X"}.get(option.type, "VALUE")
            if option.type is bool:
                kwargs.update(action="store_const", const=True)
            else:
                kwargs.update(type=option.type, choices=option.choices or None)
            group.add_argument(_option_flag(option.name), **kwargs)
    cost = train.add_argument_group("cost")
    cost.add_argument("--dry-run", action="store_true",
                      help="print the pre-flight estimate (bytes, lines, distinct pre-tokens, peak memory, time) "
                      "and train nothing")
    cost.add_argument("--estimate", action="store_true",
                      help="estimate the cost first and record it with the run, to judge it against what the run "
                      "used (automatic for a corpus of 64 MB or more)")
    cost.add_argument("--sample-lines", type=int, metavar="N",
                      help="train on N lines drawn evenly from all files (seeded reservoir; as sentencepiece's "
                      "input_sentence_size)")
    cost.add_argument("--seed", "--sample-seed", dest="sample_seed", type=int, metavar="S",
                      help="seed of --sample-lines (default 0)")
    cost.add_argument("--max-memory", metavar="SIZE", help="bound the memory counting holds (e.g. 2G; default half "
                      "the RAM): partial tables beyond it are spilled to disk and merged")
    train.add_argument("--progress", choices=["text", "json", "none"], default="text",
                       help="progress on stderr: human lines, JSON lines (for the window), or nothing")
    train.add_argument("--json", action="store_true", help="print the result as JSON")


_SETTING_FLAGS = ("vocab_size", "merges", "model", "units", "end_of_word", "pretokenizer", "normalize",
                  "min_frequency", "special", "tie_break", "sequences", "name", "kind", "encoding", "field", "column",
                  "on_bad_record", "sample_lines", "sample_seed", "template")


def spec_from_args(args: argparse.Namespace):
    """The RunSpec the flags describe (FILES resolved and sniffed, as their reader options say)."""
    from workbench.core.normalize import parse_normalizer
    from workbench.errors import ConfigError
    from workbench.tasks.spec import RunSpec
    from workbench.tasks.train import check_project, resolve_files

    options = {k.removeprefix("option_"): v for k, v in vars(args).items()
               if k.startswith("option_") and v is not None}
    if args.spec:
        given = [SPEC_FLAGS.get(k, _option_flag(k)) for k in _SETTING_FLAGS if getattr(args, k) is not None]
        given += [_option_flag(k) for k in options]
        if args.files or given:
            extra = "FILES" if args.files else given[0]
            raise WorkbenchError(f"--spec runs exactly what the spec says: remove {extra} "
                                 "(or edit the spec)")
        path = Path(args.spec)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise WorkbenchError(f"{path}: no such run spec") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise WorkbenchError(f"{path}: cannot read the run spec ({exc}): check the file") from None
        return RunSpec.from_json(text, str(path))
    if not args.files:
        raise WorkbenchError("name the corpus FILES to train on, or give a run spec with --spec RUN.json")
    if args.vocab_size is None and args.merges is None:  # before reading any file
        raise WorkbenchError("say how far to train: --vocab-size N or --merges N")
    normalizer = None  # not given: the model family's default (RunSpec.validate fills it in)
    if args.normalize is not None:
        try:
            normalizer = parse_normalizer(args.normalize or "none")
        except WorkbenchError as exc:
            raise ConfigError("normalizer", str(exc)) from None
    specials, roles = _specials_and_roles(args.special)
    spec = RunSpec(
        model=args.model or "bpe", vocab_size=args.vocab_size, merges=args.merges, units=args.units or "",
        end_of_word=args.end_of_word or "", pretokenizer=args.pretokenizer or "", normalizer=normalizer,
        min_frequency=args.min_frequency, special_tokens=specials,
        tie_break=args.tie_break or "", sequences=args.sequences or "", name=args.name or "",
        options=options, project=args.project or "", sample_lines=args.sample_lines,
        sample_seed=args.sample_seed or 0,
        special_roles=roles, template=args.template or "")
    spec = spec.validate()  # settings first: a wrong flag fails before any file is read
    dry_run = getattr(args, "dry_run", False)  # an estimate stores nothing: no project needed
    if not spec.project and not dry_run:
        raise ConfigError("project", "say where to store the run: give a project file (*.tokproj)")
    if spec.project and not dry_run:
        check_project(spec.project)
    files = resolve_files(args.files, kind=args.kind, encoding=args.encoding, field=args.field, column=args.column,
                          on_bad_record=args.on_bad_record or "fail")
    return RunSpec(**{**spec.__dict__, "files": files})


def _specials_and_roles(items: list[str] | None) -> tuple[tuple[str, ...] | None, dict[str, str]]:
    """``--special`` values: plain tokens (None when only roles were given: the family's own
    specials stay) and ``ROLE=TOKEN`` roles (the token becomes a special token too)."""
    from workbench.core.special_roles import parse_role
    from workbench.errors import ConfigError

    plain: list[str] = []
    roles: dict[str, str] = {}
    for item in items or ():
        parsed = parse_role(item)
        if parsed is None:
            plain.append(item)
        elif parsed[0] in roles and roles[parsed[0]] != parsed[1]:
            raise ConfigError("special_roles", f"the {parsed[0]} role is given twice ({roles[parsed[0]]!r} and "
                              f"{parsed[1]!r}): give each role once")
        else:
            roles[parsed[0]] = parsed[1]
    return (tuple(plain) if plain else None), roles


def cmd_train(args: argparse.Namespace) -> int:
    from workbench.core.lifeline import watch_parent
    from workbench.errors import ConfigError
    from workbench.tasks.train import StopFlag, train_run

    stop = StopFlag()

    def request_stop(_signum, _frame) -> None:
        stop.cancel()

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    reporter = _Reporter(args.progress, stop)
    if args.progress == "json":  # a child of the window: it ends, stored as interrupted, when the window dies
        watch_parent(lambda: stop.interrupt(_WINDOW_GONE))
    t0 = time.monotonic()
    try:
        spec = spec_from_args(args)
        if args.dry_run:
            return _dry_run(spec, args.json)
        project = args.project or spec.project
        run_id, status = train_run(spec, project or None, report=reporter, should_stop=stop,
                                   count_cache=args.count_cache, count_memory=_max_memory(args),
                                   estimate=True if args.estimate else None,
                                   suspendable=args.progress == "json")  # the window's child: it may be paused
    except ConfigError as exc:
        if args.progress == "json":  # the window marks the form field this is about
            sys.stderr.write(json.dumps({"event": "error", "field": exc.field, "message": exc.message}) + "\n")
        where = f"{args.spec}: {exc.field}" if args.spec else SPEC_FLAGS.get(
            exc.field, _option_flag(exc.field.removeprefix("options.")))
        raise WorkbenchError(f"{where}: {exc.message}") from None
    if run_id is None:
        if args.json:
            print(json.dumps({"run_id": None, "status": status, "project": str(project)}))
        print("workbench train: cancelled before training started (while reading the corpus or preparing the "
              "trainer); nothing was stored", file=sys.stderr)
        return 3
    from workbench.store import ProjectStore

    with ProjectStore.open(project, readonly=True) as store:
        run = store.run(run_id)
    result = {"run_id": run_id, "status": status, "merges": run.merge_count, "vocab_size": run.vocab_size,
              "project": str(project), "seconds": round(time.monotonic() - t0, 3)}
    if args.json:
        print(json.dumps(result))
    else:
        merges = "" if run.merges_nothing else f"{run.merge_count} merges, "
        stopped = run.settings.get("stopped_at")
        cut = (f" (cut from {stopped.get('vocab_size')} pieces at step {stopped.get('step')}, "
               "without the pruning left)" if isinstance(stopped, dict) else "")
        print(f"run {run_id} {status}: {merges}vocabulary {run.vocab_size}{cut} "
              f"({result['seconds']:.1f} s) in {project}")
    return 0 if status == "finished" else 3


def _max_memory(args: argparse.Namespace) -> int | None:
    from workbench.corpus.spill import parse_size

    return parse_size(args.max_memory) if getattr(args, "max_memory", None) else None


def _dry_run(spec, as_json: bool) -> int:
    """``train --dry-run``: the pre-flight estimate, nothing trained or stored."""
    from workbench.tasks.preflight import estimate

    est = estimate(spec)
    if as_json:
        print(json.dumps(est.as_dict()))
    else:
        print("\n".join(est.text()))
    return 0


def add_extend_parser(sub) -> None:
    """``workbench extend``: continue a base tokenizer's merges on a corpus (a run that records its base)."""
    ext = sub.add_parser("extend", help="add N tokens to an existing tokenizer, every base id (and BPE merge) kept",
                         description="BPE: new merges continue the base's merge list with its pre-tokenizer and "
                         "normalizer; WordPiece: new pieces appended; Unigram: new pieces from the Unigram "
                         "trainer, scores re-estimated. Candidates that already are a token, or fall outside "
                         "--scripts/--chars, are skipped and counted. The result is a run in the project.")
    ext.add_argument("files", nargs="*", metavar="CORPUS", help="extension corpus files or folders")
    ext.add_argument("--base", metavar="SRC", help="the tokenizer to extend: P.tokproj[#RUN|#ref:ID], a .tiktoken, "
                     "tokenizer.json, GPT-2 vocab.json, vocab.txt or Unigram .model (anything --tokenizer takes)")
    ext.add_argument("--add", type=int, metavar="N", help="number of new tokens (merges)")
    ext.add_argument("--project", help="project file (*.tokproj), created if missing")
    ext.add_argument("--spec", metavar="EXTEND.json", help="an extension spec (JSON) as the window writes it")
    ext.add_argument("--min-frequency", type=int, metavar="K", help="stop when no pair occurs K times (default 2)")
    ext.add_argument("--scripts", metavar="LIST", help="new tokens must hold a whole character of these Unicode "
                     "scripts, e.g. Cyrillic,Han (text without them encodes as with the base)")
    ext.add_argument("--chars", choices=["digits", "code"], help="new tokens only of digits, or of ASCII (code)")
    ext.add_argument("--pad-to", type=int, choices=[64, 128], help="pad the vocabulary to a multiple of 64/128 "
                     "with reserved special tokens <|reserved_N|>")
    ext.add_argument("--reference", metavar="FILE", help="a base-domain file (e.g. English): the report gives the "
                     "share of its lines whose ids change, and the new merge responsible for each")
    ext.add_argument("--csv-out", metavar="PATH", help="write new_id,token,bytes,parent_left,parent_right")
    ext.add_argument("--name", help="run name")
    ext.add_argument("--no-count-cache", dest="count_cache", action="store_false",
                     help="count the corpus again instead of reusing cached pre-token counts")
    ext.add_argument("--progress", choices=["text", "json", "none"], default="text",
                     help="progress on stderr: human lines, JSON lines (for the window), or nothing")
    ext.add_argument("--json", action="store_true", help="print the result and the report as JSON")


_EXTEND_FLAGS = {"base": "--base", "add": "--add", "merges": "--add", "min_frequency": "--min-frequency", "scripts": "--scripts",
                 "chars": "--chars", "pad_to": "--pad-to", "project": "--project", "files": "CORPUS"}


def _extend_request(args: argparse.Namespace):
    from workbench.tasks.extend import ExtendRequest
    from workbench.tasks.train import resolve_files

    if args.spec:
        if args.files or args.base or args.add is not None:
            raise WorkbenchError("--spec runs exactly what the spec says: remove CORPUS, --base and --add")
        try:
            text = Path(args.spec).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise WorkbenchError(f"{args.spec}: cannot read the extension spec ({exc})") from None
        return ExtendRequest.from_json(text, args.spec)
    if not args.base:
        raise WorkbenchError("name the tokenizer to extend: --base SRC")
    if args.add is None:
        raise WorkbenchError("say how many tokens to add: --add N")
    if not args.files:
        raise WorkbenchError("name the extension CORPUS files")
    scripts = tuple(s.strip() for s in (args.scripts or "").split(",") if s.strip())
    request = ExtendRequest(base=args.base, add=args.add, min_frequency=args.min_frequency or 2, scripts=scripts,
                            chars=args.chars or "", pad_to=args.pad_to or 0, name=args.name or "",
                            project=args.project or "").validate()
    if not request.project:
        raise WorkbenchError("say where to store the run: --project P.tokproj")
    return ExtendRequest(**{**request.__dict__, "files": resolve_files(args.files)})


def _check_extend_files(args: argparse.Namespace) -> None:
    """Before training: an existing --csv-out is never overwritten (it may be the corpus itself), and
    a --reference that cannot be read or a --csv-out folder that is missing fails now, not after a
    run was stored."""
    if args.csv_out:
        out = Path(args.csv_out)
        if out.exists() or out.is_symlink():
            raise WorkbenchError(f"--csv-out {out} already exists: choose another path (nothing is overwritten)")
        if not out.parent.is_dir():
            raise WorkbenchError(f"--csv-out {out}: the folder {out.parent} does not exist; choose a writable folder")
    if args.reference and not Path(args.reference).is_file():
        raise WorkbenchError(f"--reference {args.reference}: no such file: check the path")


def cmd_extend(args: argparse.Namespace) -> int:
    from workbench.core.lifeline import watch_parent
    from workbench.errors import ConfigError
    from workbench.tasks.extend import extend_run, extension_report, load_extension, new_tokens_csv
    from workbench.tasks.train import StopFlag

    stop = StopFlag()
    signal.signal(signal.SIGTERM, lambda _s, _f: stop.cancel())
    signal.signal(signal.SIGINT, lambda _s, _f: stop.cancel())
    reporter = _Reporter(args.progress, stop)
    if args.progress == "json":
        watch_parent(lambda: stop.interrupt(_WINDOW_GONE))
    t0 = time.monotonic()
    _check_extend_files(args)
    try:
        request = _extend_request(args)
        project = args.project or request.project
        run_id, status = extend_run(request, project, report=reporter, should_stop=stop, count_cache=args.count_cache,
                                    suspendable=args.progress == "json")  # the window's child: it may be paused
    except ConfigError as exc:
        if args.progress == "json":
            sys.stderr.write(json.dumps({"event": "error", "field": exc.field, "message": exc.message}) + "\n")
        raise WorkbenchError(f"{_EXTEND_FLAGS.get(exc.field, exc.field)}: {exc.message}") from None
    if run_id is None:
        print("workbench extend: cancelled before training started; nothing was stored", file=sys.stderr)
        return 3
    base, extended, meta = load_extension(project, run_id)
    first_new = len(base.vocab)
    if status != "finished":  # what was made is kept; the report is for a finished extension
        result = {"run_id": run_id, "status": status, "project": str(project),
                  "added": len(extended.merges) - int(meta["base_merges"]), "vocab_size": len(extended.vocab)}
        print(json.dumps(result) if args.json else f"run {run_id} {status}: {result['added']} new tokens kept")
        return 3
    if args.csv_out:
        new_tokens_csv(extended, int(meta["base_vocab_size"]), args.csv_out)
    report = extension_report(base, extended, request.files, reference=args.reference, skipped=meta.get("skipped"),
                              alphabet_added=int(meta.get("alphabet_added") or 0))
    result = {"run_id": run_id, "status": status, "project": str(project), "added": report.new_tokens,
              "vocab_size": len(extended.vocab), "reserved": meta.get("reserved", 0),
              "seconds": round(time.monotonic() - t0, 3), "report": report.as_dict()}
    if args.json:
        print(json.dumps(result, ensure_ascii=False))
    else:
        alphabet = int(meta.get("alphabet_added") or 0)  # WordPiece: characters the base could not spell
        spelled = (f"{alphabet:,} characters the base could not spell (ids {first_new - alphabet}–{first_new - 1}), "
                   "then " if alphabet else "")
        print(f"run {run_id} {status}: {spelled}{report.new_tokens} new tokens after id {first_new - 1}, vocabulary "
              f"{len(extended.vocab)} ({result['seconds']:.1f} s) in {project}")
        asked = meta.get("add")
        if isinstance(asked, int) and report.new_tokens < asked:
            print(f"  asked for {asked:,}: the extension corpus offered no more candidates that pass the settings "
                  f"(min frequency {meta.get('min_frequency', 1)}, scripts, characters) and are produced when it "
                  "is encoded; a larger corpus gives more")
        skipped = ", ".join(f"{v} {k}" for k, v in report.skipped.items() if v) or "none"
        print(f"  candidates skipped: {skipped}; rank-dead new tokens: {len(report.dead)}; intermediate only "
              f"(made while encoding, always merged further, so never emitted): {report.intermediate_only}")
        for f in report.files:
            unknown = (f" (characters lost to unknown {f.lost_before:,} → {f.lost_after:,}; unknown tokens "
                       f"{f.unknown_before:,} → {f.unknown_after:,})" if f.unknown_before else "")
            print(f"  {f.language:>4}  tokens/char {f.before:.4f} → {f.after:.4f}{unknown}  {f.path}")
        if report.reference:
            print(f"  reference lines changed: {report.changed_lines} of {report.reference_lines} "
                  f"({100 * report.changed_share:.2f} %)")
    return 0 if status == "finished" else 3


_WINDOW_GONE = "the process that started this run (the window) ended during training"


class _Reporter:
    """Progress on stderr: a human line (rewritten in place on a terminal) or JSON lines.

    A JSON line that cannot be written (the window reading them died: broken pipe) interrupts the
    run through ``stop`` instead of failing it: the run keeps what it made, marked interrupted.
    """

    def __init__(self, mode: str, stop=None):
        from workbench.tasks.models import BPE

        self.mode = mode
        self.stop = stop
        self.tty = sys.stderr.isatty()
        self.last_line = 0.0
        self.rule = BPE.progress  # until a "started" event names the model

    def __call__(self, progress) -> None:
        if self.mode == "none":
            return
        if self.mode == "json":
            try:
                sys.stderr.write(json.dumps(progress.as_dict()) + "\n")
                sys.stderr.flush()
            except OSError:  # BrokenPipeError, or EIO on a closed terminal
                if self.stop is None:
                    raise
                self.mode = "none"
                self.stop.interrupt(_WINDOW_GONE)
            return
        if progress.event == "skipped":
            return  # already on stderr as note: lines (workbench.tasks.train.report_skipped)
        now = time.monotonic()
        if not self.tty and now - self.last_line < 2.0 and progress.event not in ("preparing", "started", "finished"):
            return
        self.last_line = now
        if progress.event == "note":
            return  # already on stderr as a note: line (the lower layers log it)
        if progress.model:
            self.rule = family(progress.model).progress
        if progress.event == "reading":
            pct = 100.0 * progress.bytes_read / max(progress.bytes_total, 1)
            line = f"reading corpus: {pct:5.1f}% of {progress.bytes_total / 1e6:.1f} MB"
        elif progress.event == "preparing":
            line = f"{progress.message}…"
        elif progress.event == "started":
            line = self.rule.started_line(progress.run_id or 0, progress.target, progress.vocab_size, progress.goal)
        elif progress.event == "merges":
            done = (progress.step >= progress.target if self.rule.measure == "merges"
                    else progress.vocab_size <= progress.goal)
            eta = f", ETA {text_duration(progress.eta_s)}" if progress.eta_s is not None and not done else \
                ", ETA estimating…" if not done else ""
            line = self.rule.step_line(progress.step, progress.target, progress.vocab_size, progress.goal,
                                       progress.merges_per_s, eta)
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
        # A damaged value anywhere in a run's rows marks that run; the others are listed as usual.
        damage = {r.id: r.damage or str(store.run_problem(r.id) or "") for r in runs}
        overlaps = _sample_overlaps(store, damage)
    if args.json:
        print(json.dumps([_run_dict(r, damage[r.id], overlaps.get(r.id)) for r in runs], indent=None))
        return 0
    if not runs:
        print(f"{args.project}: no runs yet")
        return 0
    print(f"{'id':>4}  {'status':<11} {'vocab':>7} {'merges':>7}  {'started':<19}  name / settings")
    for r in runs:
        summary = family_of(r.settings).summary_of(r.settings)
        stopped = r.settings.get("stopped_at")
        if isinstance(stopped, dict):  # a pruning run cancelled early: its kept model is a cut
            summary += f"; cancelled at |V| {stopped.get('vocab_size')}, cut to {r.vocab_size}"
        merges = "—" if r.merges_nothing else r.merge_count
        status = "damaged" if damage[r.id] else r.status
        from workbench.tasks.trim import vocab_entries

        entries = vocab_entries(r.settings, r.vocab_size)
        if entries != r.vocab_size:  # a trim that kept its ids: entries, and the id range beside them
            summary += f"; ids kept: {entries:,} entries in ids 0–{r.vocab_size - 1:,}"
        print(f"{r.id:>4}  {_clip(status, 11):<11} {entries:>7} {merges:>7}  {_when(r.started):<19}  "
              f"{_clip(r.name, 60)} ({_clip(summary, 120)})")
        if damage[r.id]:
            print(f"{'':>6}{_clip(damage[r.id], 400)}")
            continue
        from workbench.tasks.preflight import estimate_ratios

        ratios = estimate_ratios(r.settings, r.timings or {})
        if ratios is not None and ratios.text():
            print(f"{'':>6}actual ÷ estimate: {ratios.text()}")
        if r.id in overlaps:
            print(f"{'':>6}{overlaps[r.id].text()}")
    return 0


def _sample_overlaps(store, damage: dict) -> dict:
    """Sampled runs beside their full run (:mod:`workbench.tasks.sample_report`); a damaged run is
    left out rather than failing the listing."""
    from workbench.tasks.sample_report import sample_overlaps

    if any(damage.values()):
        return {}
    try:
        return sample_overlaps(store)
    except (WorkbenchError, sqlite3.DatabaseError):
        return {}


def _clip(value: object, width: int) -> str:
    """A stored value as a short piece of one line: control characters escaped, anything longer
    than ``width`` cut with "…" (a custom pattern can be a megabyte; ``--json`` keeps it whole)."""
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(value)[: width + 1])
    return text if len(text) <= width else text[: width - 1] + "…"


def _run_dict(r, damage: str = "", overlap=None) -> dict:
    """A run for ``runs --json``; ``damage`` is null, or the line saying which stored value is damaged;
    ``estimate_ratio``: actual ÷ estimated distinct pre-tokens, peak memory and time (null without an
    estimate); ``sample_overlap``: a sampled run's vocabulary beside its full run's (null otherwise)."""
    from dataclasses import asdict

    from workbench.tasks.preflight import estimate_ratios

    ratios = estimate_ratios(r.settings, r.timings or {})
    return {"id": r.id, "name": r.name, "status": r.status, "settings": r.settings, "vocab_size": r.vocab_size,
            "merges": r.merge_count, "started": r.started, "ended": r.ended, "timings": r.timings, "error": r.error,
            "damage": damage or None, "estimate_ratio": asdict(ratios) if ratios else None,
            "sample_overlap": overlap.as_dict() if overlap else None}


def _when(value) -> str:
    if value is None:
        return ""
    if isinstance(value, (int, float)):
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(value))
    return str(value)[:19]


def cmd_encode(args: argparse.Namespace) -> int:
    """Encode ``--text`` or ``--file``; a file is read, encoded and printed piece by piece where
    the tokenizer allows it (:mod:`workbench.core.encode_stream`), so memory does not grow with it."""
    from workbench.core.encode_stream import encode_chunks, streams_exactly
    from workbench.core.encoder import Encoder
    from workbench.tasks.sources import load_tokenizer
    from workbench.tasks.special import DisallowedSpecial, encode_text, parse_special

    tokenizer = load_tokenizer(args.tokenizer, pattern=args.pattern)
    encoder = Encoder(tokenizer, greedy=args.greedy)
    if args.jsonl and args.json:
        raise WorkbenchError("--json and --jsonl: choose one output form")
    policy = parse_special((["allow=all"] if args.allow_special else []) + (args.special or []), tokenizer,
                           add=not args.no_special_tokens)
    wraps = policy.add and ((tokenizer.pipeline is not None and tokenizer.pipeline.post_processor is not None)
                            or tokenizer.template not in ("", "none"))  # a run's [CLS] … [SEP] / <s> …
    if args.file is None:
        texts: Iterable[str] = [args.text]
    elif args.jsonl or (not args.special and not wraps and streams_exactly(encoder, args.allow_special)):
        texts = _text_blocks(args.file)
    else:
        texts = [_read_text(args.file)]
    write = sys.stdout.write
    try:
        if args.jsonl:  # one object per line, for pipelines that tokenize line by line
            for line in _lines(texts):
                ids = encode_text(encoder, line.removesuffix("\r"), policy)
                write(json.dumps({"ids": ids, "count": len(ids)}) + "\n")
            return 0
        chunks: Iterable[list[int]] = (encode_chunks(encoder, texts, allow_special=args.allow_special)
                                       if not (args.special or wraps) else [encode_text(encoder, "".join(texts), policy)])
    except DisallowedSpecial as exc:
        if not args.tiktoken_errors:
            raise
        sys.stderr.write(exc.tiktoken_text)
        return 2
    if not args.json:
        separator = ""
        for ids in chunks:
            if ids:
                write(separator + " ".join(map(str, ids)))
                separator = " "
        write("\n")
        return 0
    from array import array

    from workbench.core.display import piece_text

    kept = array("I")  # the ids once more, for "tokens": 4 bytes each instead of a Python int
    write('{"ids": [')
    for ids in chunks:
        if ids:
            write((", " if kept else "") + ", ".join(map(str, ids)))
            kept.extend(ids)
    write('], "tokens": [')
    vocab = tokenizer.vocab
    for start in range(0, len(kept), 1 << 16):
        part = kept[start:start + (1 << 16)]
        write((", " if start else "") + ", ".join(json.dumps(piece_text(vocab[i]), ensure_ascii=False) for i in part))
    write(f'], "count": {len(kept)}}}\n')
    return 0


def _text_blocks(path: str, size: int = 1 << 20) -> Iterator[str]:
    """The UTF-8 text of a regular file in blocks of about ``size`` bytes (any size of file)."""
    import codecs

    from workbench.corpus.streams import os_error, read_block, regular_file_size

    file = Path(path)
    regular_file_size(file, what="--file")
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    lines_before = 0
    try:
        stream = open(file, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise os_error(file, exc) from None
    with stream:
        while True:
            block = read_block(stream, size, file)
            try:
                text = decoder.decode(block, final=not block)
            except UnicodeDecodeError as exc:
                line = lines_before + exc.object.count(b"\n", 0, exc.start) + 1
                raise WorkbenchError(f"{path}:{line}: not valid UTF-8; convert the file to UTF-8") from None
            lines_before += block.count(b"\n")
            if text:
                yield text
            if not block:
                return


def _lines(texts: Iterable[str]) -> Iterator[str]:
    """The lines of the concatenated texts, without their line breaks (none after the last break)."""
    carry = ""
    for text in texts:
        parts = (carry + text).split("\n")
        carry = parts.pop()
        yield from parts
    if carry:
        yield carry


def _read_text(path: str) -> str:
    from workbench.corpus.streams import read_regular_file

    data = read_regular_file(Path(path), MAX_TEXT_FILE_BYTES, what="--file")
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


def cmd_roundtrip(args: argparse.Namespace) -> int:
    """The share of lines that come back from decode(encode(line)) and, per cause, the first one
    that does not (:mod:`workbench.tasks.pipeline_view`)."""
    from workbench.tasks.pipeline_view import round_trip_files
    from workbench.tasks.sources import load_tokenizer

    if args.limit is not None and args.limit < 1:
        raise WorkbenchError(f"--limit {args.limit}: give a number of lines, 1 or more")
    tokenizer = load_tokenizer(args.tokenizer, pattern=args.pattern)
    report = round_trip_files(tokenizer, args.files, limit=args.limit)
    if args.json:
        print(json.dumps(report.as_json(), ensure_ascii=False))
        return 0
    print(f"{report.survived:,} of {report.lines:,} lines survive decode(encode(line)) == line "
          f"({100 * report.share:.1f}%)")
    for cause, data in report.as_json()["causes"].items():
        first = data["first"]
        shown = first["text"] if len(first["text"]) <= 60 else first["text"][:59] + "…"
        print(f"  {data['lines']:>7,}  {cause}\n           first: {first['file']}:{first['line']} {shown!r} "
              f"({first['detail']})")
    return 0


def cmd_decode(args: argparse.Namespace) -> int:
    from workbench.core.encoder import Encoder
    from workbench.tasks.sources import load_tokenizer

    ids = parse_ids(args.ids)
    tokenizer = load_tokenizer(args.tokenizer, pattern=args.pattern)
    encoder = Encoder(tokenizer)
    if tokenizer.pipeline is not None:  # the file's own decoder, as tokenizers decodes
        sys.stdout.write(encoder.decode(ids, skip_special_tokens=args.skip_special_tokens) + "\n")
        return 0
    if args.skip_special_tokens:
        ids = [i for i in ids if i not in tokenizer.special_ids]
    data = encoder.decode_bytes(ids)
    sys.stdout.write(data.decode("utf-8", "replace") + "\n")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from workbench.core.atomic import terminate_raises
    from workbench.errors import ConfigError
    from workbench.tasks.export_check import check_run
    from workbench.tasks.import_export import export_run

    chat_template = _chat_template(args)
    run_id, findings = check_run(_existing(args.project), args.run, args.format)

    def warn() -> None:
        """The pre-export warnings, once the export is verified and before it is written: an export
        that fails says its one line only; with --strict a warning stops it here."""
        for finding in findings:
            print(f"workbench export: warning: {finding.message}", file=sys.stderr)
        if findings and args.strict:
            raise WorkbenchError(f"--strict: the pre-export check gave {len(findings)} warning(s) (above): "
                                 "nothing was written")

    with terminate_raises():  # a kill mid-export unwinds through the writers' cleanup
        try:
            result = export_run(_existing(args.project), run_id, args.format, args.out, force=args.force,
                                legacy_merges=args.legacy_merges, chat_template=chat_template,
                                model_max_length=args.model_max_length, before_write=warn)
        except ConfigError as exc:
            if exc.field != "force":
                raise
            raise WorkbenchError(f"{exc.message} or pass --force to replace it") from None
    checks = f" (verified: {'; '.join(result.checks)})" if result.checks else ""
    print(f"wrote {', '.join(str(p) for p in result.paths)}{checks}")
    return 0


def _chat_template(args: argparse.Namespace) -> str | None:
    """The text of ``--chat-template FILE`` (hf-folder only), or None."""
    if args.chat_template is None and args.model_max_length is None:
        return None
    if args.format != "hf-folder":
        flag = "--chat-template" if args.chat_template is not None else "--model-max-length"
        raise WorkbenchError(f"{flag} is written to tokenizer_config.json: use it with --format hf-folder")
    if args.chat_template is None:
        return None
    try:
        return Path(args.chat_template).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise WorkbenchError(f"--chat-template {args.chat_template}: cannot read it ({exc}): give a UTF-8 "
                             "text file") from None


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
    from workbench.core.corpus_metrics import lossy_note
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
                            alpha=args.renyi_alpha, basis=args.vocab_basis, progress=_progress_line("stats"))
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
                  f"L² {m.counts.attention}, unknown {_pct(m.unknown_rate)}, "
                  f"chars lost to unknown {_pct(m.chars_lost_to_unknown)}, vocab used {_pct(m.utilisation)}")
    if not tokenizers:
        return 0
    print(f"\nper language ({len(result.languages)}):")
    header = (f"  {'tokenizer':<24} {'language':<12} {'tokens':>10} {'chars/tok':>9} {'bytes/tok':>9} "
              f"{'fertility':>9} {'unknown':>8} {'chars lost':>10} {'vocab used':>10} {'never used':>10} {'V×d':>12}")
    print(header)
    for m in result.per_language + result.totals:
        print(f"  {_short(m.tokenizer, 24):<24} {_short(m.label, 12):<12} {m.tokens:>10} "
              f"{_num(m.chars_per_token, 3):>9} {_num(m.bytes_per_token, 3):>9} {_num(m.fertility, 3):>9} "
              f"{_pct(m.unknown_rate):>8} {_pct(m.chars_lost_to_unknown):>10} {_pct(m.utilisation):>10} "
              f"{m.never_used:>10} {m.embedding_params:>12}")
    _print_expert_metrics(result.per_language + result.totals, args.renyi_alpha, args.vocab_basis)
    for m in result.totals:  # the ranking rule (core.corpus_metrics.lossy_note): never compare silently
        note = lossy_note(m)
        if note:
            print(f"  note: {m.tokenizer} {note} ({m.lost_chars} of {m.text.chars}): its chars/token and "
                  "tokens per language count text it cannot give back; it does not compress better than "
                  "a tokenizer that keeps its text")
    if result.baseline:
        what = ("tokenization premium on parallel text: tokens(lang) / tokens(baseline)" if result.parallel
                else "per character, not parallel text: (tokens/char) / (tokens/char of the baseline)")
        print(f"\nrelative to {result.baseline} ({what}):")
        lossy = {(m.tokenizer, m.language) for m in result.per_language if m.loses_text}
        for f in result.fairness:
            mark = "  (loses characters to unknown)" if (f.tokenizer, f.language) in lossy else ""
            print(f"  {_short(f.tokenizer, 24):<24} {_short(f.language, 12):<12} {_num(f.ratio, 3):>9}{mark}")
    return 0


def _print_expert_metrics(rows: list, alpha: float, basis: str) -> None:
    """The distribution metrics of ``stats`` (definitions: docs/metrics.md), α and |V| beside them."""
    print(f"\ndistribution (Rényi eff. (α {alpha:g}, |V| {basis}); retention = whitespace words encoded alone "
          "as one token; rank = mean vocabulary rank per token; Gini = of per-language token cost):")
    print(f"  {'tokenizer':<24} {'language':<12} {'Rényi eff.':>10} {'Shannon eff.':>12} {'|V|':>8} "
          f"{'retention':>9} {'avg rank':>9} {'Gini':>6}")
    for m in rows:
        print(f"  {_short(m.tokenizer, 24):<24} {_short(m.label, 12):<12} {_num(m.renyi_efficiency, 4):>10} "
              f"{_num(m.shannon_efficiency, 4):>12} {m.basis_size:>8} {_pct(m.single_token_retention):>9} "
              f"{_num(m.average_rank, 1):>9} {_num(m.gini, 3):>6}")


def cmd_sweep(args: argparse.Namespace) -> int:
    from workbench.errors import ConfigError
    from workbench.formats.tables import csv_text
    from workbench.tasks.compare import sweep_files, sweep_source

    if args.threshold < 0:
        raise WorkbenchError(f"--threshold {args.threshold}: must be 0 or more (0.01 = 1% per 1k entries)")
    tokenizer, pruning = sweep_source(args.tokenizer)
    sources = _corpus_sources(args.files, "sweep")
    try:
        result = sweep_files(tokenizer, sources, name=args.tokenizer, points=args.points, d=args.d,
                             threshold=args.threshold, pruning=pruning, cache=_metrics_cache(args),
                             progress=_progress_line("sweep"))
    except ConfigError as exc:  # the sweep's own settings: "points"
        raise WorkbenchError(f"--{exc.field} {getattr(args, exc.field)}: {exc.message}") from None
    assert result is not None
    _end_progress_line()
    if result.note:
        print(f"note: {result.note}", file=sys.stderr)
    doc = result.as_dict()
    header = ("merges", "vocab_size", "tokens", "chars_per_token", "bytes_per_token", "attention",
              "embedding_params", "gain_per_1k", "kind", "step")  # new columns last: old readers keep working
    if args.json:
        print(json.dumps(doc, ensure_ascii=False))
    elif args.csv:
        rows = [[row[h] if row[h] is not None else "" for h in header] for row in doc["points"]]
        sys.stdout.write(csv_text(header, rows))
    else:
        knee_index = result.knee
        print(f"{'kind':<13} {'step':>8} {'|V|':>8} {'tokens':>10} {'chars/tok':>9} {'bytes/tok':>9} {'L²':>14} "
              f"{'V×d':>12} {'gain/1k':>8}")
        for index, row in enumerate(doc["points"]):
            knee = "  ← knee" if index == knee_index else ""
            gain = "" if row["gain_per_1k"] is None else f"{100 * row['gain_per_1k']:.2f}%"
            print(f"{row['kind']:<13} {row['step']:>8} {row['vocab_size']:>8} {row['tokens']:>10} "
                  f"{row['chars_per_token']:>9.3f} {row['bytes_per_token']:>9.3f} {row['attention']:>14} "
                  f"{row['embedding_params']:>12} {gain:>8}{knee}")
        if knee_index is None:
            print(f"no knee: characters/token still grows by ≥ {100 * args.threshold:g}% per 1,000 entries "
                  "at the largest vocabulary")
        else:
            print(f"knee at |V| {result.points[knee_index].vocab_size:,}: beyond it every segment gains less than "
                  f"{100 * args.threshold:g}% in characters/token per 1,000 entries")
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


def text_duration(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``1 h 02 min``: an ETA a person reads at a glance."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def _num(value: float | None, digits: int) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _pct(value: float | None) -> str:
    if value is None:
        return "—"
    return "<0.01%" if 0 < value < 0.00005 else f"{100 * value:.2f}%"


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else "…" + text[-(width - 1):]


def cmd_count(args: argparse.Namespace) -> int:
    """``workbench count``: a counts table from corpus files, or the exact sum of tables."""
    from workbench.corpus import expand_paths
    from workbench.corpus.count_cache import CountCache
    from workbench.corpus.counts import count_sources
    from workbench.corpus.counts_table import counts_settings, merge_counts_tables
    from workbench.corpus.spill import SpillingCounts, default_limit, parse_size, write_spilled_table

    if args.merge:
        if args.files:
            raise WorkbenchError("count: give corpus FILES or --merge TABLES, not both")
        settings, counts = merge_counts_tables(args.merge, args.out)
        result = {"out": str(args.out), "distinct": len(counts), "tokens": sum(counts.values()), **settings}
    else:
        if not args.files:
            raise WorkbenchError("count: name the corpus files to count (or --merge TABLES)")
        sources, rejected = expand_paths(list(args.files), kind=args.kind, field=args.field, column=args.column)
        if rejected:
            raise WorkbenchError(rejected[0] + (f" (and {len(rejected) - 1} more)" if len(rejected) > 1 else ""))
        settings = counts_settings(args.pretokenizer, args.normalize, args.sequences)
        line = _progress_line("count")
        limit = parse_size(args.max_memory) if args.max_memory else default_limit()
        with SpillingCounts(limit) as spilling:
            try:
                count_sources(sources, pretokenizer=settings["pretokenizer"], normalizer=settings["normalizer"],
                              sequences=settings["sequences"], cache=CountCache() if args.cache else None,
                              progress=None if line is None else lambda done, total: line(done, total, "reading"),
                              into=spilling)
            finally:
                _end_progress_line()
            write_spilled_table(args.out, spilling, settings)
            distinct, tokens = spilling.distinct, spilling.tokens
            if not spilling.spilled:
                distinct, tokens = len(spilling.current), sum(spilling.current.values())
        result = {"out": str(args.out), "distinct": distinct, "tokens": tokens, **settings}
    if args.json:
        print(json.dumps(result, ensure_ascii=False))
    else:
        print(f"wrote {args.out}: {result['distinct']} distinct pre-tokens, {result['tokens']} in all "
              f"({settings['pretokenizer']}, sequences {settings['sequences']})")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """The bundled demo corpus for a headless first session: its paths, or copies the user can keep
    (an existing file of the same name is never overwritten: it is reported and left as it is)."""
    from workbench.corpus.demo import demo_corpus_files

    files = demo_corpus_files()
    if not args.copy:
        for path in files:
            print(path)
        return 0
    folder = Path(args.copy)
    folder.mkdir(parents=True, exist_ok=True)
    for path in files:
        target = folder / path.name
        if target.exists():
            print(f"workbench demo: note: {target} exists: kept as it is", file=sys.stderr)
        else:
            shutil.copyfile(path, target)
        print(target)
    return 0


def _existing(project: str) -> Path:
    path = Path(project)
    if not path.exists():
        raise WorkbenchError(f"{project}: no such project file")
    return path


COMMANDS = {
    "train": cmd_train, "runs": cmd_runs, "encode": cmd_encode, "decode": cmd_decode,
    "export": cmd_export, "import": cmd_import, "stats": cmd_stats, "count": cmd_count, "sweep": cmd_sweep,
    "demo": cmd_demo, "extend": cmd_extend, "roundtrip": cmd_roundtrip,
}
from workbench.cli_audit import AUDIT_COMMANDS  # noqa: E402 - registered beside the others

COMMANDS.update(AUDIT_COMMANDS)


class _NoteHandler(logging.Handler):
    """Notes the lower layers log on ``workbench.notes`` (a recovered project, a file given twice,
    a partial run exported) become one ``workbench CMD: note: …`` line each on stderr."""

    def __init__(self, command: str):
        super().__init__(logging.INFO)
        self.command = command

    def emit(self, record: logging.LogRecord) -> None:
        from workbench.corpus.location import redact_text

        message = redact_text(" ".join(record.getMessage().split()))
        sys.stderr.write(f"workbench {self.command}: note: {message}\n")
        sys.stderr.flush()


def _damaged_source(args: argparse.Namespace) -> str:
    """The project or tokenizer a command was reading, for an SQLite error's one line."""
    for name in ("project", "tokenizer"):
        value = getattr(args, name, None)
        if isinstance(value, list):
            value = value[0] if value else None
        if value:
            return str(value)
    return "the project file"


def _loggable(argv: Sequence[str]) -> list[str]:
    """The command line as the log may keep it: a URL's user info and secret query values (where
    credentials and signatures travel) replaced by ``…``; the command itself refuses such a URL."""
    from workbench.corpus.location import redact_text

    return [redact_text(arg) for arg in argv]


_LOCAL_PATHS = {"out": "--out", "project": "--project", "csv_out": "--csv-out"}


def _refuse_url_outputs(args: argparse.Namespace) -> None:
    """A project or an output given as a URL would be read as a local path (a folder named
    ``https:`` made here, holding any credentials in its name): refused, the URL shown redacted."""
    from workbench.corpus.location import is_url, redacted

    for name, flag in _LOCAL_PATHS.items():
        value = getattr(args, name, None)
        if isinstance(value, str) and is_url(value):
            raise WorkbenchError(f"{flag} {redacted(value)}: projects and outputs are local paths; "
                                 "write to a local file and copy it there")


def run_cli(argv: Sequence[str]) -> int:
    """Run one headless command; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    logfile.install(logfile.cli_log_path())  # None when unwritable: the command runs anyway
    log.info("workbench %s", " ".join(_loggable(argv)))
    notes = logging.getLogger("workbench.notes")
    handler = _NoteHandler(args.command)
    notes.addHandler(handler)
    notes.setLevel(logging.INFO)
    notes.propagate = False
    try:
        _refuse_url_outputs(args)
        return COMMANDS[args.command](args)
    except WorkbenchError as exc:
        from workbench.corpus.location import redact_text

        message = redact_text(str(exc))  # a path that was a URL with credentials is echoed without them
        log.info("workbench %s: error: %s", args.command, message)
        print(f"workbench {args.command}: error: {message}", file=sys.stderr)
        return 2
    except sqlite3.DatabaseError as exc:  # a damaged page SQLite found while reading
        print(f"workbench {args.command}: error: {_damaged_source(args)} is damaged ({exc}); "
              "restore it from a backup", file=sys.stderr)
        return 2
    except MemoryError:
        print(f"workbench {args.command}: error: ran out of memory; give a smaller input", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"workbench {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `workbench encode … | head`: the reader left; not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:  # a path the system refused (permissions, missing folder, full disk)
        from workbench.corpus.location import redact_text

        where = f"{redact_text(str(exc.filename))}: " if getattr(exc, "filename", None) else ""
        print(f"workbench {args.command}: error: {where}{exc.strerror or exc}: check the path and its permissions",
              file=sys.stderr)
        return 2
    except Exception:  # a bug: its traceback goes to the log as well as to stderr
        log.exception("workbench %s failed", args.command)
        raise
    finally:
        notes.removeHandler(handler)
