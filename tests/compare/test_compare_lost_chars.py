"""Characters lost to unknown: the share of a text's characters that map to unknown tokens.

The unknown *rate* counts ``[UNK]`` tokens, so a WordPiece whose two ``[UNK]`` swallow most of a
file shows a tiny rate and the best characters per token. These tests build such a file, check
the exact share by hand, against the real ``tokenizers`` library's offsets, through
``workbench stats`` (JSON and text), for a WordPiece run trained through the CLI, for the other
models' unknown tokens, and in the Compare tab's table and chart.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.core.corpus_metrics import Metrics, count_text, lossy_note
from workbench.core.model import Tokenizer, base_vocab
from workbench.formats.vocab_lists import read_wordpiece

LONG = 2500  # a "word" longer than max_input_chars_per_word (100): one [UNK] for all of it
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a", "the", "cat", "##s"]


def swallowing_file(folder: Path) -> tuple[Path, Path]:
    """(vocab.txt, text): 320 known one-letter words, then two words only [UNK] can stand for."""
    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    text = folder / "swallowed.txt"
    text.write_text("a " * 320 + "\n" + "z" * LONG + " " + "q" * LONG + "\n", encoding="utf-8")
    return vocab, text


# By hand: 320 × "a " = 640 characters and a line break; two words of 2,500 letters, a space and a
# line break. 322 tokens: 320 × "a" and 2 × [UNK]; the [UNK]s stand for 5,000 characters.
CHARS = 640 + 1 + LONG + 1 + LONG + 1
LOST = 2 * LONG


def workbench(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def test_two_unks_that_swallow_a_file_lose_its_characters_in_stats(tmp_path):
    vocab, text = swallowing_file(tmp_path)
    done = workbench("stats", str(text), "--tokenizer", str(vocab), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    row = json.loads(done.stdout)["per_file"][0]
    assert (row["chars"], row["tokens"], row["unknown"]) == (CHARS, 322, 2)
    assert row["unknown_rate"] == round(2 / 322, 6)  # 0.62 %: looks harmless …
    assert row["unknown_chars"] == LOST
    assert row["chars_lost_to_unknown"] == round(LOST / CHARS, 6)  # … but 88.6 % of the text is gone
    assert row["chars_lost_to_unknown"] > 0.88

    text_out = workbench("stats", str(text), "--tokenizer", str(vocab), cwd=tmp_path)
    assert text_out.returncode == 0, text_out.stderr
    assert f"chars lost to unknown {100 * LOST / CHARS:.2f}%" in text_out.stdout
    assert "chars lost" in text_out.stdout.splitlines()[[i for i, line in enumerate(text_out.stdout.splitlines())
                                                          if line.startswith("per language")][0] + 1]
    assert f"note: {vocab} loses {100 * LOST / CHARS:.2f} % of its characters to unknown tokens ({LOST} of {CHARS})" \
        in text_out.stdout


def test_the_share_matches_the_offsets_of_the_real_wordpiece(tmp_path):
    """``tokenizers``' own WordPiece on the same vocab.txt: the characters its [UNK] offsets cover."""
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import normalizers, pre_tokenizers
    from tokenizers.models import WordPiece

    vocab, text = swallowing_file(tmp_path)
    content = text.read_text(encoding="utf-8") + "the cats ξένος a\n"  # a Greek word: [UNK] as well
    text.write_text(content, encoding="utf-8")
    hf = tokenizers.Tokenizer(WordPiece.from_file(str(vocab), unk_token="[UNK]"))
    hf.normalizer = normalizers.BertNormalizer(lowercase=True)
    hf.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    expected = 0
    for line in content.splitlines(keepends=True):
        enc = hf.encode(line, add_special_tokens=False)
        expected += sum(b - a for tid, (a, b) in zip(enc.ids, enc.offsets) if tid == 1)
    assert expected == LOST + len("ξένος")
    ours, _notes = read_wordpiece(vocab)
    tally, counts = count_text(ours, [content])
    assert counts.lost_chars == expected and counts.unknown == 3
    assert Metrics.of(ours, "wp", "f", "Latin", tally, counts).chars_lost_to_unknown == expected / len(content)


def test_a_trained_wordpiece_run_loses_the_words_it_cannot_spell(corpora, tmp_path):
    """A WordPiece run trained on English through the CLI, measured on text with Cyrillic letters:
    every word holding one is a single [UNK], so its whole length is lost."""
    from compare_helpers import corpus_slice

    train = tmp_path / "en.txt"
    train.write_text(corpus_slice(corpora, "en_shakespeare.txt", 40_000).lower(), encoding="utf-8")
    project = tmp_path / "wp.tokproj"
    done = workbench("train", str(train), "--project", str(project), "--model", "wordpiece", "--vocab-size", "300",
                     "--progress", "none", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    held = tmp_path / "held.txt"
    lines = ["the king is here\n", "the kingж is here\n", "кот\n"]
    held.write_text("".join(lines), encoding="utf-8")
    done = workbench("stats", str(held), "--tokenizer", str(project), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    row = json.loads(done.stdout)["per_file"][0]
    # By hand: "kingж" (5 characters) and "кот" (3) are one [UNK] each; 17 + 18 + 4 characters.
    assert (row["chars"], row["unknown"], row["unknown_chars"]) == (39, 2, 8)
    assert row["chars_lost_to_unknown"] == round(8 / 39, 6)


def test_unknown_tokens_of_the_other_models_count_what_they_stand_for():
    # Character-level BPE: one [UNK] per character the alphabet lacks.
    vocab = base_vocab("chars", alphabet="abc", specials=("[UNK]",))
    tok = Tokenizer(vocab=tuple(vocab), merges=(), units="chars", pretokenizer="whitespace",
                    special_tokens={"[UNK]": 0}, unk_token="[UNK]")
    tally, counts = count_text(tok, ["ab xyz\naa é\n"])
    assert (counts.unknown, counts.lost_chars, tally.chars) == (4, 4, 12)
    m = Metrics.of(tok, "t", "f", "Latin", tally, counts)
    assert m.chars_lost_to_unknown == 4 / 12 and lossy_note(m) == "loses 33.33 % of its characters to unknown tokens"
    # Byte-level BPE whose vocabulary lacks the bytes of "é": an [UNK] per byte, one character lost.
    byte_vocab = [bytes([b]) for b in range(256) if b not in (0xC3, 0xA9)] + [b"[UNK]"]
    byte_tok = Tokenizer(vocab=tuple(byte_vocab), merges=(), units="bytes", pretokenizer="gpt2",
                         special_tokens={"[UNK]": len(byte_vocab) - 1}, unk_token="[UNK]")
    tally, counts = count_text(byte_tok, ["café au lait\n"])
    assert (counts.unknown, counts.lost_chars) == (2, 1)
    # A tokenizer that keeps every character has nothing to say.
    keep = Metrics.of(tok, "t", "f", "Latin", *count_text(tok, ["abc cab\n"]))
    assert keep.chars_lost_to_unknown == 0 and not keep.loses_text and lossy_note(keep) == ""


def test_a_unigram_run_of_unknown_characters_is_one_unk_for_all_of_them(tmp_path):
    from workbench.cli import run_cli
    from workbench.tasks.sources import load_tokenizer

    corpus = tmp_path / "u.txt"
    corpus.write_text("hello world hello there world of words\n" * 50, encoding="utf-8")
    project = tmp_path / "u.tokproj"
    assert run_cli(["train", str(corpus), "--project", str(project), "--model", "unigram", "--vocab-size", "15",
                    "--progress", "none"]) == 0
    tok = load_tokenizer(str(project))
    tally, counts = count_text(tok, ["hello жжж world\n"])
    assert counts.unknown == 1 and counts.lost_chars == 3  # SentencePiece merges a run of unknowns


def test_the_compare_tab_shows_the_loss_beside_the_compression_it_buys(panel, qtbot, tmp_path, cl100k_file):
    """The WordPiece that swallows the file has the best raw compression — the table and the chart
    say, on its own row and bar, how much text that cost."""
    from PySide6.QtCore import Qt

    vocab, text = swallowing_file(tmp_path)
    panel.add_tokenizer_file(vocab)
    panel.add_tokenizer_file(cl100k_file)
    panel.add_corpus_file(text, language="en")
    with qtbot.waitSignal(panel.computed, timeout=120_000) as blocker:
        assert panel.compute()
    result = blocker.args[0]
    wp, cl = result.per_file
    assert wp.chars_per_token > 8 * cl.chars_per_token  # raw compression would crown the lossy one …
    model = panel.file_model
    headers = model.csv_header()
    lost_col, cpt_col = headers.index("chars lost to unknown"), headers.index("chars/token")
    assert headers[lost_col - 1] == "chars/token" and "unknown tokens" in headers  # beside what it qualifies
    cell = model.index(0, lost_col)
    assert model.data(cell) == f"{100 * LOST / CHARS:.2f} %" and model.data(model.index(1, lost_col)) == "0.00 %"
    assert model.data(model.index(0, headers.index("unknown tokens"))) == f"{100 * 2 / 322:.2f} %"
    warned = model.index(0, cpt_col)
    assert f"loses {100 * LOST / CHARS:.2f} % of its characters" in model.data(warned, Qt.ItemDataRole.ToolTipRole)
    assert model.data(warned, Qt.ItemDataRole.DecorationRole) is not None
    assert model.data(model.index(1, cpt_col), Qt.ItemDataRole.DecorationRole) is None  # cl100k keeps its text
    assert [r[lost_col] for r in model.csv_rows()] == [LOST / CHARS, 0.0]
    # … and the chart marks its bar and its legend entry.
    chart = panel.bar_chart
    assert set(chart.lossy_marks) == {(wp.tokenizer, "en")}
    assert chart.lossy_marks[(wp.tokenizer, "en")].textItem.toPlainText() == f"⚠ {100 * LOST / CHARS:.2f} % lost"
    labels = [label.text for _sample, label in chart.legend.items]
    assert any("⚠ loses characters to unknown" in t for t in labels)
    assert sum("⚠" in t for t in labels) == 1
