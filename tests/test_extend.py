"""Extending a tokenizer someone ships: cl100k (tiktoken) and a BPE tokenizer.json (tokenizers),
with the real libraries as oracles, on slices of the shared corpora.

What must hold: every base id keeps its bytes and every base merge its rank; no new token is
rank-dead on the extension corpus; the export loads in the base's library with the workbench's ids
on held-out lines; with the script restriction, lines without those scripts encode as before.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from shared_corpora import CORPORA, require_corpora

from workbench.core.encoder import Encoder
from workbench.core.pretokenize import CL100K_PATTERN
from workbench.errors import ConfigError
from workbench.formats.export import export_tokenizer
from workbench.tasks.extend import (
    ExtendRequest,
    extend_run,
    extension_report,
    load_extension,
    new_tokens_csv,
)
from workbench.tasks.sources import load_tokenizer
from workbench.tasks.train import resolve_files

ROOT = Path(__file__).resolve().parents[1]
ADD = 2000


def _lines(name: str, start: int, count: int) -> list[str]:
    with open(CORPORA / name, encoding="utf-8") as handle:
        lines = handle.readlines()
    return lines[start:start + count]


def _slice(folder: Path, name: str, count: int) -> Path:
    path = folder / name  # the language prefix of the name labels the report's rows
    path.write_text("".join(_lines(name, 0, count)), encoding="utf-8")
    return path


def _held_out() -> list[str]:
    return (_lines("ru_fortunes.txt", 20_000, 150) + _lines("zh_fortunes.txt", 20_000, 150)
            + _lines("en_wiki_taylorswift.txt", 1000, 150))


@pytest.fixture(scope="module")
def cl100k(cl100k_file):
    return load_tokenizer(str(cl100k_file))


@pytest.fixture(scope="module")
def cl100k_extension(tmp_path_factory, cl100k_file):
    """cl100k + 2,000 Russian and Chinese tokens (scripts Cyrillic,Han), stored in a project."""
    require_corpora()
    folder = tmp_path_factory.mktemp("extend")
    files = resolve_files([str(_slice(folder, "ru_fortunes.txt", 6000)), str(_slice(folder, "zh_fortunes.txt", 5000))])
    project = folder / "p.tokproj"
    request = ExtendRequest(base=str(cl100k_file), files=files, add=ADD, scripts=("Cyrillic", "Han"))
    run_id, status = extend_run(request, project)
    assert status == "finished"
    base, extended, meta = load_extension(project, run_id)
    return folder, project, run_id, base, extended, meta, files


def _tiktoken_encoding(path: Path):
    tiktoken = pytest.importorskip("tiktoken")
    from tiktoken.load import load_tiktoken_bpe

    side = json.loads(Path(str(path) + ".json").read_text(encoding="utf-8"))
    return tiktoken.Encoding(name="x", pat_str=side["pat_str"], mergeable_ranks=load_tiktoken_bpe(str(path)),
                             special_tokens=side["special_tokens"])


def test_cl100k_extension_keeps_every_base_id_and_merge(cl100k_extension, cl100k, cl100k_file):
    _folder, _project, _run, base, extended, meta, _files = cl100k_extension
    original = cl100k
    assert len(original.vocab) == 100_277 and extended.vocab[:100_277] == original.vocab
    assert sum(1 for i, p in enumerate(original.vocab) if p and i not in original.special_ids) == 100_256
    assert extended.special_tokens == original.special_tokens
    assert tuple(extended.merges[:len(original.merges)]) == tuple(original.merges)
    assert len(extended.vocab) == 100_277 + ADD and extended.merge_rule == "bytes"
    # new merges continue the list: ranks after the base's, ids after its largest, parts joined
    for a, b, new in extended.merges[len(original.merges):]:
        assert new >= 100_277 and extended.vocab[new] == extended.vocab[a] + extended.vocab[b]
    assert meta["base"]["source"] == str(cl100k_file) and meta["add"] == ADD
    assert base.vocab == original.vocab


def test_cl100k_extension_has_no_rank_dead_tokens_and_helps_its_languages(cl100k_extension):
    folder, _project, _run, base, extended, meta, files = cl100k_extension
    report = extension_report(base, extended, files, skipped=meta["skipped"])
    assert report.new_tokens == ADD and report.dead == []
    assert meta["rank_dead"] == 0 and meta["skipped"]["scripts"] > 0  # box drawing, escape codes … refused
    by_language = {f.language: f for f in report.files}
    assert by_language["ru"].after < 0.8 * by_language["ru"].before
    assert by_language["zh"].after < by_language["zh"].before
    rows = list(csv.reader(new_tokens_csv(extended, len(base.vocab), folder / "new.csv").splitlines()))
    assert rows[0] == ["new_id", "token", "bytes", "parent_left", "parent_right"] and len(rows) == 1 + ADD
    new_id, _token, hexed, left, right = rows[1]
    assert bytes.fromhex(hexed.replace(" ", "")) == extended.vocab[int(new_id)] == \
        extended.vocab[int(left)] + extended.vocab[int(right)]


def test_cl100k_extension_exports_to_tiktoken_with_the_same_ids(cl100k_extension, cl100k_file):
    folder, _project, _run, base, extended, _meta, _files = cl100k_extension
    out = folder / "ext.tiktoken"
    export_tokenizer(extended, "tiktoken", out)
    encoding = _tiktoken_encoding(out)
    ours = Encoder(extended)
    held_out = _held_out()
    assert [encoding.encode_ordinary(line) for line in held_out] == [ours.encode(line) for line in held_out]
    assert any(i >= 100_277 for line in held_out[:150] for i in ours.encode(line))  # the new tokens are used
    # every base id decodes to the same bytes as in the base
    tiktoken = pytest.importorskip("tiktoken")
    from tiktoken.load import load_tiktoken_bpe

    cl100k = tiktoken.Encoding(name="c", pat_str=CL100K_PATTERN, mergeable_ranks=load_tiktoken_bpe(str(cl100k_file)),
                               special_tokens={})
    assert all(encoding.decode_single_token_bytes(i) == cl100k.decode_single_token_bytes(i)
               for i in range(100_256))


def test_with_the_script_restriction_english_lines_keep_their_ids(cl100k_extension):
    _folder, _project, _run, base, extended, _meta, files = cl100k_extension
    english = _lines("en_shakespeare.txt", 0, 1500) + _lines("en_wiki_taylorswift.txt", 0, 300)
    before, after = Encoder(base), Encoder(extended)
    assert all(before.encode(line) == after.encode(line) for line in english)
    reference = str(CORPORA / "en_wiki_taylorswift.txt")
    report = extension_report(base, extended, (), reference=reference, reference_lines=400)
    assert report.reference_lines == 400 and report.changed_lines == 0 and report.changed_share == 0.0


def test_cli_extend_without_restriction_names_the_merge_behind_each_changed_line(tmp_path, cl100k_file, capsys):
    require_corpora()
    import signal

    from workbench.cli import run_cli

    ru = _slice(tmp_path, "ru_fortunes.txt", 1500)
    reference = tmp_path / "en_ref.txt"
    # English text quoting a few Russian lines: those change, the English ones keep their ids
    reference.write_text("".join(_lines("en_wiki_taylorswift.txt", 0, 200) + _lines("ru_fortunes.txt", 0, 5)),
                         encoding="utf-8")
    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    try:
        code = run_cli(["extend", str(ru), "--base", str(cl100k_file), "--add", "150",
                        "--project", str(tmp_path / "p.tokproj"), "--reference", str(reference), "--pad-to", "128",
                        "--csv-out", str(tmp_path / "new.csv"), "--json", "--progress", "none"])
    finally:
        signal.signal(signal.SIGINT, handlers[0])
        signal.signal(signal.SIGTERM, handlers[1])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    out = json.loads(captured.out)
    assert out["added"] == 150 and out["vocab_size"] % 128 == 0 and out["reserved"] == out["vocab_size"] - 100_427
    ref = out["report"]["reference"]
    assert 3 <= ref["changed_lines"] <= 5 + 10 and 0 < ref["changed_share"] < 0.1
    assert all(change["new_id"] >= 100_277 for change in ref["changes"])
    assert sum(ref["responsible"].values()) == ref["changed_lines"]
    assert out["report"]["rank_dead"] == 0
    assert [f["language"] for f in out["report"]["files"]] == ["ru", "en"]
    base, extended, _meta = load_extension(tmp_path / "p.tokproj", out["run_id"])
    assert extended.special_tokens["<|reserved_0|>"] == 100_427 and extended.vocab[:100_277] == base.vocab


def test_a_bpe_tokenizer_json_base_extends_and_loads_in_tokenizers(tmp_path):
    require_corpora()
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import decoders, models, pre_tokenizers, trainers

    english = _slice(tmp_path, "en_shakespeare.txt", 3000)
    hf = tokenizers.Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    hf.train([str(english)], trainers.BpeTrainer(vocab_size=800, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                                 show_progress=False))
    base_path = tmp_path / "tokenizer.json"
    hf.save(str(base_path))
    ru = _slice(tmp_path, "ru_fortunes.txt", 2000)
    project = tmp_path / "p.tokproj"
    run_id, status = extend_run(ExtendRequest(base=str(base_path), files=resolve_files([str(ru)]), add=300), project)
    assert status == "finished"
    base, extended, _meta = load_extension(project, run_id)
    original = load_tokenizer(str(base_path))
    assert extended.vocab[:len(original.vocab)] == original.vocab
    assert tuple(extended.merges[:len(original.merges)]) == tuple(original.merges)
    report = extension_report(base, extended, resolve_files([str(ru)]))
    assert report.new_tokens == 300 and report.dead == []
    out = tmp_path / "extended.json"
    export_tokenizer(extended, "hf", out)
    loaded = tokenizers.Tokenizer.from_file(str(out))
    ours = Encoder(extended)
    held_out = _lines("ru_fortunes.txt", 20_000, 200) + _lines("en_shakespeare.txt", 20_000, 200)
    assert [loaded.encode(line).ids for line in held_out] == [ours.encode(line) for line in held_out]
    assert all(loaded.id_to_token(i) == hf.id_to_token(i) for i in range(hf.get_vocab_size()))


def test_bad_bases_and_settings_are_refused_in_one_line(tmp_path):
    with pytest.raises(ConfigError) as excinfo:
        ExtendRequest(base="x", add=10, scripts=("Klingon",)).validate()
    assert excinfo.value.field == "scripts"
    spm = pytest.importorskip("sentencepiece")
    corpus = tmp_path / "c.txt"
    corpus.write_text("ab ab abc bca cab\n" * 50, encoding="utf-8")
    spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(tmp_path / "spbpe"), vocab_size=12,
                                   model_type="bpe", hard_vocab_limit=False, minloglevel=2)
    result = subprocess.run([sys.executable, "-m", "workbench", "extend", str(corpus), "--base",
                             str(tmp_path / "spbpe.model"), "--add", "5", "--project", str(tmp_path / "p.tokproj")],
                            cwd=tmp_path, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 2 and "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]  # a SentencePiece BPE model: no merge list to continue
    assert last.startswith("workbench extend: error: ") and "spbpe.model" in last or "SentencePiece BPE" in last
    assert not (tmp_path / "p.tokproj").exists()
    assert not (tmp_path / "p.tokproj").exists()


def test_a_character_bpe_run_is_extended_with_the_new_script_s_characters_first(tmp_path):
    require_corpora()
    from workbench.core.bpe import TrainConfig
    from workbench.tasks.train import train_into_project

    english = _slice(tmp_path, "en_shakespeare.txt", 1500)
    project = tmp_path / "p.tokproj"
    base_run, status = train_into_project([str(english)], project, TrainConfig(units="chars", merges=200,
                                                                                end_of_word="</w>"))
    assert status == "finished"
    ru = _slice(tmp_path, "ru_fortunes.txt", 800)
    run_id, status = extend_run(ExtendRequest(base=f"{project}#{base_run}", files=resolve_files([str(ru)]), add=100,
                                              scripts=("Cyrillic",)), project)
    assert status == "finished"
    base, extended, meta = load_extension(project, run_id)
    original = load_tokenizer(f"{project}#{base_run}")
    assert meta["alphabet_added"] > 30 and extended.vocab[:len(original.vocab)] == original.vocab
    assert "А".encode() in extended.vocab[len(original.vocab):len(original.vocab) + meta["alphabet_added"]]
    report = extension_report(base, extended, resolve_files([str(ru)]), reference=str(english), reference_lines=500)
    assert report.dead == [] and report.new_tokens == 100 and report.changed_lines == 0
    rows = new_tokens_csv(extended, meta["base_vocab_size"], None).splitlines()
    assert len(rows) == 1 + meta["alphabet_added"] + 100


def test_the_script_filter_needs_a_whole_character_of_the_chosen_scripts():
    from workbench.core.extend import TokenFilter, whole_characters

    han_cyrillic = TokenFilter(("Cyrillic", "Han"))
    one = "一".encode()  # e4 b8 80
    assert whole_characters(one + one[:1]) == "一" and whole_characters(one[1:] + one[:2]) == ""
    assert han_cyrillic.reason(one + one[:1]) is None  # a whole Han character, a partial one after it
    assert han_cyrillic.reason(one[2:] + one[:1]) == "scripts"  # bytes of two characters, neither whole
    assert han_cyrillic.reason(" п".encode()) is None and han_cyrillic.reason("п,".encode()) is None
    assert han_cyrillic.reason(b"ab") == "scripts" and han_cyrillic.reason("──".encode()) == "scripts"
    assert han_cyrillic.reason("пa".encode()) == "scripts"  # a Latin letter beside it
    assert TokenFilter(chars="digits").reason(b" 2024") is None and TokenFilter(chars="digits").reason(b"a1") == "chars"
    assert TokenFilter(chars="code").reason(b"):\n") is None and TokenFilter(chars="code").reason("é".encode()) == "chars"


def test_a_pipeline_base_keeps_its_flagged_added_tokens_and_loads_in_tokenizers(tmp_path, capsys):
    """A real tokenizer.json with added tokens that match by their flags (RoBERTa's lstrip <mask>,
    non-special [ROW] with rstrip, a single_word one, a normalized one) and a post-processor: the
    extension keeps each with its id and flags; the export loads in tokenizers with our ids, the
    added tokens matched alike, the reserved padding tokens after the new ones."""
    require_corpora()
    tokenizers = pytest.importorskip("tokenizers")
    from hf_pipelines import roberta

    from workbench.cli import run_cli

    lines = (CORPORA / "en_shakespeare.txt").read_text(encoding="utf-8").splitlines()[:1500]
    base = tmp_path / "roberta.json"
    original = roberta(lines)
    original.save(str(base))
    corpus = tmp_path / "ru.txt"
    corpus.write_text("\n".join((CORPORA / "ru_fortunes.txt").read_text(encoding="utf-8").splitlines()[:300]),
                      encoding="utf-8")
    project = tmp_path / "p.tokproj"
    assert run_cli(["extend", "--base", str(base), str(corpus), "--add", "40", "--project", str(project),
                    "--pad-to", "64", "--progress", "none", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["report"]["rank_dead"] == 0 and result["vocab_size"] % 64 == 0
    out = tmp_path / "extended.json"
    assert run_cli(["export", str(project), "--format", "hf", "--out", str(out)]) == 0
    loaded = tokenizers.Tokenizer.from_file(str(out))
    size = original.get_vocab_size()
    assert all(loaded.id_to_token(i) == original.id_to_token(i) for i in range(size))
    flags = {t["content"]: t for t in json.loads(out.read_text(encoding="utf-8"))["added_tokens"]}
    for token in json.loads(base.read_text(encoding="utf-8"))["added_tokens"]:
        assert flags[token["content"]] == token  # id and every flag kept
    assert "<|reserved_0|>" in flags and flags["<|reserved_0|>"]["id"] >= size + 40
    ours = Encoder(load_tokenizer(f"{project}#{result['run_id']}"))
    held = [line.rstrip("\n") for line in _lines("ru_fortunes.txt", 20_000, 100) + _lines("en_shakespeare.txt", 20_000, 100)]
    held += ["a [ROW]  row and  <mask> here", "the end of the end", "so ﬁne @@ ok", "x<mask>y the endings [ROW]z",
             "Привет <|reserved_0|> мир"]
    assert [loaded.encode(line, add_special_tokens=False).ids for line in held] == [ours.encode(line) for line in held]
    assert [loaded.encode(line).ids for line in held[:20]] == [[0, *ours.encode(line), 2] for line in held[:20]]
