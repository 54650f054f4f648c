"""A Unigram word's n best segmentations (``tasks.inspection.nbest_segmentations``) and the score in
the hover for WordPiece: on real text, with the encoder and ``sentencepiece`` as oracles.

The n-best word must be cut exactly as encoding cuts it (normalizer, ▁ for spaces, the dummy ▁,
unknown runs as one ``<unk>`` or their byte pieces), so the Viterbi row is what the pane shows.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from shared_corpora import CORPORA, CORPUS_FILES, require_corpora

from workbench.core.display import token_info
from workbench.core.encoder import Encoder
from workbench.core.model import Tokenizer
from workbench.core.unigram import UnigramConfig, UnigramTrainer, count_spm_words, model_of
from workbench.tasks.inspection import NBEST_MAX, nbest_segmentations, spm_word_spans

spm = pytest.importorskip("sentencepiece")


def _lines(name: str, start: int, stop: int) -> list[str]:
    return [line for line in (CORPORA / name).read_text(encoding="utf-8").splitlines()[start:stop] if line.strip()]


def _train(lines: list[str], **config) -> Tokenizer:
    trainer = UnigramTrainer(count_spm_words(lines), UnigramConfig(**config))
    for _event in trainer.run():
        pass
    return trainer.tokenizer(name="nbest")


@pytest.fixture(scope="module")
def english() -> Tokenizer:
    require_corpora()
    return _train(_lines("en_wiki_taylorswift.txt", 0, 700) + _lines("en_shakespeare.txt", 0, 3000), vocab_size=800)


@pytest.fixture(scope="module")
def chinese_bytes() -> Tokenizer:
    """Byte fallback, rare characters left out: unknown runs become byte pieces."""
    require_corpora()
    return _train(_lines("zh_fortunes.txt", 0, 300), vocab_size=900, byte_fallback=True,
                  character_coverage=0.995)


@pytest.fixture(scope="module")
def lowercased() -> Tokenizer:
    """A normalizer that changes the text: positions must map back onto what the user typed."""
    require_corpora()
    return _train([line.lower() for line in _lines("de_zitate.txt", 0, 2000)], vocab_size=700,
                  normalizer=("nfkc", "lower"))


def _encoder_words(tok: Tokenizer, text: str) -> list[tuple[int, int, tuple[int, ...]]]:
    """(start, end, ids) per word: the encoder's own tokens, gathered by the word span they fall in."""
    tokens = Encoder(tok).encode_with_offsets(text)
    _normalized, words = spm_word_spans(tok, text)
    per: list[list[int]] = [[] for _ in words]
    k = 0
    for t in tokens:  # in order: a zero-width token (the dummy ▁) belongs to the zero-width word
        while not (words[k][1] <= t.start < words[k][2] or words[k][1] == words[k][2] == t.start == t.end):
            k += 1
        per[k].append(t.id)
    return [(start, end, tuple(ids)) for (_w, start, end), ids in zip(words, per)]


@pytest.mark.parametrize("which, name", [("english", "en_wiki_taylorswift.txt"),
                                          ("chinese_bytes", "zh_fortunes.txt"),
                                          ("english", "en_shakespeare.txt"),
                                          ("lowercased", "de_zitate.txt")])
def test_the_best_segmentation_is_what_the_encoder_gives(request, which: str, name: str) -> None:
    tok = request.getfixturevalue(which)
    model = model_of(tok)
    held = _lines(name, 900, 940) if "taylor" in name else _lines(name, 3000, 3120)  # not trained on
    compared = 0
    for line in held:
        words = model.words(tok.normalize(line) if tok.normalizer else line)
        if model.line_is_fragile(words):
            continue  # SentencePiece's float32 line sums decide there (see nbest_segmentations)
        expected = _encoder_words(tok, line)
        whole: list[int] = []
        for k, (_word, start, end) in enumerate(spm_word_spans(tok, line)[1]):
            if end == start:  # the dummy ▁ of a line that starts with a space: nothing to point at
                whole.extend(expected[k][2])
                continue
            position = start + (end - start) // 2
            found = nbest_segmentations(tok, line, position, 3)
            assert found is not None
            top = found.rows[0]
            assert top.viterbi and sum(row.viterbi for row in found.rows) == 1
            if not tok.normalizer:
                assert (found.start, found.end) == expected[k][:2]
            assert top.ids == expected[k][2], (line, found.word)
            whole.extend(top.ids)
            compared += 1
        assert whole == Encoder(tok).encode(line)
    assert compared > 300


def test_rows_are_ordered_and_their_probabilities_add_up(english: Tokenizer) -> None:
    text = "Taylor Swift performed unbelievably well at the Grammys"
    for match in re.finditer(r"\S+", text):
        found = nbest_segmentations(english, text, match.start(), NBEST_MAX)
        assert found is not None and 1 <= len(found.rows) <= NBEST_MAX
        assert text[found.start:found.end].strip() == match.group()
        log_ps = [row.log_p for row in found.rows]
        assert log_ps == sorted(log_ps, reverse=True)
        for row in found.rows:
            assert row.share == pytest.approx(math.exp(row.log_p - found.log_z), rel=1e-9)
            assert "".join(row.pieces).replace("▁", " ").strip() == match.group()
        assert 0 < found.covered <= 1 + 1e-9
        assert len({row.ids for row in found.rows}) == len(found.rows)
    # A long word has more than 20 segmentations: exactly n come back, clamped to 1..20.
    assert len(nbest_segmentations(english, "unbelievably", 0, 7).rows) == 7
    assert len(nbest_segmentations(english, "unbelievably", 0, 500).rows) == NBEST_MAX
    assert len(nbest_segmentations(english, "unbelievably", 0, 0).rows) == 1


def test_positions_pick_the_word_around_them(english: Tokenizer, lowercased: Tokenizer) -> None:
    text = "Hello world\nsecond line"
    first = nbest_segmentations(english, text, 0, 3)
    assert (first.word, first.start, first.end) == ("▁Hello", 0, 5)
    # The space before a word belongs to it (▁world); a line break stays inside a word, as encoded.
    assert nbest_segmentations(english, text, 5, 3).word == "▁world\nsecond"
    assert nbest_segmentations(english, text, len(text), 3).word == "▁line"  # the cursor at the end
    # Lowercasing: the word is found in the normalized text, its span is the typed one.
    typed = "Goethe SAGTE Etwas"
    found = nbest_segmentations(lowercased, typed, 8, 3)
    assert found.word == "▁sagte" and typed[found.start:found.end] == " SAGTE"


def test_unknown_runs_are_one_unk_or_their_bytes(english: Tokenizer, chinese_bytes: Tokenizer) -> None:
    found = nbest_segmentations(english, "a 日本語 b", 3, 5)
    assert found.word == "▁日本語"
    assert [english.vocab[i] for i in found.rows[0].ids].count(b"<unk>") == 1
    assert found.rows[0].ids == tuple(Encoder(english).encode("日本語"))
    rare = "齉"  # not among the characters the Chinese model covers
    assert rare.encode() not in chinese_bytes.vocab
    found = nbest_segmentations(chinese_bytes, f"龘{rare}", 1, 5)
    assert b"".join(chinese_bytes.vocab[i] for i in found.rows[0].ids).endswith(rare.encode())
    assert found.rows[0].ids == tuple(Encoder(chinese_bytes).encode(f"龘{rare}"))
    assert found.rows[0].pieces[-1] == "\\x" + f"{rare.encode()[-1]:02x}"


def test_sentencepiece_lists_the_same_n_best(english: Tokenizer, tmp_path: Path) -> None:
    from workbench.formats.spm_model import render_spm_model

    (tmp_path / "m.model").write_bytes(render_spm_model(english)[0])
    sp = spm.SentencePieceProcessor(model_file=str(tmp_path / "m.model"))
    words = sorted({w for line in _lines("en_wiki_taylorswift.txt", 800, 988) for w in line.split()
                    if w.isalpha() and len(w) > 4})[:120]
    checked = 0
    for word in words:
        ours = nbest_segmentations(english, word, 0, 5).rows
        theirs = sp.nbest_encode_as_ids(word, 5)
        log_ps = [row.log_p for row in ours]
        if any(abs(a - b) < 1e-4 for a, b in zip(log_ps, log_ps[1:])):
            assert {row.ids for row in ours[:-1]} <= {tuple(t) for t in theirs} | {row.ids for row in ours[-1:]}
            continue  # equal scores may come in another order
        assert [list(row.ids) for row in ours] == theirs, word
        checked += 1
    assert checked > 80


def test_other_models_have_no_n_best(english: Tokenizer) -> None:
    bpe = Tokenizer(vocab=tuple(bytes([b]) for b in range(256)), merges=())
    assert nbest_segmentations(bpe, "hello", 0, 5) is None
    assert nbest_segmentations(english, "", 0, 5) is None


# ---- WordPiece: the merge's score in the hover ---------------------------------------------------------
def _wordpiece(scores: bool) -> Tokenizer:
    """[UNK] [CLS], the characters, then two merges: h+e → he (score 0.25), he+##l → hel (0.5)."""
    vocab = [b"[UNK]", b"[CLS]", b"h", b"e", b"l", b"##e", b"##l", b"he", b"hel"]
    return Tokenizer(vocab=tuple(vocab), merges=((2, 5, 7), (7, 6, 8)), units="chars", pretokenizer="whitespace",
                     special_tokens={"[UNK]": 0, "[CLS]": 1}, unk_token="[UNK]", model="wordpiece",
                     continuing_prefix="##",
                     scores=(0.0,) * 7 + (0.25, 0.5) if scores else ())


def test_wordpiece_hover_shows_the_merge_score() -> None:
    tok = _wordpiece(scores=True)
    ids = Encoder(tok).encode("hel")
    assert ids == [8]
    info = token_info(tok, 8)
    assert (info.score, info.score_label, info.rank) == (0.5, "score", 1)
    assert token_info(tok, 7).score == 0.25
    assert token_info(tok, 2).score is None and token_info(tok, 2).kind == "base"  # a base symbol won nothing
    assert token_info(tok, 1).score is None  # a special
    assert token_info(_wordpiece(scores=False), 8).score is None  # imported: no scores kept


def test_unigram_hover_keeps_its_log_probability(english: Tokenizer) -> None:
    piece = Encoder(english).encode("Swift")[0]
    info = token_info(english, piece)
    assert info.score == english.scores[piece] and info.score_label == "log p"
    assert CORPUS_FILES  # the corpora really were read
