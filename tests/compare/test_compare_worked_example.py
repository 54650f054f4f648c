"""PRODUCT.md worked example 1 through the metrics: 23 → 20 → 18 → 16 tokens over its three
merges, L² of the one line, and V × d for each vocabulary — in the core and through the CLI."""

from __future__ import annotations

import json

from compare_helpers import WORKED

from workbench.cli import run_cli
from workbench.core.corpus_metrics import Metrics, count_text
from workbench.core.vocab_sweep import held_out, sweep
from workbench.tasks.sources import load_tokenizer

TOKENS = [23, 20, 18, 16]
VOCAB = [12, 13, 14, 15]  # 12 distinct characters, then one entry per merge


def test_sweep_in_the_core(worked_project):
    tok = load_tokenizer(str(worked_project[0]))
    result = sweep(tok, held_out(tok, [WORKED]), points=4, d=768)
    assert [p.step for p in result.points] == [0, 1, 2, 3]
    assert [p.tokens for p in result.points] == TOKENS
    assert [p.attention for p in result.points] == [t * t for t in TOKENS]  # one line, one sequence
    assert [p.vocab_size for p in result.points] == VOCAB
    assert [p.embedding_params for p in result.points] == [9216, 9984, 10752, 11520]


def test_sweep_through_the_cli(worked_project, capsys):
    project, corpus = worked_project
    assert run_cli(["sweep", str(project), str(corpus), "--points", "4", "--d", "4", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [p["tokens"] for p in doc["points"]] == TOKENS
    assert [p["vocab_size"] for p in doc["points"]] == VOCAB
    assert [p["embedding_params"] for p in doc["points"]] == [48, 52, 56, 60]
    assert doc["knee"] is None  # every one-entry step still gains > 1 % per 1k entries
    assert run_cli(["sweep", f"{project}#1", str(corpus), "--points", "4", "--csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("merges,vocab_size,tokens,")
    assert [int(line.split(",")[2]) for line in lines[1:]] == TOKENS


def test_stats_of_the_trained_run(worked_project, capsys):
    project, corpus = worked_project
    tok = load_tokenizer(str(project))
    text, counts = count_text(tok, [WORKED])
    m = Metrics.of(tok, "run", str(corpus), "Latin", text, counts)
    assert (m.tokens, m.text.chars, m.text.words, m.counts.attention) == (16, 29, 6, 256)
    assert m.fertility == 16 / 6 and m.chars_per_token == 29 / 16
    # Used: go e s fi t un d o i z p (11 of 15); g f u n occur only inside merged tokens —
    # stepping stones of the merges, exactly the "never used" entries.
    assert m.used == 11 and m.never_used == 4
    assert m.embedding_params == 15 * 768
    assert run_cli(["stats", str(corpus), "--tokenizer", str(project), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    row = doc["per_file"][0]
    assert (row["tokens"], row["attention"], row["vocab_size"], row["embedding_params"]) == (16, 256, 15, 11520)
    assert doc["totals"][0]["never_used_sample"] == ["f", "g", "n", "u"]


def test_stats_text_keeps_the_per_file_lines(worked_project, capsys):
    """The per-file lines `workbench stats` printed before the rewrite, now with more numbers after."""
    project, corpus = worked_project
    assert run_cli(["stats", str(corpus), "--tokenizer", str(project), "--d", "100"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{corpus}: 29 bytes, 29 chars, 1 lines, 6 distinct pre-tokens; scripts: Latin 23; language Latin"
    assert out[1].startswith(f"    {project}: 16 tokens, 1.812 chars/token, fertility 2.667, 1.812 bytes/token, L² 256")
    assert "vocab used 73.33%" in out[1]
    assert any(line.split()[-1] == "1500" for line in out if "Latin" in line)  # V×d = 15 × 100
