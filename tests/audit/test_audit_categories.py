"""The audit's numbers on vocabularies where each category is constructed on purpose (worked out
by hand in tests/audit/audit_vocabs.py), and F2's derivation rule held to the direct merge trace."""

from __future__ import annotations

import pytest
from audit_vocabs import audit_vocab, context_vocab

from workbench.core.audit import IMPOSSIBLE, PARTIAL, audit, traced_counts, utf8_status

CORPUS = {"xyz": 3, "xy": 1, "ab": 2}


def test_each_category_has_exactly_the_entries_built_for_it():
    tok = audit_vocab()
    result = audit(tok, CORPUS, threshold=0.3)
    assert result is not None
    assert result.ids("unreachable") == [258]  # abc: "b c" always merges first
    assert result.ids("model-unreachable") == [258]
    assert result.ids("context") == []
    assert result.ids("undecodable") == list(range(0x80, 0x100)) + [261]
    assert result.utf8[261] == PARTIAL and result.utf8[0xFF] == IMPOSSIBLE and result.utf8[0xE4] == PARTIAL
    s = result.summary()
    assert (s["reachable"], s["context"], s["unreachable"], s["undecodable"]) == (132, 0, 1, 129)
    assert (s["ill_formed"], s["ill_formed_impossible"]) == (129, 13)
    assert s["model_unreachable"] == 1


def test_residue_f1_f2_and_r_by_hand():
    tok = audit_vocab()
    result = audit(tok, CORPUS, threshold=0.3)
    assert result is not None and result.f1 is not None and result.f2 is not None
    x, y, z, xy, xyz, a, b, ab = ord("x"), ord("y"), ord("z"), 259, 260, ord("a"), ord("b"), 257
    assert (result.f1[xyz], result.f2[xyz]) == (3, 0)
    assert (result.f1[xy], result.f2[xy]) == (1, 3)
    assert result.ratio(xy) == pytest.approx(0.25)
    assert (result.f1[x], result.f2[x]) == (0, 4) and (result.f1[y], result.f2[y]) == (0, 4)
    assert (result.f1[z], result.f2[z]) == (0, 3)
    assert (result.f1[ab], result.f2[ab], result.f2[a], result.f2[b]) == (2, 0, 2, 2)
    assert result.ids("residue") == [xy]  # x, y, z have R = 0 too but are bytes, not merge-made
    assert audit(tok, CORPUS, threshold=0.25).ids("residue") == []  # R < threshold, strictly
    s = result.summary()
    assert s["residues"] == 1 and s["residue_share"] == pytest.approx(1 / 6)
    assert s["never_used"] == 262 - 3 and s["tokens"] == 3 + 1 + 2


def test_reachable_only_after_a_space():
    tok = context_vocab()
    result = audit(tok)
    assert result is not None
    assert result.ids("context") == [256]
    assert result.ids("unreachable") == []
    assert result.model_reachable is not None and result.model_reachable[256]
    assert result.f1 is None and result.f2 is None  # no corpus: reachability and UTF-8 only


def test_derivation_rule_equals_the_merge_trace():
    tok = audit_vocab()
    words = {"xyz": 5, "xyzxy": 2, "abcab": 3, "bcbc": 1, "中国": 2, "xxyy": 4}
    result = audit(tok, words)
    assert result is not None
    f1, f2 = traced_counts(tok, words)
    assert list(result.f1 or ()) == f1 and list(result.f2 or ()) == f2


@pytest.mark.parametrize(("piece", "status"), [
    ("é".encode(), ""), (b"\xe4\xb8", PARTIAL), (b"\xb8\xad", PARTIAL), (b"\xad\xe4", PARTIAL),
    (b"\xc0", IMPOSSIBLE), (b"\xff", IMPOSSIBLE), (b"\xe4a", IMPOSSIBLE), (b"\xed\xa0", IMPOSSIBLE),
    (b"\x80\x80\x80\x80", IMPOSSIBLE),
])
def test_utf8_fragments(piece, status):
    assert utf8_status(piece) == status


@pytest.fixture(scope="module")
def wordpiece_and_unigram(corpora, tmp_path_factory):
    """A WordPiece and a Unigram run trained on a Shakespeare slice (their own corpus is audited)."""
    import subprocess
    import sys

    folder = tmp_path_factory.mktemp("families")
    text = next(p for p in corpora if p.name == "en_shakespeare.txt").read_bytes()[:30_000]
    (folder / "train.txt").write_bytes(text[: text.rfind(b"\n") + 1])
    for model in ("wordpiece", "unigram"):
        subprocess.run([sys.executable, "-m", "workbench", "train", "train.txt", "--project", f"{model}.tokproj",
                        "--model", model, "--vocab-size", "300"], cwd=folder, check=True, capture_output=True)
    return folder


@pytest.mark.parametrize("model", ["wordpiece", "unigram"])
def test_models_without_merges_while_encoding_have_no_f2(wordpiece_and_unigram, model):
    from workbench.tasks.audit import audit_source

    report = audit_source(str(wordpiece_and_unigram / f"{model}.tokproj"))
    assert report is not None and report.files  # the run's own training file
    a = report.audit
    assert a.f1 is not None and a.f2 is None and a.model_reachable is None
    assert sum(a.f1) == report.summary()["tokens"] > 0
    s = report.summary()
    assert s["residues"] is None and "merges nothing while encoding" in s["residue_note"]
    assert s["undecodable"] == 0 and s["ill_formed"] == 0  # character pieces are always text
    tok = report.tokenizer
    if model == "wordpiece":  # every ## piece is found after a word start, every word start alone
        for i in range(len(tok.vocab)):
            if a.audited[i]:
                expected = "context" if tok.vocab[i].startswith(b"##") else "reachable"
                assert a.reach[i] == expected, (i, tok.vocab[i])
    else:  # a piece without ▁ is used inside words only: found in context, and emitted on the corpus
        inside = [i for i in range(len(tok.vocab)) if a.audited[i] and not tok.vocab[i].startswith("▁".encode())
                  and a.f1[i] > 0]
        assert inside and all(a.reach[i] in ("context", "reachable") for i in inside)
