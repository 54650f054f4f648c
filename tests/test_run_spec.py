"""RunSpec: JSON round trip, one validation with ConfigError naming the setting, and the trainer
interface BpeTrainer implements."""

from __future__ import annotations

import json

import pytest

from workbench.core.bpe import BpeTrainer, TrainConfig
from workbench.core.trainer import TrainEvent, TrainLog
from workbench.errors import ConfigError, WorkbenchError
from workbench.tasks.spec import SPEC_VERSION, CorpusFile, RunSpec

MIXED = RunSpec(
    files=(CorpusFile("a.txt"), CorpusFile("b.jsonl", "jsonl", field="meta.text"),
           CorpusFile("c.csv", "csv", column="body"), CorpusFile("d.txt", encoding="cp1252"),
           CorpusFile("e.tsv", "tsv", column=2)),
    vocab_size=600, merges=200, units="chars", end_of_word="</w>", pretokenizer="whitespace",
    normalizer=("nfkc", "lower"), min_frequency=2, special_tokens=("<s>", "</s>"), tie_break="hf",
    name="mixed ✓", project="p.tokproj",
)


def test_json_round_trip_keeps_every_field_and_each_files_options():
    text = MIXED.to_json()
    data = json.loads(text)
    assert data["version"] == SPEC_VERSION
    assert data["files"][3] == {"path": "d.txt", "kind": "text", "field": None, "column": None, "encoding": "cp1252"}
    back = RunSpec.from_json(text)
    assert back == MIXED
    assert back.files[4].column == 2 and isinstance(back.normalizer, tuple)
    assert RunSpec.from_json(back.validate().to_json()) == back.validate()


def test_validate_canonicalises_and_completes_model_options():
    spec = RunSpec(files=(CorpusFile("a.txt"),), merges=5, pretokenizer="GPT2", normalizer=("NFKC", "none"),
                   model="unigram", vocab_size=300, options={"byte_fallback": True})
    with pytest.raises(ConfigError) as err:  # merges are a BPE setting
        spec.validate()
    assert err.value.field == "merges"
    good = RunSpec(files=(CorpusFile("a.txt"),), model="unigram", vocab_size=300, pretokenizer="METASPACE",
                   normalizer=("NFKC", "none"), options={"byte_fallback": True}).validate()
    assert good.pretokenizer == "metaspace" and good.normalizer == ("nfkc",) and good.units == "chars"
    with pytest.raises(ConfigError) as err:  # Unigram splits text as SentencePiece does
        RunSpec(files=(CorpusFile("a.txt"),), model="unigram", vocab_size=300, pretokenizer="gpt2").validate()
    assert err.value.field == "pretokenizer"
    assert good.options == {"character_coverage": 1.0, "byte_fallback": True, "max_piece_length": 16}


@pytest.mark.parametrize("changes, field, words", [
    ({"vocab_size": None, "merges": None}, "vocab_size", "how far"),
    ({"vocab_size": 100}, "vocab_size", "at least 256"),
    ({"merges": -3, "vocab_size": None}, "merges", "positive"),
    ({"units": "words"}, "units", "bytes or chars"),
    ({"end_of_word": "</w>"}, "end_of_word", "character units"),
    ({"pretokenizer": "([a"}, "pretokenizer", "regular expression"),
    ({"normalizer": ("nfz",)}, "normalizer", "unknown normalizer"),
    ({"special_tokens": ("<s>", "")}, "special_tokens", "cannot be empty"),
    ({"tie_break": "random"}, "tie_break", "first-seen or hf"),
    ({"model": "wordpiece", "options": {"wordpiece_score": "magic"}, "merges": None}, "options.wordpiece_score", "likelihood"),
    ({"options": {"byte_fallback": True}}, "options.byte_fallback", "not a setting of bpe"),
    ({"files": (CorpusFile("a.txt", field="text"),)}, "files.field", "a.txt"),
    ({"files": (CorpusFile("a.jsonl", "jsonl", column="x"),)}, "files.column", "a.jsonl"),
    ({"files": (CorpusFile("a.txt", encoding="klingon-8"),)}, "files.encoding", "klingon-8"),
])
def test_bad_settings_name_their_field_and_no_flag(changes, field, words):
    base = RunSpec(files=(CorpusFile("a.txt"),), vocab_size=1000)
    with pytest.raises(ConfigError) as err:
        RunSpec(**{**base.__dict__, **changes}).validate()
    assert err.value.field == field
    assert words in str(err.value)
    assert "--" not in str(err.value), "core messages speak of the setting, not of a CLI flag"


def test_unknown_keys_and_newer_versions_are_refused():
    data = MIXED.to_dict()
    with pytest.raises(ConfigError, match="unknown key 'vocab'"):
        RunSpec.from_dict({**data, "vocab": 5})
    with pytest.raises(ConfigError, match="files\\[0\\] has unknown key 'colum'"):
        RunSpec.from_dict({**data, "files": [{"path": "a.csv", "colum": "x"}]})
    with pytest.raises(ConfigError, match="version 99"):
        RunSpec.from_dict({**data, "version": 99})
    with pytest.raises(ConfigError, match="not valid JSON"):
        RunSpec.from_json("{", "run.json")


def test_the_trainer_raises_config_errors_for_what_needs_the_corpus():
    with pytest.raises(ConfigError) as err:
        BpeTrainer({"abc": 2, "abd": 1}, TrainConfig(units="chars", vocab_size=3))
    assert err.value.field == "vocab_size" and "alphabet of 4 characters" in str(err.value)
    assert isinstance(err.value, WorkbenchError)
    with pytest.raises(ConfigError) as err:
        BpeTrainer({"a</w>b": 1}, TrainConfig(units="chars", merges=1, end_of_word="</w>"))
    assert err.value.field == "end_of_word"


def test_bpe_trainer_offers_the_trainer_interface_and_an_append_only_log():
    trainer = BpeTrainer({"low": 5, "lower": 2, "newest": 6, "widest": 3},
                         TrainConfig(units="chars", merges=5, end_of_word="</w>", special_tokens=("<s>",)))
    assert trainer.initial_kinds[:2] == ("special", "base") and len(trainer.initial_vocab) == trainer.initial_size
    assert trainer.word_types == 4 and trainer.target == 5 and trainer.value_name == "frequency"
    initial_tokens = trainer.initial_token_count
    log: TrainLog = trainer.log
    events = []
    for event in trainer.run():
        assert isinstance(event, TrainEvent)
        events.append(event)
        if event.step == 2:
            first = log.since(0)
    assert first.end == 2 and [p for p in first.pieces] == [b"es", b"est"]
    rest = log.since(first.end)
    assert (rest.start, rest.end) == (2, 5) and rest.pieces == [b"est</w>", b"lo", b"low"]
    assert list(rest.frequencies) == [e.value for e in events[2:]] == [9, 7, 7]
    assert log.since(5).merges == [] and len(log) == 5
    assert log.token_counts[-1] == events[-1].token_count < initial_tokens
    assert trainer.tokenizer().merges == tuple(log.merges)


def test_unigram_refuses_a_minimum_frequency_and_a_tie_break(tmp_path) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text("a b\n", encoding="utf-8")
    base = dict(files=(CorpusFile(str(corpus)),), model="unigram", vocab_size=100, units="chars",
                pretokenizer="metaspace")
    assert RunSpec(**base).validate().tie_break == "hf"  # unused: stored as the family's default
    assert RunSpec(**base, tie_break="hf").validate().tie_break == "hf"  # its own value is accepted
    with pytest.raises(ConfigError) as refused:
        RunSpec(**base, tie_break="first-seen").validate()
    assert refused.value.field == "tie_break" and "does not apply to Unigram" in str(refused.value)
    with pytest.raises(ConfigError) as refused:
        RunSpec(**base, min_frequency=5).validate()
    assert refused.value.field == "min_frequency" and "Unigram" in str(refused.value)
