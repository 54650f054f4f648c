"""Extending a WordPiece and a Unigram tokenizer through ``workbench extend``, with the real
libraries as oracles (``tokenizers`` for a WordPiece tokenizer.json, ``sentencepiece`` for a
Llama-style ``.model``), on slices of the shared corpora.

What must hold: every base id keeps its piece; the export loads in the base's library with the
workbench's ids on held-out lines; every new piece is produced when the library encodes the
extension corpus; a Unigram model's scores stay a distribution (logsumexp of the normal pieces'
scores equal to the base's); with the script restriction, English lines keep their ids.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from shared_corpora import CORPORA, require_corpora

from workbench.cli import run_cli
from workbench.core.encoder import Encoder
from workbench.tasks.sources import load_tokenizer


def _lines(name: str, start: int, count: int) -> list[str]:
    with open(CORPORA / name, encoding="utf-8") as handle:
        return handle.readlines()[start:start + count]


def _slice(folder: Path, name: str, count: int, start: int = 0) -> Path:
    path = folder / name
    path.write_text("".join(_lines(name, start, count)), encoding="utf-8")
    return path


def _extend(capsys, *args: str) -> dict:
    assert run_cli(["extend", *args, "--progress", "none", "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _held_out() -> list[str]:
    return [line.rstrip("\n") for line in _lines("ru_fortunes.txt", 20_000, 120) + _lines("en_shakespeare.txt", 20_000, 120)]


def test_an_extended_wordpiece_loads_in_tokenizers_with_every_base_id_kept(tmp_path, capsys):
    require_corpora()
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import decoders, models, normalizers, pre_tokenizers, trainers

    english = _slice(tmp_path, "en_shakespeare.txt", 1500)
    hf = tokenizers.Tokenizer(models.WordPiece(unk_token="[UNK]"))
    hf.normalizer = normalizers.BertNormalizer(lowercase=True)
    hf.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    hf.decoder = decoders.WordPiece()
    hf.train([str(english)], trainers.WordPieceTrainer(
        vocab_size=600, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], show_progress=False))
    base = tmp_path / "bert.json"
    hf.save(str(base))
    ru = _slice(tmp_path, "ru_fortunes.txt", 800)
    project = tmp_path / "p.tokproj"
    result = _extend(capsys, str(ru), "--base", str(base), "--add", "120", "--project", str(project),
                     "--scripts", "Cyrillic", "--reference", str(english))
    report = result["report"]
    assert result["vocab_size"] % 64  # the export's size warning below is about this
    assert result["added"] == 120 and report["rank_dead"] == 0
    assert report["reference"]["changed_lines"] == 0  # English lines keep their ids
    assert report["files"][0]["tokens_per_char_after"] < 0.8 * report["files"][0]["tokens_per_char_before"]
    out = tmp_path / "extended.json"
    assert run_cli(["export", str(project), "--format", "hf", "--out", str(out)]) == 0
    if result["vocab_size"] % 64:  # an extension's remedy is extend's own flag, not training again
        assert "extend again with --pad-to 64" in capsys.readouterr().err
    loaded = tokenizers.Tokenizer.from_file(str(out))
    assert all(loaded.id_to_token(i) == hf.id_to_token(i) for i in range(hf.get_vocab_size()))
    ours = Encoder(load_tokenizer(f"{project}#{result['run_id']}"))
    held = _held_out()
    assert [loaded.encode(line, add_special_tokens=False).ids for line in held] == [ours.encode(line) for line in held]
    first_new = report["base_vocab_size"]
    emitted = {i for line in ru.read_text(encoding="utf-8").splitlines()
               for i in loaded.encode(line, add_special_tokens=False).ids if i >= first_new}
    new_ids = set(range(first_new, loaded.get_vocab_size()))
    assert len(new_ids) == 120 and emitted == new_ids  # every new piece is produced on the extension corpus


def test_an_extended_unigram_model_loads_in_sentencepiece_and_stays_a_distribution(tmp_path, capsys):
    require_corpora()
    spm = pytest.importorskip("sentencepiece")

    english = _slice(tmp_path, "en_shakespeare.txt", 1500)
    spm.SentencePieceTrainer.train(input=str(english), model_prefix=str(tmp_path / "llama"), vocab_size=700,
                                   model_type="unigram", normalization_rule_name="identity", byte_fallback=True,
                                   minloglevel=2)
    base = tmp_path / "llama.model"
    ru = _slice(tmp_path, "ru_fortunes.txt", 800)
    project = tmp_path / "p.tokproj"
    result = _extend(capsys, str(ru), "--base", str(base), "--add", "150", "--project", str(project),
                     "--pad-to", "64")
    report = result["report"]
    assert report["new_tokens"] == 150 and report["rank_dead"] == 0 and result["vocab_size"] % 64 == 0
    out = tmp_path / "extended.model"
    assert run_cli(["export", str(project), "--format", "spm", "--out", str(out)]) == 0
    before = spm.SentencePieceProcessor(model_file=str(base))
    after = spm.SentencePieceProcessor(model_file=str(out))
    size = before.get_piece_size()
    assert [after.id_to_piece(i) for i in range(size)] == [before.id_to_piece(i) for i in range(size)]

    def logsumexp(model) -> float:
        scores = [model.get_score(i) for i in range(model.get_piece_size())
                  if not (model.is_unknown(i) or model.is_control(i) or model.is_byte(i))]
        top = max(scores)
        return top + math.log(sum(math.exp(s - top) for s in scores))

    assert logsumexp(after) == pytest.approx(logsumexp(before), abs=1e-4)
    ours = Encoder(load_tokenizer(f"{project}#{result['run_id']}"))
    held = _held_out()
    assert [after.encode(line) for line in held] == [ours.encode(line) for line in held]
    new_ids = {i for i in range(size, after.get_piece_size()) if not after.is_control(i)}
    used = {i for line in ru.read_text(encoding="utf-8").splitlines() for i in after.encode(line) if i >= size}
    assert len(new_ids) == 150 and used == new_ids  # every new piece is used on the extension corpus


def test_the_report_counts_the_characters_lost_to_unknown_not_only_unknown_tokens(tmp_path, capsys):
    """A Unigram base that cannot spell Chinese keeps a run of unknown characters as one ``<unk>``;
    an extension that learns some of them splits those runs, so it can emit more unknown tokens
    while it loses far fewer characters: the report says both, characters first."""
    require_corpora()
    english = _slice(tmp_path, "en_shakespeare.txt", 1500)
    project = tmp_path / "p.tokproj"
    assert run_cli(["train", str(english), "--project", str(project), "--model", "unigram", "--vocab-size", "600",
                    "--progress", "none"]) == 0
    capsys.readouterr()
    chinese = _slice(tmp_path, "zh_fortunes.txt", 400)
    args = [str(chinese), "--base", f"{project}#1", "--add", "120", "--project", str(tmp_path / "e.tokproj")]
    (change,) = _extend(capsys, *args)["report"]["files"]
    assert change["chars_lost_before"] > 0 and change["chars_lost_after"] < change["chars_lost_before"] / 2
    assert change["chars_lost_before"] <= change["chars"]
    assert run_cli(["extend", *args[:-1], str(tmp_path / "e2.tokproj"), "--progress", "none"]) == 0
    assert (f"characters lost to unknown {change['chars_lost_before']:,} → {change['chars_lost_after']:,}"
            in capsys.readouterr().out)


def test_a_wordpiece_base_that_cannot_spell_the_corpus_reports_what_it_lost_before(tmp_path, capsys):
    """An English WordPiece extended with Russian gets the Cyrillic characters first (alphabet_added):
    tokens "before" count them, but what "before" lost to [UNK] is the base as shipped — every Russian
    word — and nothing after."""
    require_corpora()
    english = _slice(tmp_path, "en_shakespeare.txt", 400)
    project = tmp_path / "p.tokproj"
    assert run_cli(["train", str(english), "--project", str(project), "--model", "wordpiece", "--vocab-size", "300",
                    "--progress", "none"]) == 0
    capsys.readouterr()
    russian = _slice(tmp_path, "ru_fortunes.txt", 120)
    result = _extend(capsys, str(russian), "--base", f"{project}#1", "--add", "20", "--project",
                     str(tmp_path / "e.tokproj"))
    (change,) = result["report"]["files"]
    letters = sum(ch.isalpha() and "\u0400" <= ch <= "\u04ff" for ch in russian.read_text(encoding="utf-8").lower())
    assert change["chars_lost_before"] >= letters > 500 and change["unknown_before"] > 100
    assert change["chars_lost_after"] == 0 and change["unknown_after"] == 0
