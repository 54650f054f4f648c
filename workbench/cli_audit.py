"""``workbench audit`` and ``workbench trim``: the vocabulary audit and the safe removal of entries.

Kept beside :mod:`workbench.cli` (which registers them) so the audit's flags live in one place;
the work is in :mod:`workbench.tasks.audit` and :mod:`workbench.tasks.trim`.
"""

from __future__ import annotations

import argparse
import json
import sys

from workbench.core.audit import DEFAULT_RESIDUE_THRESHOLD

FILTERS = ("unreachable", "undecodable", "context", "ill-formed", "residue", "never-used", "model-unreachable")


def add_audit_parsers(sub) -> None:
    aud = sub.add_parser("audit", help="audit a tokenizer's vocabulary: reachability, ill-formed UTF-8, "
                                       "residues (F1/F2/R), never used on a corpus")
    aud.add_argument("tokenizer", metavar="SRC", help="anything --tokenizer takes (a run, a reference, a file)")
    aud.add_argument("files", nargs="*", metavar="CORPUS",
                     help="corpus files (default: a run's own training files; none for a file)")
    aud.add_argument("--threshold", type=float, default=DEFAULT_RESIDUE_THRESHOLD, metavar="R",
                     help=f"a residue has R = F1/(F1+F2) below this (default {DEFAULT_RESIDUE_THRESHOLD:g})")
    aud.add_argument("--pattern", help="pre-tokenizer for a .tiktoken file that is not a known public one")
    aud.add_argument("--only", choices=FILTERS, help="--json/--csv rows: only the entries in this category")
    out = aud.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="the summary and one row per entry as JSON")
    out.add_argument("--csv", action="store_true", help="one row per entry as CSV")

    trim = sub.add_parser("trim", help="remove vocabulary entries (and the merges and tokens that depend on "
                                       "them) into a new run, ids kept unless --compact")
    trim.add_argument("tokenizer", metavar="SRC", help="anything --tokenizer takes")
    trim.add_argument("--remove", metavar="IDS", help="comma- or space-separated ids, or a JSON list")
    trim.add_argument("--filter", action="append", default=[], choices=FILTERS,
                      help="remove the entries of this audit category (repeatable)")
    trim.add_argument("--corpus", action="append", default=[], metavar="FILE",
                      help="corpus for the residue/never-used filters (repeatable; default: a run's own files)")
    trim.add_argument("--held-out", action="append", default=[], metavar="FILE",
                      help="text to measure the token-count change on (repeatable; default: the corpus)")
    trim.add_argument("--threshold", type=float, default=DEFAULT_RESIDUE_THRESHOLD, metavar="R")
    trim.add_argument("--compact", action="store_true", help="renumber the kept ids densely (default: keep them)")
    trim.add_argument("--project", help="store the trimmed tokenizer as a new run of this project")
    trim.add_argument("--out", help="also write it to a file (format from --format)")
    trim.add_argument("--format", default=None, help="export format for --out (default: the source's family's first)")
    trim.add_argument("--name", default="", help="the new run's name")
    trim.add_argument("--pattern", help=argparse.SUPPRESS)
    trim.add_argument("--dry-run", action="store_true", help="show what would be removed (count, share of the "
                      "vocabulary, cascade, token change); store and write nothing")
    trim.add_argument("--yes", action="store_true", help="do a large trim (more than 10 %% of the vocabulary, the "
                      "cascade included), which is otherwise refused with its scale")
    trim.add_argument("--json", action="store_true")


def check_threshold(value: float) -> None:
    from workbench.errors import WorkbenchError

    if not 0 < value <= 1:
        raise WorkbenchError(f"--threshold {value:g}: a residue threshold is above 0 and at most 1 "
                             f"(default {DEFAULT_RESIDUE_THRESHOLD:g})")


def cmd_audit(args: argparse.Namespace) -> int:
    from workbench.cli import _corpus_sources, _end_progress_line, _progress_line
    from workbench.formats.tables import csv_text
    from workbench.tasks.audit import CSV_HEADER, audit_source, describe

    check_threshold(args.threshold)
    sources = _corpus_sources(args.files, "audit") if args.files else []
    report = audit_source(args.tokenizer, sources, threshold=args.threshold, pattern=args.pattern,
                          progress=_progress_line("audit"))
    assert report is not None  # nothing asks it to stop
    _end_progress_line()
    for warning in report.warnings:
        print(f"workbench audit: note: {warning}", file=sys.stderr)
    ids = report.audit.ids(args.only) if args.only else None
    if args.json:
        rows = [dict(zip(CSV_HEADER, row)) for row in report.rows(ids)]
        counts = report.summary()
        # the names PRODUCT.md's CLI block promises beside ours: ill_formed_utf8, residue
        counts.update(ill_formed_utf8=counts.get("ill_formed"), residue=counts.get("residues"))
        print(json.dumps({"counts": counts, "rows": rows}, ensure_ascii=False))
    elif args.csv:
        sys.stdout.write(csv_text(CSV_HEADER, report.rows(ids)))
    else:
        print("\n".join(describe(report)))
    return 0


def cmd_trim(args: argparse.Namespace) -> int:
    from workbench.cli import _corpus_sources
    from workbench.tasks.trim import describe_trim, trim_source

    check_threshold(args.threshold)
    corpus = _corpus_sources(args.corpus, "trim") if args.corpus else []
    held = _corpus_sources(args.held_out, "trim") if args.held_out else []
    result = trim_source(args.tokenizer, remove=args.remove, filters=args.filter, corpus=corpus, held_out=held,
                         threshold=args.threshold, compact=args.compact, project=args.project, out=args.out,
                         fmt=args.format, name=args.name, pattern=args.pattern, dry_run=args.dry_run, yes=args.yes)
    if args.json:
        print(json.dumps(result.as_dict(), ensure_ascii=False))
    else:
        print("\n".join(describe_trim(result)))
    return 0


AUDIT_COMMANDS = {"audit": cmd_audit, "trim": cmd_trim}
