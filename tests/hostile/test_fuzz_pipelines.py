"""Importer fuzzing, the new formats (issue 25): a ``tokenizer.json`` pipeline with mutated
normalizer, pre-tokenizer, post-processor, decoder and added tokens (unknown components, a
Precompiled normalizer with a broken charsmap, added tokens that overlap or collide, templates
naming tokens that do not exist, deep nesting); an hf-folder whose ``tokenizer_config.json`` and
``special_tokens_map.json`` are hostile (the importer reads only ``tokenizer.json``: they must not
matter); a SentencePiece ``.model`` with roles (bos/eos/pad/unk ids, control and user-defined
pieces) made hostile through the official protobuf schema.

Every case runs ``import`` and ``encode`` (and ``decode`` of what encoded) through the real CLI
in-process with a time limit per command (:func:`test_fuzz_importers._check`): exit 0 or 2, on 2
one stderr line, never a traceback or a hang. Seeded and bounded (about 50 cases, a few seconds).
"""

from __future__ import annotations

import base64
import copy
import json
import random
from pathlib import Path

import pytest
from test_fuzz_importers import SAMPLE, _check, _deep

_ENDLESS_REGEX = "(a+)+$"
NORMALIZERS: list[object] = [
    None, {"type": "NFC"}, {"type": "Lowercase"}, {"type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "Lowercase"}]},
    {"type": "Precompiled", "precompiled_charsmap": "!!not base64!!"},
    {"type": "Precompiled", "precompiled_charsmap": base64.b64encode(b"\xff" * 7).decode()},
    {"type": "Precompiled", "precompiled_charsmap": base64.b64encode((2**31).to_bytes(4, "little") + b"x").decode()},
    {"type": "Precompiled", "precompiled_charsmap": ""}, {"type": "Precompiled"},
    {"type": "Replace", "pattern": {"String": " "}, "content": "▁"},
    {"type": "Replace", "pattern": {"Regex": "("}, "content": ""},
    {"type": "NoSuchNormalizer"}, {"type": "Sequence", "normalizers": "NFC"}, {"type": "Sequence", "normalizers": _deep(30)},
    {"type": "BertNormalizer", "clean_text": "yes", "lowercase": 3}, {"type": "Strip", "strip_left": True},
    {"type": "Prepend", "prepend": "▁"}, [], "NFC", 7, {"type": None},
]
PRE_TOKENIZERS: list[object] = [
    None, {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
    {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True},
    {"type": "Metaspace", "replacement": "", "prepend_scheme": "sometimes"}, {"type": "Whitespace"},
    {"type": "Split", "pattern": {"Regex": "("}, "behavior": "Isolated", "invert": False},
    {"type": "Split", "pattern": {"Regex": _ENDLESS_REGEX}, "behavior": "Isolated", "invert": False},
    {"type": "Split", "pattern": {"String": ""}, "behavior": "Removed", "invert": True},
    {"type": "Split", "pattern": 5, "behavior": "Nope"}, {"type": "Digits", "individual_digits": True},
    {"type": "Sequence", "pretokenizers": [{"type": "Unknown"}]}, {"type": "Sequence", "pretokenizers": _deep(30)},
    {"type": "BertPreTokenizer"}, {"type": "Punctuation", "behavior": "Isolated"}, {"type": "UnicodeScripts"},
    {"type": "NoSuchPreTokenizer"}, [], 0,
]
POST_PROCESSORS: list[object] = [
    None, {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
    {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<nope>", "type_id": 0}},
                                              {"Sequence": {"id": "A", "type_id": 0}}],
     "pair": [], "special_tokens": {"<nope>": {"id": "<nope>", "ids": [2**40], "tokens": ["<nope>"]}}},
    {"type": "TemplateProcessing", "single": "<|endoftext|> $A", "pair": 5, "special_tokens": {}},
    {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}}],
     "pair": [], "special_tokens": {"<|endoftext|>": {"id": "<|endoftext|>", "ids": [-1, 0], "tokens": []}}},
    {"type": "RobertaProcessing", "sep": ["</s>", 2**63], "cls": ["<s>", 0], "trim_offsets": True, "add_prefix_space": True},
    {"type": "BertProcessing", "sep": ["[SEP]"], "cls": "x"}, {"type": "Sequence", "processors": [{"type": "Unknown"}]},
    {"type": "Sequence", "processors": _deep(30)}, {"type": "NoSuchProcessor"}, "x",
]
DECODERS: list[object] = [
    None, {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
    {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True},
    {"type": "WordPiece", "prefix": "##", "cleanup": True}, {"type": "ByteFallback"}, {"type": "Fuse"},
    {"type": "Strip", "content": " ", "start": 10**9, "stop": -1}, {"type": "Replace", "pattern": {"Regex": "("}, "content": ""},
    {"type": "Sequence", "decoders": [{"type": "ByteFallback"}, {"type": "Unknown"}]},
    {"type": "Sequence", "decoders": _deep(30)},
    {"type": "NoSuchDecoder"}, [], 3,
]


def _added_tokens(doc: dict, rng: random.Random) -> object:
    """Overlapping, colliding, out-of-range or malformed ``added_tokens``."""
    vocab = doc["model"]["vocab"]
    size = len(vocab) + len(doc.get("added_tokens") or [])
    piece, pid = rng.choice(sorted(vocab.items(), key=lambda kv: kv[1])[256:] or list(vocab.items()))

    def entry(content, id_, special=True, **more):
        return {"id": id_, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
                "normalized": not special, "special": special, **more}

    choices = [
        [entry("<|endoftext|>", size), entry("<|endoftext", size + 1), entry("endoftext|>", size + 2)],  # overlapping
        [entry("<|x|>", size), entry("<|x|>", size + 1)],  # one content, two ids
        [entry("<|a|>", size), entry("<|b|>", size)],  # two contents, one id
        [entry("<|y|>", pid)],  # an id the model gives another piece
        [entry(piece, pid + 1 if pid + 1 < size else 0)],  # a model piece at another id
        [entry(piece, pid, special=False)],  # a model piece again, not special
        [entry("", size)], [entry("<|z|>", 2**63)], [entry("<|z|>", -1)], [entry("<|z|>", "7")],
        [entry("<|z|>", size, lstrip=True, rstrip=True, single_word=True, normalized=True)],
        [entry("a", size), entry("ab", size + 1), entry("abc", size + 2)],  # nested overlaps
        [{"content": "<|q|>"}], [7], "tokens", {"id": size, "content": "<|z|>"},
        [entry("<|w|>", size + 1000)],  # a gap of a thousand ids
    ]
    return copy.deepcopy(rng.choice(choices))


SLOTS = {"normalizer": NORMALIZERS, "pre_tokenizer": PRE_TOKENIZERS, "post_processor": POST_PROCESSORS,
         "decoder": DECODERS}


def _run_case(target: Path, project: Path, case: str, failures: list[str]) -> int:
    code, out = _check(["import", str(target), "--project", str(project)], case, failures)
    if code == 0:
        ref = out.split(" as reference ")[1].split(" ")[0]
        src = f"{project}#ref:{ref}"
        enc_code, enc_out = _check(["encode", "--tokenizer", src, "--text", SAMPLE, "--json"], case, failures)
        if enc_code == 0 and json.loads(enc_out)["ids"]:
            _check(["decode", "--tokenizer", src, "--ids", ",".join(map(str, json.loads(enc_out)["ids"]))],
                   case, failures)
    _check(["encode", "--tokenizer", str(target), "--text", SAMPLE], case, failures)
    return code


def test_mutated_tokenizer_json_pipelines_import_or_refuse_in_one_line(exports, tmp_path):
    rng = random.Random("hostile-pipelines")
    base = json.loads(exports["hf"].read_text("utf-8"))
    project = tmp_path / "fuzz.tokproj"
    failures: list[str] = []
    codes = []
    for n in range(40):
        doc = copy.deepcopy(base)
        changed = rng.sample([*SLOTS, "added_tokens"], rng.randint(1, 3))
        for slot in changed:
            doc[slot] = _added_tokens(doc, rng) if slot == "added_tokens" else copy.deepcopy(rng.choice(SLOTS[slot]))
        target = tmp_path / f"case{n}.json"
        target.write_text(json.dumps(doc, ensure_ascii=False), "utf-8")
        codes.append(_run_case(target, project, f"pipeline#{n} ({', '.join(changed)})", failures))
    assert not failures, f"{len(failures)} broken cases:\n" + "\n".join(failures[:8])
    assert 0 in codes and 2 in codes, codes  # some pipelines are read, some refused: both halves tested


HOSTILE_CONFIG: list[object] = [
    {"tokenizer_class": "NoSuchTokenizer", "model_max_length": 2**70, "bos_token": {"content": 5}},
    {"added_tokens_decoder": {"99999999": {"content": "<x>", "special": True}}, "eos_token": "<absent>"},
    {"chat_template": "{% for m in messages %}{{ m }}" * 100, "pad_token": None, "unk_token": []},
    _deep(500), "not an object", {"auto_map": {"AutoTokenizer": ["evil.Tokenizer", None]}},
]


def test_an_hf_folder_with_hostile_config_files_imports_from_its_tokenizer_json(exports, tmp_path):
    rng = random.Random("hostile-hf-folder")
    project = tmp_path / "fuzz.tokproj"
    failures: list[str] = []
    for n in range(6):
        folder = tmp_path / f"folder{n}"
        folder.mkdir()
        (folder / "tokenizer.json").write_bytes(exports["hf"].read_bytes())
        for name in ("tokenizer_config.json", "special_tokens_map.json"):
            value = rng.choice(HOSTILE_CONFIG)
            text = json.dumps(value) if n % 3 else "{" * 3 + "\xff"  # or not JSON at all
            (folder / name).write_text(text, "utf-8")
        code = _run_case(folder, project, f"folder#{n}", failures)
        if code != 0:
            failures.append(f"folder#{n}: the folder's tokenizer.json is valid, yet the import failed")
    assert not failures, "\n".join(failures[:6])


spm = pytest.importorskip("sentencepiece")
from sentencepiece import sentencepiece_model_pb2 as pb  # noqa: E402

ROLE_FIELDS = ("unk_id", "bos_id", "eos_id", "pad_id")
PIECE_TYPES = (pb.ModelProto.SentencePiece.NORMAL, pb.ModelProto.SentencePiece.UNKNOWN,
               pb.ModelProto.SentencePiece.CONTROL, pb.ModelProto.SentencePiece.USER_DEFINED,
               pb.ModelProto.SentencePiece.BYTE, pb.ModelProto.SentencePiece.UNUSED)


@pytest.fixture(scope="module")
def roles_model(tmp_path_factory) -> bytes:
    """A Unigram model with every role and user-defined/control pieces, from the real trainer."""
    from workbench.corpus.demo import demo_corpus_files

    root = tmp_path_factory.mktemp("spm-roles")
    source = next(p for p in demo_corpus_files() if p.name.startswith("en_wiki"))
    data = source.read_bytes()[:40000]
    (root / "text.txt").write_bytes(data[: data.rindex(b"\n") + 1])
    spm.SentencePieceTrainer.train(input=str(root / "text.txt"), model_prefix=str(root / "m"), vocab_size=300,
                                   pad_id=3, user_defined_symbols=["<sep>", "<cls>"], control_symbols=["<mask>"],
                                   minloglevel=2)
    return (root / "m.model").read_bytes()


def _mutate_roles(proto, rng: random.Random) -> str:
    size = len(proto.pieces)
    roll = rng.randrange(4)
    if roll == 0:
        name = rng.choice(ROLE_FIELDS)
        value = rng.choice([-1, size, 10**9, 2**31 - 1, 0, 1])
        setattr(proto.trainer_spec, name, value)
        return f"{name} = {value}"
    if roll == 1:
        i = rng.randrange(size)
        kind = rng.choice(PIECE_TYPES)
        proto.pieces[i].type = kind
        return f"piece {i} type {kind}"
    if roll == 2:  # a role's piece renamed to another role's, or to a normal piece's text
        i, j = rng.randrange(8), rng.randrange(size)
        proto.pieces[i].piece = proto.pieces[j].piece + rng.choice(["", "x"])
        return f"piece {i} named like {j}"
    field = rng.choice(["unk_piece", "bos_piece", "eos_piece", "pad_piece", "unk_surface"])
    value = rng.choice(["", "<sep>", "▁the", "\x00", "a" * 300])
    setattr(proto.trainer_spec, field, value)
    return f"{field} = {value[:10]!r}"


def test_mutated_spm_models_with_roles_import_or_refuse_in_one_line(roles_model, tmp_path):
    rng = random.Random("hostile-spm-roles")
    project = tmp_path / "fuzz.tokproj"
    failures: list[str] = []
    codes = []
    for n in range(14):
        proto = pb.ModelProto()
        proto.ParseFromString(roles_model)
        what = [_mutate_roles(proto, rng) for _ in range(rng.randint(1, 2))]
        target = tmp_path / f"case{n}.model"
        target.write_bytes(proto.SerializeToString())
        codes.append(_run_case(target, project, f"spm#{n} ({'; '.join(what)})", failures))
    assert not failures, f"{len(failures)} broken cases:\n" + "\n".join(failures[:8])
    assert 0 in codes, codes
