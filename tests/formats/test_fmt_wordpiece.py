"""WordPiece exports (tokenizer.json, vocab.txt) load in the real ``tokenizers`` and give our ids;
both import back as ``model="wordpiece"`` tokenizers that encode the same."""

from __future__ import annotations

import functools
import json

import pytest
from fmt_helpers import CORPORA, HARD_TEXTS

from workbench.core.count import count_pretokens
from workbench.core.encoder import Encoder
from workbench.core.wordpiece import WordPieceConfig, train
from workbench.errors import WorkbenchError
from workbench.formats import load_tokenizer_file
from workbench.formats.export import export_tokenizer

tokenizers = pytest.importorskip("tokenizers")

EXTRA = ["control \x1b[33mcolour\x1b[0m \x00 nul \u200b zero-width, Σ final ΣΑΣ, İ, ﬁ", "x" * 120 + " long word",
         "上海自来水来自海上 — 中文 and 한국어 mixed", "naïve café ÅNGSTRÖM"]


def corpus_sample(chars: int = 30000) -> list[str]:
    texts = []
    for path in sorted(CORPORA.glob("*.txt")):
        text = path.read_text(encoding="utf-8")[:chars]
        texts.append(text[: text.rfind("\n") + 1])
    if not texts:
        pytest.skip("the shared corpora are not available")
    return texts


@functools.cache
def trained_with(name: str):
    normalizer = () if name == "none" else (name,)
    counts = count_pretokens(corpus_sample(), pretokenizer="bert", normalizer=normalizer)
    tok, _ = train(counts, WordPieceConfig(vocab_size=2500, score="frequency", normalizer=normalizer))
    return tok


@pytest.fixture(params=["bert", "bert-lower", "none"])
def trained(request):
    return trained_with(request.param)


def samples() -> list[str]:
    return HARD_TEXTS + EXTRA + [text[:8000] for text in corpus_sample()]


def test_hf_export_loads_and_gives_our_ids(tmp_path, trained):
    out = tmp_path / "tokenizer.json"
    result = export_tokenizer(trained, "hf", out)
    assert any("tokenizers" in check for check in result.checks)
    document = json.loads(out.read_text("utf-8"))
    assert document["model"]["type"] == "WordPiece"
    assert document["decoder"] == {"type": "WordPiece", "prefix": "##", "cleanup": False}
    if trained.normalizer:
        assert document["normalizer"]["type"] == "BertNormalizer"
        assert document["pre_tokenizer"] == {"type": "BertPreTokenizer"}
    else:
        # No BERT normalizer pads CJK: the file splits ideographs itself, as our bert preset does.
        assert [p["type"] for p in document["pre_tokenizer"]["pretokenizers"]] == ["BertPreTokenizer", "Split"]
    hf = tokenizers.Tokenizer.from_file(str(out))
    ours = Encoder(trained)
    unknown = trained.special_tokens["[UNK]"]
    seen_unknown = False
    for text in samples():
        expected = hf.encode(text).ids  # default options: no [CLS]/[SEP] that the run never asked for
        assert ours.encode(text) == expected
        assert ours.decode(expected) == hf.decode(expected, skip_special_tokens=False)
        seen_unknown = seen_unknown or unknown in expected
    assert seen_unknown
    assert document["post_processor"] is None  # special-token roles are not a run setting yet


def test_hf_export_imports_back_as_wordpiece(tmp_path, trained):
    out = tmp_path / "tokenizer.json"
    export_tokenizer(trained, "hf", out)
    back = load_tokenizer_file(out)
    assert back.model == "wordpiece" and back.continuing_prefix == "##" and back.unk_token == "[UNK]"
    assert back.normalizer == trained.normalizer and back.pretokenizer == "bert"
    assert back.vocab == trained.vocab and back.special_tokens == trained.special_tokens
    ours, theirs = Encoder(trained), Encoder(back)
    for text in samples():
        assert theirs.encode(text) == ours.encode(text)


def test_vocab_txt_loads_in_tokenizers_and_imports_back(tmp_path):
    """vocab.txt carries no normalizer and BERT loaders lowercase by default: a lowercasing run's
    file gives its ids in the default loaders and reads back lowercasing; a cased run is refused."""
    trained = trained_with("bert-lower")
    out = tmp_path / "vocab.txt"
    with pytest.raises(WorkbenchError, match="BERT loaders lowercase by default"):
        export_tokenizer(trained_with("bert"), "wordpiece", out)
    assert not out.exists()
    export_tokenizer(trained, "wordpiece", out)
    lines = out.read_text("utf-8").split("\n")
    assert lines[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] and len(lines) == len(trained.vocab) + 1
    from tokenizers import BertWordPieceTokenizer, models

    bert = BertWordPieceTokenizer(str(out))  # the loader's defaults
    plain = tokenizers.Tokenizer(models.WordPiece.from_file(str(out), unk_token="[UNK]"))
    plain.normalizer = tokenizers.normalizers.BertNormalizer()
    plain.pre_tokenizer = tokenizers.pre_tokenizers.BertPreTokenizer()
    back = load_tokenizer_file(out)
    assert back.model == "wordpiece" and back.normalizer == ("bert-lower",) and back.pretokenizer == "bert"
    ours, reread = Encoder(trained), Encoder(back)
    for text in samples():
        expected = ours.encode(text)
        assert bert.encode(text, add_special_tokens=False).ids == expected
        assert plain.encode(text, add_special_tokens=False).ids == expected
        assert reread.encode(text) == expected


def test_lowercase_vocab_txt_is_read_as_uncased(tmp_path):
    (tmp_path / "vocab.txt").write_text("[PAD]\n[UNK]\nthe\n##ing\nrun\n", "utf-8")
    tok = load_tokenizer_file(tmp_path / "vocab.txt")
    assert tok.model == "wordpiece" and tok.normalizer == ("bert-lower",)
    assert Encoder(tok).encode("The RUNNING") == [2, 1]  # "running": "run" + "##n…" fails → [UNK]
    assert Encoder(tok).encode("Running") == [1] and Encoder(tok).encode("RUN") == [4]


def test_any_bert_normalizer_setting_encodes_as_the_library_does(tmp_path):
    """BertNormalizer settings no preset of ours names are kept in the imported pipeline."""
    out = tmp_path / "t.json"
    export_tokenizer(trained_with("bert-lower"), "hf", out)
    document = json.loads(out.read_text("utf-8"))
    document["normalizer"] = {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": False,
                              "strip_accents": None, "lowercase": True}
    out.write_text(json.dumps(document), "utf-8")
    real = tokenizers.Tokenizer.from_file(str(out))
    tok = load_tokenizer_file(out)
    for text in ("Héllo 数字文字 World", "ÀB\tc"):
        assert Encoder(tok).encode(text) == real.encode(text, add_special_tokens=False).ids


def test_tokenizer_json_from_tokenizers_itself_imports(tmp_path):
    """A file the library wrote (its defaults: uncased BERT, cleanup on) reads as WordPiece."""
    from tokenizers import BertWordPieceTokenizer

    lines = corpus_sample(20000)
    bert = BertWordPieceTokenizer()  # lowercase=True, strip_accents=None → accents stripped
    bert.train_from_iterator(lines, vocab_size=1500, show_progress=False)
    path = tmp_path / "bert.json"
    bert.save(str(path))
    tok = load_tokenizer_file(path)
    assert tok.model == "wordpiece" and tok.normalizer == ("bert-lower",) and tok.pretokenizer == "bert"
    enc = Encoder(tok)
    for text in HARD_TEXTS + EXTRA:
        assert enc.encode(text) == bert.encode(text, add_special_tokens=False).ids


def test_bert_pre_tokenizer_without_bert_normalizer_keeps_cjk_runs_as_the_library_does(tmp_path):
    from tokenizers import models, pre_tokenizers

    from workbench.formats.detect import import_tokenizer

    tok = tokenizers.Tokenizer(models.WordPiece({"[UNK]": 0, "a": 1, "##b": 2}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    path = tmp_path / "plain.json"
    tok.save(str(path))
    result = import_tokenizer(path)
    assert result.tokenizer.model == "wordpiece" and result.tokenizer.normalizer == ()
    assert Encoder(result.tokenizer).encode("ab a abz") == [1, 2, 1, 0]
    assert Encoder(result.tokenizer).encode("a 数字 ab") == tok.encode("a 数字 ab").ids == [1, 0, 1, 2]


@pytest.mark.parametrize("fmt", ["hf", "wordpiece", "merges-csv"])  # the formats that fit a WordPiece
def test_training_scores_leave_every_export_byte_identical(tmp_path, fmt):
    """Trained WordPiece tokenizers now carry per-id scores (for the Merges tab); no file format
    may change because of them."""
    from dataclasses import replace

    tok = trained_with("bert-lower")  # vocab.txt fits a lowercasing run only
    assert any(tok.scores), "the trainer hands its merge scores to the tokenizer"
    written = {}
    for label, t in (("scored", tok), ("bare", replace(tok, scores=()))):
        out = tmp_path / label / "out"
        out.parent.mkdir()
        export_tokenizer(t, fmt, out)
        written[label] = sorted((p.name, p.read_bytes()) for p in out.parent.rglob("*") if p.is_file())
    assert written["scored"] == written["bare"] and written["scored"]
