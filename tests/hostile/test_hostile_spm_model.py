"""SentencePiece ``.model`` files that ``sentencepiece`` itself refuses are refused on import.

Each case starts from a model the real ``sentencepiece`` trainer wrote, changes one field through
the official protobuf schema (a NaN/Inf score, a duplicate, empty or 1 MB piece) and imports and
encodes it through the real CLI. The contract: exit 2 with one line that carries sentencepiece's own
reason, and the project file untouched (before these changes such files imported and split text in
ways no other tool reproduces).
"""

from __future__ import annotations

import pytest
from hostile_helpers import one_line_error, run_inproc
from shared_corpora import CORPORA, require_corpora

spm = pytest.importorskip("sentencepiece")
from sentencepiece import sentencepiece_model_pb2 as pb  # noqa: E402

CORPUS = CORPORA / "en_shakespeare.txt"


@pytest.fixture(scope="module")
def real_model(tmp_path_factory) -> bytes:
    require_corpora()
    root = tmp_path_factory.mktemp("spm")
    lines = CORPUS.read_text(encoding="utf-8").splitlines()[:3000]
    (root / "text.txt").write_text("\n".join(lines), encoding="utf-8")
    spm.SentencePieceTrainer.train(input=str(root / "text.txt"), model_prefix=str(root / "m"), vocab_size=400,
                                   minloglevel=2)
    return (root / "m.model").read_bytes()


def _mutated(data: bytes, change) -> bytes:
    proto = pb.ModelProto()
    proto.ParseFromString(data)
    change(proto)
    return proto.SerializeToString()


def _set(field: str, value):
    def change(proto):
        setattr(proto.pieces[10], field, value)
    return change


CASES = {
    "nan score": (_set("score", float("nan")), "NaN or Inf"),
    "infinite score": (_set("score", float("inf")), "NaN or Inf"),
    "duplicate piece": (lambda p: setattr(p.pieces[10], "piece", p.pieces[11].piece), "already defined"),
    "empty piece": (_set("piece", ""), "must not be empty"),
    "1 MB piece": (_set("piece", "a" * 1_000_000), "too long"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_model_sentencepiece_refuses_is_refused_with_its_reason(case, real_model, tmp_path):
    change, reason = CASES[case]
    bad = tmp_path / "bad.model"
    bad.write_bytes(_mutated(real_model, change))
    with pytest.raises(RuntimeError):  # the oracle: sentencepiece itself refuses the file
        spm.SentencePieceProcessor(model_file=str(bad))

    project = tmp_path / "p.tokproj"
    code, _out, err = run_inproc(["import", str(bad), "--project", str(project)])
    line = one_line_error(err)
    assert code == 2 and reason in line and "bad.model" in line, line
    assert not project.exists(), "a refused import must not create the project"

    code, _out, err = run_inproc(["encode", "--tokenizer", str(bad), "--text", "hello world"])
    assert code == 2 and reason in one_line_error(err)


def test_the_unchanged_model_still_imports_and_encodes_like_sentencepiece(real_model, tmp_path):
    good = tmp_path / "good.model"
    good.write_bytes(real_model)
    code, out, err = run_inproc(["encode", "--tokenizer", str(good), "--text", "To be, or not to be", "--json"])
    assert code == 0, err
    import json
    assert json.loads(out)["ids"] == spm.SentencePieceProcessor(model_file=str(good)).encode("To be, or not to be")
