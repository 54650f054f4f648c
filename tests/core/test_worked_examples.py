"""The textbook cases of PRODUCT.md, exactly, through the core and through the CLI."""

from __future__ import annotations

import json

from workbench.cli import run_cli
from workbench.core.bpe import BpeTrainer, TrainConfig, train
from workbench.core.count import count_pretokens
from workbench.core.encoder import Encoder


def merge_names(tok):
    return [f"{tok.vocab[a].decode()} {tok.vocab[b].decode()}" for a, b, _ in tok.merges]


def test_example_1_chars_no_marker_token_counts_and_greedy():
    counts = count_pretokens(["go goes fit unfit undo unzip"], pretokenizer="whitespace")
    trainer = BpeTrainer(counts, TrainConfig(units="chars", merges=3, pretokenizer="whitespace"))
    assert trainer.token_count == 23  # 2+4+3+5+4+5, not the 21 of a widely copied table
    steps = [event.token_count for event in trainer.run()]
    assert steps == [20, 18, 16]
    tok = trainer.tokenizer()
    assert merge_names(tok) == ["u n", "g o", "f i"]
    greedy = Encoder(tok, greedy=True)
    assert [tok.vocab[i].decode() for i in greedy.encode("unfit")] == ["un", "fi", "t"]


def test_example_2_word_counts_with_end_of_word_marker():
    tok, freqs = train({"low": 5, "lower": 2, "newest": 6, "widest": 3},
                       TrainConfig(units="chars", merges=5, end_of_word="</w>", pretokenizer="whitespace"))
    assert merge_names(tok) == ["e s", "es t", "est </w>", "l o", "lo w"]
    assert freqs == [9, 9, 9, 7, 7]


def test_example_3_each_word_once():
    counts = count_pretokens(["low lower lowest newer"], pretokenizer="whitespace")
    tok, _ = train(counts, TrainConfig(units="chars", merges=5, end_of_word="</w>", pretokenizer="whitespace"))
    assert merge_names(tok) == ["l o", "lo w", "low e", "r </w>", "low </w>"]
    encoder = Encoder(tok)
    assert encoder.decode(encoder.encode("lower newer")) == "lower newer"


def test_example_4_bytes_no_pretokenizer():
    tok, _ = train({"aaabdaaabac": 1}, TrainConfig(units="bytes", merges=3, pretokenizer="none"))
    encoder = Encoder(tok)
    assert encoder.encode("aaabdaaabac") == [258, 100, 258, 97, 99]
    assert encoder.decode([258, 100, 258, 97, 99]) == "aaabdaaabac"


def _cli_json(capsys, argv):
    assert run_cli(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_examples_through_the_cli(tmp_path, capsys):
    corpus = tmp_path / "words.txt"
    corpus.write_text("go goes fit unfit undo unzip\n", encoding="utf-8")
    project = tmp_path / "ex.tokproj"
    assert run_cli(["train", str(corpus), "--project", str(project), "--merges", "3", "--units", "chars",
                    "--pretokenizer", "whitespace", "--progress", "none"]) == 0
    capsys.readouterr()
    out = _cli_json(capsys, ["encode", "--tokenizer", str(project), "--text", "unfit", "--greedy", "--json"])
    assert out["tokens"] == ["un", "fi", "t"] and out["count"] == 3

    aaa = tmp_path / "aaa.txt"
    aaa.write_text("aaabdaaabac", encoding="utf-8")
    project4 = tmp_path / "ex4.tokproj"
    assert run_cli(["train", str(aaa), "--project", str(project4), "--merges", "3", "--pretokenizer", "none",
                    "--progress", "none"]) == 0
    capsys.readouterr()
    out = _cli_json(capsys, ["encode", "--tokenizer", str(project4), "--text", "aaabdaaabac", "--json"])
    assert out["ids"] == [258, 100, 258, 97, 99]
    assert run_cli(["decode", "--tokenizer", str(project4), "--ids", "258,100,258,97,99"]) == 0
    assert capsys.readouterr().out == "aaabdaaabac\n"

    csv_path = tmp_path / "merges.csv"
    assert run_cli(["export", str(project4), "--format", "merges-csv", "--out", str(csv_path)]) == 0
    lines = csv_path.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "rank,left,right,merged,frequency"
    assert lines[1:] == ["0,a,a,aa,4", "1,aa,a,aaa,2", "2,aaa,b,aaab,2"]


def test_example_2_through_a_word_count_table(tmp_path, capsys):
    table = tmp_path / "words.counts"
    table.write_text("low\t5\nlower\t2\nnewest\t6\nwidest\t3\n", encoding="utf-8")
    project = tmp_path / "ex2.tokproj"
    assert run_cli(["train", str(table), "--project", str(project), "--merges", "5", "--units", "chars",
                    "--end-of-word", "</w>", "--pretokenizer", "whitespace", "--progress", "none"]) == 0
    csv_path = tmp_path / "m.csv"
    assert run_cli(["export", str(project), "--format", "merges-csv", "--out", str(csv_path)]) == 0
    rows = [line.split(",")[1:3] for line in csv_path.read_text(encoding="utf-8").splitlines()[1:]]
    assert rows == [["e", "s"], ["es", "t"], ["est", "</w>"], ["l", "o"], ["lo", "w"]]
