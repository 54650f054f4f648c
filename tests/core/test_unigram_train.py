"""Unigram training: properties over random corpora (hypothesis) and sentencepiece as the oracle.

Properties: plain EM's piece probabilities sum to one after every M step; the final vocabulary
has exactly the requested size and keeps every character that the coverage requires; pruning
only ever shrinks the model; the trained tokenizer round-trips. On real text, our model's
held-out token count stays within 3 % of a sentencepiece model trained with the same settings.
"""

from __future__ import annotations

import gc
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.core.encoder import Encoder
from workbench.core.unigram import (
    META_PIECES,
    UnigramConfig,
    UnigramTrainer,
    count_spm_words,
    model_of,
)
from workbench.errors import ConfigError, WorkbenchError

CORPORA = Path(__file__).resolve().parents[3] / "shared" / "corpora"
ALPHABET = "abcde日本é\u0301,1"

words = st.text(alphabet=ALPHABET, min_size=1, max_size=7)
corpora = st.lists(st.lists(words, min_size=1, max_size=5).map(" ".join), min_size=3, max_size=25)


def train_counts(lines: list[str], **config) -> tuple[UnigramTrainer, list]:
    trainer = UnigramTrainer(count_spm_words(lines), UnigramConfig(**config))
    return trainer, list(trainer.run())


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corpora)
def test_plain_em_probabilities_sum_to_one(lines: list[str]) -> None:
    chars = len(set("".join(lines).replace(" ", "▁")) | {"▁"})
    trainer = UnigramTrainer(count_spm_words(lines), UnigramConfig(vocab_size=3 + chars, bayesian=False))
    for event in trainer.run():
        if event.phase == "em":
            assert math.fsum(trainer.piece_probabilities().values()) == pytest.approx(1.0, abs=1e-9)
            assert event.log_likelihood <= 0.0


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corpora, st.integers(min_value=0, max_value=6), st.booleans())
def test_exact_size_and_every_required_character(lines: list[str], extra: int, byte_fallback: bool) -> None:
    text_chars = set("".join(lines).replace(" ", "▁")) | {"▁"}
    reserved = 3 + (256 if byte_fallback else 0)
    size = reserved + len(text_chars) + extra
    trainer = UnigramTrainer(count_spm_words(lines), UnigramConfig(vocab_size=size, byte_fallback=byte_fallback))
    try:
        events = list(trainer.run())
    except WorkbenchError as exc:  # only when the corpus has fewer distinct pieces than asked
        assert "yields only" in str(exc)
        assert trainer.initial_size < size or extra > 0
        return
    tok = trainer.tokenizer()
    assert len(tok.vocab) == size == events[-1].vocab_size
    assert tok.vocab[:3] == tuple(p.encode() for p in META_PIECES)
    held = {p.decode("utf-8") for p in tok.vocab[reserved:]}
    assert text_chars <= held  # coverage 1.0 keeps every character
    sizes = [e.vocab_size for e in events if e.phase == "prune"]
    assert sizes == sorted(sizes, reverse=True)
    enc = Encoder(tok)
    for line in lines:
        ids = enc.encode(line)
        assert 0 not in ids  # nothing unknown in the training text
        assert enc.decode(ids) == line


def test_coverage_leaves_rare_characters_out() -> None:
    lines = ["aaaa bbbb aaab", "abab baba", "ab 日"]  # 日 is 1 of 22 characters
    trainer, _events = train_counts(lines, vocab_size=8, character_coverage=0.9)
    tok = trainer.tokenizer()
    assert "日".encode() not in tok.vocab
    assert [tok.vocab[i] for i in model_of(tok).encode("日")] == ["▁".encode(), b"<unk>"]


def test_bad_settings_are_one_line_errors_naming_the_setting_not_a_flag() -> None:
    with pytest.raises(ConfigError, match="vocabulary size 3 leaves no room") as err:
        UnigramTrainer({"▁a": 1}, UnigramConfig(vocab_size=3))
    assert err.value.field == "vocab_size" and "--" not in str(err.value)
    with pytest.raises(ConfigError, match="character coverage") as err:
        UnigramTrainer({"▁a": 1}, UnigramConfig(vocab_size=10, character_coverage=0.0))
    assert err.value.field == "options.character_coverage" and "--" not in str(err.value)
    trainer = UnigramTrainer({"▁ab": 1}, UnigramConfig(vocab_size=50))
    with pytest.raises(ConfigError, match="yields only") as err:
        list(trainer.run())
    assert err.value.field == "vocab_size" and "--" not in str(err.value)


def test_stop_between_steps_still_gives_the_exact_size() -> None:
    lines = (CORPORA / "en_wiki_taylorswift.txt").read_text(encoding="utf-8").split("\n")[:400]
    trainer = UnigramTrainer(count_spm_words(lines), UnigramConfig(vocab_size=300))
    steps = [0]

    def stop() -> bool:
        return steps[0] >= 3

    for _event in trainer.run(stop):
        steps[0] += 1
    assert steps[0] == 3
    assert len(trainer.tokenizer().vocab) == 300


@pytest.mark.skipif(not CORPORA.exists(), reason="shared corpora missing")
def test_token_count_close_to_sentencepiece(tmp_path: Path) -> None:
    spm = pytest.importorskip("sentencepiece")
    lines = [line for line in (CORPORA / "en_wiki_taylorswift.txt").read_text(encoding="utf-8").split("\n") if line]
    train = [line for i, line in enumerate(lines) if i % 10]
    held = [line for i, line in enumerate(lines) if i % 10 == 0]
    (tmp_path / "train.txt").write_text("\n".join(train) + "\n", encoding="utf-8")
    spm.SentencePieceTrainer.train(
        input=str(tmp_path / "train.txt"), model_prefix=str(tmp_path / "ref"), vocab_size=1000, num_threads=1,
        normalization_rule_name="identity", remove_extra_whitespaces=False, minloglevel=2)
    sp = spm.SentencePieceProcessor(model_file=str(tmp_path / "ref.model"))
    trainer, events = train_counts(train, vocab_size=1000)
    tok = trainer.tokenizer()
    ours = sum(len(model_of(tok).encode(line)) for line in held)
    theirs = sum(len(sp.encode(line)) for line in held)
    assert abs(ours / theirs - 1) < 0.03, (ours, theirs)
    shared = {p.decode() for p in tok.vocab} & {sp.id_to_piece(i) for i in range(sp.get_piece_size())}
    assert len(shared) > 0.8 * 1000
    assert events[-1].token_count == sum(
        len(model_of(tok).encode_word(w)) * c for w, c in count_spm_words(train).items())


class _CheckedTrainer(UnigramTrainer):
    """Checks every pruning step's two-best search against the textbook one, and that the cyclic
    garbage collector is paused inside the hot steps."""

    checked = 0
    gc_seen: list[bool]

    def _piece_paths(self, pieces: list[int], logs: list[float]) -> list[tuple[int, list[int]]]:
        self.gc_seen.append(gc.isenabled())
        found = super()._piece_paths(pieces, logs)
        assert len(found) == len(pieces)
        for p, got in zip(pieces, found):
            best_len, alternatives = _two_pass_paths(self, p, logs)
            assert got == (min(best_len, 2), alternatives), (self._pieces[p], got, best_len, alternatives)
            type(self).checked += 1
        return found


def _two_pass_paths(trainer: UnigramTrainer, p: int, logs: list[float]) -> tuple[int, list[int]]:
    """SentencePiece's way, as the trainer did it before: the piece's slice of the last word lattice
    that holds it, searched twice — the best path, then the best one without the piece's own edge."""
    last = getattr(trainer, "last_seen", None)
    if last is None:  # a live piece's edges stay, so its last occurrence never changes
        lattice = trainer._lattice
        last = trainer.last_seen = {q: (w, s) for w in range(len(lattice.lens))
                                    for s, _e, q in zip(*lattice.word_edges(w))}
    w, i = last[p]
    n = len(trainer._pieces[p])
    sub = [(s - i, e - i, q) for s, e, q in zip(*trainer._lattice.word_edges(w)) if s >= i and e <= i + n]

    def best_path(skip_whole: bool) -> list[int]:
        best = [-math.inf] * (n + 1)
        best[0] = 0.0
        back = [(0, -1)] * (n + 1)
        for s, e, q in sub:
            if skip_whole and s == 0 and e == n:
                continue
            cand = best[s] + logs[q]
            if cand > best[e]:
                best[e] = cand
                back[e] = (s, q)
        out, e = [], n
        while e > 0:
            e, q = back[e]
            out.append(q)
        return out

    first = best_path(False)
    return (len(first), []) if len(first) >= 2 else (1, best_path(True))


def _train_checked(lines: list[str], vocab_size: int) -> _CheckedTrainer:
    trainer = _CheckedTrainer(count_spm_words(lines), UnigramConfig(vocab_size=vocab_size))
    trainer.gc_seen = []
    for _event in trainer.run():
        pass
    return trainer


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corpora, st.integers(min_value=0, max_value=8))
def test_pruning_two_best_equals_the_textbook_search(lines: list[str], extra: int) -> None:
    chars = len(set("".join(lines).replace(" ", "▁")) | {"▁"})
    try:
        _train_checked(lines, 3 + chars + extra)
    except WorkbenchError as exc:
        assert "yields only" in str(exc)


def test_pruning_two_best_on_real_text_and_the_collector_state() -> None:
    """Real text: four languages, several pruning steps, every piece's search checked; the
    collector is paused inside pruning and back as it was afterwards (on, and off)."""
    lines = []
    for name in ("en_shakespeare.txt", "de_zitate.txt", "ru_fortunes.txt", "zh_fortunes.txt"):
        lines += (CORPORA / name).read_text(encoding="utf-8").split("\n")[:40]
    _CheckedTrainer.checked = 0
    was_on = gc.isenabled()  # off in a test process where a window's collector has started
    gc.enable()
    chars = len(set("".join(lines).replace(" ", "▁")) | {"▁"})  # (a size below 3 + chars never ends)
    trainer = _train_checked(lines, 3 + chars + 150)
    assert _CheckedTrainer.checked > 300
    assert trainer.gc_seen and not any(trainer.gc_seen)
    assert gc.isenabled()
    gc.disable()
    try:
        _train_checked(lines[:40], 3 + len(set("".join(lines[:40]).replace(" ", "▁")) | {"▁"}) + 30)
        assert not gc.isenabled()
    finally:
        if was_on:
            gc.enable()


def test_pruning_that_cannot_shrink_stops_with_a_message_instead_of_looping():
    """A pruning step that keeps every piece (here: a shrinking factor of 1) used to loop forever."""
    from workbench.core.unigram import UnigramConfig, UnigramTrainer, count_spm_words
    from workbench.corpus.demo import demo_corpus_files
    from workbench.errors import WorkbenchError

    lines = demo_corpus_files()[1].read_text(encoding="utf-8").splitlines()[:300]
    trainer = UnigramTrainer(count_spm_words(lines), UnigramConfig(vocab_size=300, shrinking_factor=1.0))
    with pytest.raises(WorkbenchError, match="pruning made no progress"):
        for _event in trainer.run():
            pass
