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


# ---- the stage view (tasks.pipeline_view.stages): each stage the library's own stage function ----------
@pytest.mark.parametrize("name", list(BUILDERS))
def test_stages_equal_the_librarys_stage_functions(built, corpus_lines, name):
    from workbench.tasks.pipeline_view import stages

    real, tok = built[name]
    encoder = Encoder(tok)
    for text in HOSTILE[:12] + corpus_lines[::40]:
        found = stages(encoder, text)
        normalized = real.normalizer.normalize_str(text) if real.normalizer else text
        assert found.normalized == normalized
        assert found.normalizer_steps[-1:] == ([(found.components["normalizer"][-1], normalized)]
                                               if found.components["normalizer"] else [])
        assert len(found.alignment) == len(found.normalized) if found.normalized == normalized else True
        if real.pre_tokenizer is not None:
            assert found.pre_tokens == [(p, tuple(s)) for p, s in real.pre_tokenizer.pre_tokenize_str(normalized)]
        assert [t.id for t in found.model] == real.encode(text, add_special_tokens=False).ids
        assert found.ids == real.encode(text).ids
        assert found.decoded == real.decode(found.ids)
        assert all(0 <= a <= b <= len(text) for a, b in found.alignment)


def test_stages_name_the_flag_each_added_token_matched_by(built):
    from workbench.tasks.pipeline_view import stages

    _real, tok = built["roberta"]
    found = stages(Encoder(tok), "go <mask> the end[ROW]  now")
    assert [(m.content, m.flags, m.start) for m in found.added] == [
        ("<mask>", ("lstrip",), 2), ("the end", ("single_word",), 10), ("[ROW]", ("rstrip",), 17)]
    assert found.post_before == [("<s>", 0)] and found.post_after == [("</s>", 2)]


def test_normalized_text_maps_back_to_the_input(built):
    from workbench.tasks.pipeline_view import stages

    _real, tok = built["bert"]
    found = stages(Encoder(tok), "Ab 数 É")
    assert found.normalized == "ab  数  e"
    chars = {found.normalized[i]: span for i, span in enumerate(found.alignment) if found.normalized[i] != " "}
    assert chars == {"a": (0, 1), "b": (1, 2), "数": (3, 4), "e": (5, 6)}


# ---- round trip: which stage loses a line ------------------------------------------------------------
@pytest.mark.parametrize("name,text,cause", [
    ("bert", "Hello there", "normalizer: BertNormalizer"),
    ("bert", "twenty-one", "decoder: WordPiece (a space between every two words)"),
    ("bert", "wait . what", "decoder: WordPiece (cleanup)"),
    ("bert", "two  spaces", "pre-tokenizer: BertPreTokenizer (drops whitespace)"),
    ("bert", "price £13", "[UNK] (model)"),
    ("roberta", "Hello", "pre-tokenizer: ByteLevel (adds a space in front)"),
    (
        "roberta", " a [ROW]   b", "added token '[ROW]' (rstrip takes the whitespace beside it)",
    ),  # was blamed on the ByteLevel decoder
    ("t5", "tab\there", "pre-tokenizer: WhitespaceSplit (drops whitespace)"),
    ("t5", "full width １２", "normalizer: Precompiled"),
    ("llama-metaspace", "\t\t-- Pierre", "decoder: Metaspace (drops every ▁ of the first token)"),
    ("llama", "rare ꙮ glyph and 👩\u200d👩\u200d👧", None),  # byte fallback: survives
])
def test_round_trip_names_the_losing_stage(built, name, text, cause):
    from workbench.tasks.pipeline_view import round_trip

    real, tok = built[name]
    result = round_trip(Encoder(tok), text)
    assert result.decoded == (real.decode(real.encode(text, add_special_tokens=False).ids, skip_special_tokens=False)
                              if cause != "[UNK] (model)" or result.decoded else "")
    assert result.ok == (cause is None) and result.cause == cause, result


def test_cli_roundtrip_prints_the_share_and_first_line_per_cause(built, tmp_path):
    from hostile_helpers_path import run_cli_capture

    real, _tok = built["bert"]
    path = save(real, tmp_path, "bert")
    corpus = tmp_path / "lines.txt"
    corpus.write_text("hello world\nHello World\ntwenty-one\nsecond Upper\n", encoding="utf-8")
    code, out, _err = run_cli_capture(["roundtrip", str(path), str(corpus)])
    assert code == 0
    assert out.splitlines()[0] == "1 of 4 lines survive decode(encode(line)) == line (25.0%)"
    assert "normalizer: BertNormalizer" in out and f"{corpus}:2 'Hello World'" in out
    code, out, _err = run_cli_capture(["roundtrip", str(path), str(corpus), "--json"])
    report = json.loads(out)
    assert report["lines"] == 4 and report["survived"] == 1
    assert report["causes"]["normalizer: BertNormalizer"] == {
        "lines": 2, "first": {"file": str(corpus), "line": 2, "text": "Hello World",
                              "detail": "at character 0: 'Hello World' came back as 'hello world'"}}


@pytest.mark.parametrize("name", ["bert", "llama", "llama-metaspace"])
def test_token_offsets_equal_the_librarys(built, corpus_lines, name):
    """Each token's span in the input is the library's ``offsets`` (layouts without trim_offsets)."""
    real, tok = built[name]
    encoder = Encoder(tok)
    for text in HOSTILE[:10] + corpus_lines[::30]:
        found = encoder.pipeline_tokens(text)
        expected = real.encode(text, add_special_tokens=False)
        assert [(t.id, t.start, t.end) for t in found] == [(i, a, b) for i, (a, b) in zip(expected.ids, expected.offsets)]


def test_stats_count_tokens_as_the_library_does(built, corpus_lines, tmp_path):
    """Corpus statistics run an imported pipeline on whole lines: the token count is the library's."""
    from hostile_helpers_path import run_cli_capture

    corpus = tmp_path / "slice.txt"
    lines = [line for line in corpus_lines[::5] if line]
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    for name in ("roberta", "t5"):
        real, _tok = built[name]
        path = save(real, tmp_path, name)
        code, out, err = run_cli_capture(["stats", str(corpus), "--tokenizer", str(path), "--json"])
        assert code == 0, err
        row = json.loads(out)["per_file"][0]
        assert row["tokens"] == sum(len(real.encode(line, add_special_tokens=False).ids) for line in lines)
