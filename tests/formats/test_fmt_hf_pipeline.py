"""An imported tokenizer.json keeps its whole pipeline and runs it as ``tokenizers`` does.

Real pipelines are built with the library's own API (BERT, RoBERTa byte-level BPE with added
tokens of every flag, Llama ▁ BPE with byte fallback in both published forms, T5 Unigram with a
real SentencePiece Precompiled map; see ``tests/hf_pipelines.py``), trained on a few hundred lines
of the shared corpora, saved and imported. Each stage is held equal to the library's own stage
function — ``normalizer.normalize_str``, ``pre_tokenizer.pre_tokenize_str``, ``encode`` (with and
without special tokens), ``decode`` (with and without skipping them) — on a corpus slice and on
hostile Unicode.
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import pytest
from shared_corpora import CORPUS_FILES, require_corpora

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hf_pipelines import BUILDERS, save  # noqa: E402

from workbench.core.encoder import Encoder  # noqa: E402
from workbench.errors import WorkbenchError  # noqa: E402
from workbench.formats import load_tokenizer_file  # noqa: E402

HOSTILE = [
    "e\u0301 cafe\u0301 a\u0308\u0301 Z\u0351\u0352", "👨\u200d👩\u200d👧 family 🏳️\u200d🌈", "שלום עולם مرحبا بالعالم",
    "a\x00b\x00", "  lead  trail  ", "", " ", "\t\n", "Hello <mask> world", "x[ROW]   y", "so the end.",
    "the endless", "a fine ﬁne day", "q @@ r", "<s>hi</s> <unk>", "[CLS] [SEP] [MASK] [UNK]", "ＦＵＬＬ① ｶﾀｶﾅ",
    "don't do not", "I'm ok , yes . no !", "数字文字 mixed漢字and", "▁already▁marked", "<0x41> literal",
    "\u200b\ufeff\u00a0nbsp", "x\ufffdy",
]


@pytest.fixture(scope="module")
def corpus_lines() -> list[str]:
    require_corpora()
    lines: list[str] = []
    for path in CORPUS_FILES:
        with open(path, encoding="utf-8") as handle:
            lines.extend(line.rstrip("\n") for line in itertools.islice(handle, 150))
    return lines


@pytest.fixture(scope="module")
def built(corpus_lines, tmp_path_factory):
    root = tmp_path_factory.mktemp("pipelines")
    out = {}
    for name, builder in BUILDERS.items():
        real = builder(corpus_lines)
        out[name] = (real, load_tokenizer_file(save(real, root, name)))
    return out


@pytest.mark.parametrize("name", list(BUILDERS))
def test_every_stage_equals_the_library(built, corpus_lines, name):
    real, tok = built[name]
    encoder = Encoder(tok)
    pipe = tok.pipeline
    assert pipe is not None
    texts = HOSTILE + corpus_lines[::9]
    for text in texts:
        normalized = real.normalizer.normalize_str(text) if real.normalizer else text
        assert pipe.normalize(text) == normalized, text
        if real.pre_tokenizer is not None:
            expected = [(p, tuple(span)) for p, span in real.pre_tokenizer.pre_tokenize_str(normalized)]
            assert [(p, tuple(span)) for p, span in pipe.pre_tokenize(normalized)] == expected, text
        plain = real.encode(text, add_special_tokens=False)
        assert encoder.encode(text) == plain.ids, (text, plain.tokens)
        # the library's token strings, but for added tokens and [UNK] (it shows the text they matched)
        model_tokens = [(i, t) for i, t in zip(plain.ids, plain.tokens)
                        if i not in pipe.token_of_id and i != encoder.unknown_id]
        assert [(i, encoder.hf_token(i)) for i, _t in model_tokens] == model_tokens
        wrapped = real.encode(text)
        assert encoder.encode(text, add_special_tokens=True) == wrapped.ids, text
        for skip in (True, False):
            assert encoder.decode(wrapped.ids, skip_special_tokens=skip) == real.decode(wrapped.ids, skip_special_tokens=skip)


def test_added_tokens_keep_their_flags_and_each_flag_acts(built):
    real, tok = built["roberta"]
    flags = {t.content: t for t in tok.pipeline.added_tokens}
    assert flags["<mask>"].lstrip and flags["<mask>"].special and not flags["<mask>"].normalized
    assert flags["[ROW]"].rstrip and not flags["[ROW]"].special
    assert flags["the end"].single_word and flags["ﬁne"].normalized and flags["@@"].lstrip and flags["@@"].rstrip
    segments = {s.token.content: s for s in tok.pipeline.segments("a <mask> b[ROW]  c the end the endless fine")
                if s.token is not None}
    assert segments["<mask>"].piece.text == " <mask>" and segments["<mask>"].flags == ("lstrip",)
    assert segments["[ROW]"].piece.text == "[ROW]  " and segments["[ROW]"].flags == ("rstrip",)
    assert segments["the end"].flags == ("single_word",)
    assert segments["ﬁne"].piece.text == "fine"  # found in the NFKC-normalized text


def test_a_lone_surrogate_escaped_in_the_json_is_refused_in_one_line_as_the_library_refuses(tmp_path, built):
    import tokenizers

    real, _tok = built["llama"]
    document = json.loads(real.to_str())
    document["added_tokens"].append({"id": len(document["model"]["vocab"]), "content": "\ud800<odd>",
                                     "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
                                     "special": True})
    path = tmp_path / "surrogate.json"
    path.write_text(json.dumps(document, ensure_ascii=True), encoding="utf-8")
    with pytest.raises(Exception, match="hex escape"):  # noqa: B017 - the library's own error type
        tokenizers.Tokenizer.from_file(str(path))
    with pytest.raises(WorkbenchError, match=r"surrogate\.json: added token .* lone surrogate \(U\+D800\)"):
        load_tokenizer_file(path)


def test_the_pipeline_survives_the_project(tmp_path, built):
    from workbench.tasks.import_export import import_reference
    from workbench.tasks.sources import load_tokenizer

    real, _tok = built["bert"]
    path = save(real, tmp_path, "bert")
    ref = import_reference(path, tmp_path / "p.tokproj")
    back = load_tokenizer(f"{tmp_path / 'p.tokproj'}#ref:{ref.ref_id}")
    assert back.pipeline is not None and back.pipeline.pre_tokenizer == {"type": "BertPreTokenizer"}
    text = "Héllo, WORLD! 数字 don't"
    assert Encoder(back).encode(text, add_special_tokens=True) == real.encode(text).ids
