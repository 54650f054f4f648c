"""The vocabulary-size sweep of WordPiece and Unigram runs, and one definition of a sequence for L².

Real runs on slices of the shared corpora, real encoders as the reference: every WordPiece point is
the run's encoder limited to its first k merges; the Unigram point at the final size is the run's own
encoding; the pruning checkpoints go through the project file and ``workbench sweep``; BPE, WordPiece
and Unigram see the same sequences in a file (line breaks found before a normalizer rewrites them).
"""

from __future__ import annotations

import json
import sqlite3
from itertools import pairwise

import pytest
from compare_helpers import corpus_slice

from workbench.core import unigram, wordpiece
from workbench.core.corpus_metrics import count_text, sequence_pretokens
from workbench.core.count import count_pretokens
from workbench.core.encoder import Encoder
from workbench.core.model import Tokenizer
from workbench.core.vocab_sweep import (
    held_out,
    sweep,
    unigram_checkpoints,
    with_pieces,
    wordpiece_checkpoints,
)


@pytest.fixture(scope="module")
def held_text(corpora) -> str:
    return corpus_slice(corpora, "en_wiki_taylorswift.txt", 30_000)


@pytest.fixture(scope="module")
def wordpiece_run(corpora) -> Tokenizer:
    text = corpus_slice(corpora, "en_shakespeare.txt", 80_000)
    counts = count_pretokens([text], pretokenizer="bert", normalizer=("bert",))
    tok, _ = wordpiece.train(counts, wordpiece.WordPieceConfig(vocab_size=600))
    return tok


@pytest.fixture(scope="module")
def unigram_trainer(corpora) -> unigram.UnigramTrainer:
    text = corpus_slice(corpora, "en_shakespeare.txt", 80_000)
    trainer = unigram.UnigramTrainer(unigram.count_spm_words(text.splitlines()), unigram.UnigramConfig(vocab_size=800))
    for _event in trainer.run():
        pass
    return trainer


def _chunks(text: str, lines: int = 40) -> list[str]:
    parts = text.splitlines(keepends=True)
    return ["".join(parts[i : i + lines]) for i in range(0, len(parts), lines)]


def test_wordpiece_points_are_the_run_as_of_k_merges(wordpiece_run, held_text):
    result = sweep(wordpiece_run, held_out(wordpiece_run, _chunks(held_text)), points=9)
    steps = [p.step for p in result.points]
    assert steps == [0, 62, 124, 186, 248, 309, 371, 433, 495] and len(wordpiece_run.merges) == 495
    sizes = [p.vocab_size for p in result.points]
    assert all(a < b for a, b in pairwise(sizes)) and sizes[-1] == len(wordpiece_run.vocab) == 600
    assert {p.kind for p in result.points} == {"merges"}
    for point in result.points:  # greedy longest match over exactly the pieces made so far
        limited = Encoder(wordpiece_run, max_merges=point.step)
        assert point.tokens == len(limited.encode(held_text))
        assert point.vocab_size == len(set(limited._wordpiece.lookup.values()))
    _tally, own = count_text(wordpiece_run, [held_text])
    assert (result.points[-1].tokens, result.points[-1].attention) == (own.tokens, own.attention)
    assert result.points[0].tokens > result.points[-1].tokens
    # The shared table with "made before merge k" gives what a fresh encoder per point gives.
    fresh = sweep(wordpiece_run, held_out(wordpiece_run, _chunks(held_text)), points=9,
                  checkpoints=wordpiece_checkpoints)
    assert [(p.tokens, p.attention) for p in fresh.points] == [(p.tokens, p.attention) for p in result.points]


def test_wordpiece_token_counts_can_rise_with_a_merge(corpora):
    """Why the docstring promises no monotone L: greedy longest match takes a new piece even when
    the rest of the word then splits worse (``d ##ann`` → ``da ##n ##n`` once ``da`` exists)."""
    text = corpus_slice(corpora, "de_zitate.txt", 200_000)
    counts = count_pretokens([text], pretokenizer="bert", normalizer=("bert",))
    tok, _ = wordpiece.train(counts, wordpiece.WordPieceConfig(vocab_size=2000, score="frequency"))
    new = tok.merges[64][2]
    assert tok.vocab[new] == b"da"
    before, after = Encoder(tok, max_merges=64), Encoder(tok, max_merges=65)
    texts = before._wordpiece.texts
    assert [texts[i] for i in before.encode("dann")] == ["d", "##ann"]
    assert [texts[i] for i in after.encode("dann")] == ["da", "##n", "##n"]
    result = sweep(tok, held_out(tok, ["dann\n"]), points=len(tok.merges) + 1)
    assert (result.points[64].tokens, result.points[65].tokens) == (2, 3)


def test_unigram_checkpoints_cuts_and_the_final_point(unigram_trainer, held_text):
    tok = unigram_trainer.tokenizer()
    cps = unigram_trainer.checkpoints
    assert len(cps) >= 2
    assert all(len(cp.pieces) == len(cp.scores) for cp in cps)
    assert all(3 + len(cp.pieces) <= 4 * 800 for cp in cps)  # kept from 4 × the target down
    assert [cp.step for cp in cps] == sorted(cp.step for cp in cps)
    assert all(len(a.pieces) > len(b.pieces) for a, b in pairwise(cps))
    result = sweep(tok, held_out(tok, _chunks(held_text)), points=9, checkpoints=unigram_checkpoints(cps))
    kinds = [p.kind for p in result.points]
    assert kinds == ["cut"] * 9 + ["pruning round"] * len(cps)
    sizes = [p.vocab_size for p in result.points]
    assert all(a < b for a, b in pairwise(sizes))
    final = result.points[8]
    assert final.vocab_size == len(tok.vocab) == 800
    lines = held_text.splitlines()
    own = [len(Encoder(tok).encode(line)) for line in lines]
    assert (final.tokens, final.attention) == (sum(own), sum(n * n for n in own))
    _tally, counted = count_text(tok, [held_text])
    assert (final.tokens, final.attention) == (counted.tokens, counted.attention)
    # Each pruning point is Viterbi with that checkpoint's own pieces and scores.
    for point, cp in zip(result.points[9:], sorted(cps, key=lambda c: len(c.pieces))):
        model = Encoder(with_pieces(tok, cp.pieces, cp.scores))
        assert point.step == cp.step and point.tokens == sum(len(model.encode(line)) for line in lines)
    # The cut to the final size is the final model itself; every cut keeps the required characters.
    alive = {p.decode(): s for p, s in zip(tok.vocab[3:], tok.scores[3:])}
    same = with_pieces(tok, list(alive), list(alive.values()))
    assert same.vocab == tok.vocab and same.scores == tok.scores
    required = {p for p in alive if len(p) == 1}
    smallest = result.points[0]
    assert smallest.vocab_size == 3 + len(required)
    assert smallest.tokens > final.tokens > result.points[-1].tokens


def test_unigram_without_checkpoints_sweeps_the_cuts(unigram_trainer, held_text):
    tok = unigram_trainer.tokenizer()
    result = sweep(tok, held_out(tok, _chunks(held_text)), points=5)  # the registry's provider
    assert [p.kind for p in result.points] == ["cut"] * 5
    assert result.points[-1].vocab_size == 800


def _reference_lines(tok: Tokenizer, text: str) -> dict[int, int]:
    """Tokens per line as defined before: each pre-token counts toward the line it starts on (for a
    tokenizer without a normalizer)."""
    per_line: dict[int, int] = {}
    encoder = Encoder(tok)
    for a, b in tok.pre.spans(text):
        line = text.count("\n", 0, a)
        per_line[line] = per_line.get(line, 0) + len(encoder.encode(text[a:b]))
    return per_line


def test_every_model_sees_the_same_sequences(shakespeare_run, wordpiece_run, unigram_trainer, corpora):
    text = corpus_slice(corpora, "de_zitate.txt", 40_000)
    tok_u = unigram_trainer.tokenizer()
    lines = text.split("\n")
    non_blank = [i for i, line in enumerate(lines) if line.strip()]
    counted = {}
    for name, tok in (("bpe", shakespeare_run), ("wordpiece", wordpiece_run), ("unigram", tok_u)):
        tally, counts = count_text(tok, _chunks(text, 25))
        counted[name] = counts
        assert tally.lines == text.count("\n")
    assert counted["wordpiece"].sequences == counted["unigram"].sequences == len(non_blank) == 1168
    # WordPiece: BERT's normalizer makes line breaks spaces, yet L² is Σ over the file's lines.
    encoder = Encoder(wordpiece_run)
    per_line = [len(encoder.encode(line)) for line in lines]
    wp = counted["wordpiece"]
    assert wp.attention == sum(n * n for n in per_line) and wp.tokens == sum(per_line)
    assert wp.tokens == len(encoder.encode(text))  # L is still the whole text's encoding
    # BPE (no normalizer): the numbers of the old definition, unchanged. Every non-blank line is a
    # sequence here too; byte-level BPE also gives a blank line's own "\n" a token (2 such lines).
    reference = _reference_lines(shakespeare_run, text)
    bpe = counted["bpe"]
    assert bpe.attention == sum(n * n for n in reference.values())
    assert bpe.tokens == len(Encoder(shakespeare_run).encode(text))
    with_tokens = {i for i, n in reference.items() if n}
    assert set(non_blank) <= with_tokens and bpe.sequences == len(with_tokens) == len(non_blank) + 2


def test_sequence_cut_is_found_before_the_normalizer():
    from workbench.core.normalize import make_normalizer
    from workbench.core.pretokenize import make_pretokenizer

    bert, pre = make_normalizer(("bert",)), make_pretokenizer("bert")
    pieces, ends = sequence_pretokens("Hello, world\n\nBye\u3000now\nx", bert, pre)
    assert pieces == ["Hello", ",", "world", "Bye", "now", "x"] and ends == [3, 5]
    pieces, ends = sequence_pretokens("a b\n", bert, pre)
    assert pieces == ["a", "b"] and ends == [2]
    gpt2 = make_pretokenizer("gpt2")
    pieces, ends = sequence_pretokens("a\n\nb", None, gpt2)
    assert pieces == ["a", "\n", "\n", "b"] and ends == [2, 3]  # the second "\n" starts the blank line


def test_checkpoints_go_through_the_project_and_the_cli(tmp_path, corpora, capsys):
    from workbench.cli import run_cli
    from workbench.store import ProjectStore

    corpus = tmp_path / "train.txt"
    corpus.write_text(corpus_slice(corpora, "en_shakespeare.txt", 60_000), encoding="utf-8")
    held = tmp_path / "held.txt"
    held.write_text(corpus_slice(corpora, "en_wiki_taylorswift.txt", 20_000), encoding="utf-8")
    project = tmp_path / "three.tokproj"
    for model, size in (("bpe", "500"), ("wordpiece", "500"), ("unigram", "600")):
        assert run_cli(["train", str(corpus), "--project", str(project), "--model", model, "--vocab-size", size,
                        "--progress", "none"]) == 0
    capsys.readouterr()
    with ProjectStore.open(project, readonly=True) as store:
        stored = store.pruning_checkpoints(3)
        assert store.pruning_checkpoints(1) == [] and store.pruning_checkpoints(2) == []
        final = store.load_tokenizer(3)
    assert stored and all(600 < 3 + len(cp.pieces) <= 2400 for cp in stored)
    from workbench.tasks.compare import stored_checkpoints

    assert stored_checkpoints(f"{project}#3") == tuple(stored) and stored_checkpoints(str(project)) == tuple(stored)
    docs = {}
    for run in (1, 2, 3):
        assert run_cli(["sweep", f"{project}#{run}", str(held), "--points", "5", "--json", "--no-cache"]) == 0
        out = capsys.readouterr()
        docs[run] = json.loads(out.out)
        assert "note:" not in out.err
        sizes = [p["vocab_size"] for p in docs[run]["points"]]
        assert all(a < b for a, b in pairwise(sizes))
    assert {p["kind"] for p in docs[1]["points"]} == {p["kind"] for p in docs[2]["points"]} == {"merges"}
    kinds = [p["kind"] for p in docs[3]["points"]]
    assert kinds == ["cut"] * 5 + ["pruning round"] * len(stored)
    assert [p["merges"] for p in docs[3]["points"]] == [None] * len(kinds)
    at_final = docs[3]["points"][4]
    assert at_final["vocab_size"] == len(final.vocab) == 600
    assert run_cli(["stats", "--tokenizer", f"{project}#3", str(held), "--json", "--no-cache"]) == 0
    totals = json.loads(capsys.readouterr().out)["totals"][0]
    assert (at_final["tokens"], at_final["attention"]) == (totals["tokens"], totals["attention"])
    # A run from before checkpoints were kept: cut points only, and the CLI says so.
    raw = sqlite3.connect(project)
    with raw:
        raw.execute("DELETE FROM pruning_checkpoints")
    raw.close()
    assert run_cli(["sweep", f"{project}#3", str(held), "--points", "5", "--csv", "--no-cache"]) == 0
    out = capsys.readouterr()
    assert "note: no pruning checkpoints are stored" in out.err
    rows = out.out.splitlines()
    assert rows[0].endswith(",kind,step") and len(rows) == 6 and all(",cut," in r for r in rows[1:])
