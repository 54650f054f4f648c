"""Trim of a WordPiece tokenizer.json and a SentencePiece Unigram .model through ``workbench trim``:
ids kept by default (removed ids are placeholders the libraries never produce), renumbered with
--compact; the exports load in tokenizers / sentencepiece with the workbench's ids on held-out
lines; single characters (every text may need them) are refused."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from shared_corpora import CORPORA, require_corpora

from workbench.cli import run_cli
from workbench.core.encoder import Encoder
from workbench.store import ProjectStore
from workbench.tasks.sources import load_tokenizer


def _slice(folder: Path, name: str, start: int, count: int) -> Path:
    with open(CORPORA / name, encoding="utf-8") as handle:
        lines = handle.readlines()[start:start + count]
    path = folder / f"{name}.{start}"
    path.write_text("".join(lines), encoding="utf-8")
    return path


def _trim(capsys, *args: str) -> dict:
    assert run_cli(["trim", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def texts(tmp_path_factory):
    require_corpora()
    folder = tmp_path_factory.mktemp("trim_pieces")
    train = _slice(folder, "en_shakespeare.txt", 0, 1500)
    corpus = _slice(folder, "en_shakespeare.txt", 3000, 200)  # what "never used" is judged on
    held = [line.rstrip("\n") for line in _slice(folder, "en_shakespeare.txt", 20_000, 300)
            .read_text(encoding="utf-8").splitlines()]
    return folder, train, corpus, held


def test_a_trimmed_sentencepiece_model_keeps_its_ids_and_matches_sentencepiece(texts, capsys):
    spm = pytest.importorskip("sentencepiece")
    folder, train, corpus, held = texts
    spm.SentencePieceTrainer.train(input=str(train), model_prefix=str(folder / "uni"), vocab_size=600,
                                   model_type="unigram", normalization_rule_name="identity", byte_fallback=True,
                                   minloglevel=2)
    base = folder / "uni.model"
    out = folder / "trimmed.model"
    project = folder / "u.tokproj"
    result = _trim(capsys, str(base), "--filter", "never-used", "--corpus", str(corpus), "--project", str(project),
                   "--out", str(out), "--yes")
    removed = result["requested"]
    assert len(removed) > 50 and result["cascade"] == [] and result["vocab_after"] == result["vocab_before"] - len(removed)
    before = spm.SentencePieceProcessor(model_file=str(base))
    after = spm.SentencePieceProcessor(model_file=str(out))
    assert after.get_piece_size() == before.get_piece_size()  # ids kept
    gone = set(removed)
    assert all(after.is_unused(i) for i in gone)
    assert all(after.id_to_piece(i) == before.id_to_piece(i) for i in range(before.get_piece_size()) if i not in gone)
    ours = Encoder(load_tokenizer(f"{project}#{result['run_id']}"))
    assert [after.encode(line) for line in held] == [ours.encode(line) for line in held]
    assert not gone & {i for line in held for i in after.encode(line)}
    assert all(after.decode(after.encode(line)) == before.decode(before.encode(line)) for line in held)
    with ProjectStore.open(project, readonly=True) as store:
        stored = store.load_tokenizer(result["run_id"])
    assert stored.scores[:5] == load_tokenizer(str(base)).scores[:5]
    assert len(list(csv.reader(open(f"{out}.idmap.csv", encoding="utf-8")))) == 1 + result["vocab_after"]


def test_a_trimmed_wordpiece_loads_in_tokenizers_kept_or_compact(texts, capsys):
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import decoders, models, normalizers, pre_tokenizers, trainers

    folder, train, corpus, held = texts
    hf = tokenizers.Tokenizer(models.WordPiece(unk_token="[UNK]"))
    hf.normalizer = normalizers.BertNormalizer(lowercase=True)
    hf.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    hf.decoder = decoders.WordPiece()
    hf.train([str(train)], trainers.WordPieceTrainer(
        vocab_size=700, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], show_progress=False))
    base = folder / "bert.json"
    hf.save(str(base))
    single = hf.token_to_id("e")
    assert run_cli(["trim", str(base), "--remove", str(single), "--out", str(folder / "x.json")]) == 2
    assert "single character" in capsys.readouterr().err
    specials = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}
    longer = sorted(i for t, i in hf.get_vocab().items() if len(t.removeprefix("##")) > 3 and t not in specials)[:40]
    for compact in (False, True):
        out = folder / f"trimmed-{compact}.json"
        project = folder / f"w-{compact}.tokproj"
        result = _trim(capsys, str(base), "--remove", ",".join(map(str, longer)), "--held-out", str(corpus),
                       "--out", str(out), "--project", str(project), *(["--compact"] if compact else []))
        assert result["requested"] == sorted(longer) and result["lines_same_decode"] == result["lines_checked"]
        loaded = tokenizers.Tokenizer.from_file(str(out))
        # the gaps of kept ids are left out of tokenizer.json's vocab: the largest id is what stays
        assert loaded.get_vocab_size() == hf.get_vocab_size() - len(longer)
        assert max(loaded.get_vocab().values()) == hf.get_vocab_size() - 1 - (len(longer) if compact else 0)
        trimmed_ids = [loaded.encode(line, add_special_tokens=False).ids for line in held]
        ours = Encoder(load_tokenizer(f"{project}#{result['run_id']}"))
        assert trimmed_ids == [ours.encode(line) for line in held]
        assert not set(longer) & {i for ids in trimmed_ids for i in ids} or compact
        old_of = {int(new): int(old) for old, new in list(csv.reader(open(f"{out}.idmap.csv", encoding="utf-8")))[1:]}
        # every kept piece has its text at its (kept or renumbered) id
        assert all(loaded.id_to_token(new) == hf.id_to_token(old) for new, old in old_of.items())
        if not compact:
            assert all(old == new for new, old in old_of.items())
