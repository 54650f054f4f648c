"""Every family × every export format, through the real CLI, with the real libraries as oracles.

Runs are trained with ``workbench train`` on the shared corpora (every tenth line of each file held
out) and exported with ``workbench export``. For each format ``formats_for`` offers, the file is
loaded with its library's **default** API and must give ``workbench encode``'s ids on the held-out
lines (en, de, ru, zh, Taylor Swift wiki; ≥ 50 lines):

* ``hf``: ``tokenizers.Tokenizer.from_file(path).encode(text)`` (special tokens on, as by default);
  ``hf-folder``: the same on its ``tokenizer.json``;
* ``gpt2``: ``tokenizers.ByteLevelBPETokenizer(vocab.json, merges.txt).encode(text)``;
* ``tiktoken``: ``tiktoken.Encoding(**sidecar, mergeable_ranks=load_tiktoken_bpe(path)).encode(text)``;
* ``spm``: ``sentencepiece.SentencePieceProcessor(model_file=path).encode(text)``;
* ``wordpiece``: ``tokenizers.BertWordPieceTokenizer(vocab.txt, lowercase=<as trained>)``. Only
  ``lowercase`` is set, because vocab.txt cannot say whether the run lowercased; clean_text,
  handle_chinese_chars, strip_accents (follows lowercase), ``##`` and [UNK] are the loader's
  defaults and are what the run trained with. The loader wraps every text in [CLS] … [SEP] (BERT's
  convention; vocab.txt has no way to say otherwise), so its default ``encode(text)`` must be
  ``[CLS] + our ids + [SEP]``;
* ``spm-vocab`` (a listing no library loads as a tokenizer): line n is sentencepiece's piece and
  score of id n - 1 in the same run's ``.model``, and ``workbench encode --tokenizer run.vocab``
  gives the run's ids;
* ``merges-csv`` (a table): one row per merge of the run, in rank order.

Every format ``formats_for`` does not offer is refused: exit 2, one line with ``why_not``'s reason
and the formats that fit, and no file.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from shared_corpora import CORPUS_FILES, require_corpora

from workbench.formats.detect import FORMATS
from workbench.formats.export import formats_for, why_not
from workbench.formats.merges_csv import cell
from workbench.tasks.sources import load_tokenizer

tokenizers = pytest.importorskip("tokenizers")
tiktoken = pytest.importorskip("tiktoken")
spm = pytest.importorskip("sentencepiece")

# name → (model, extra train flags); default options otherwise.
RUNS: dict[str, tuple[str, tuple[str, ...]]] = {
    "bpe": ("bpe", ()),
    "bpe-chars-metaspace": ("bpe", ("--units", "chars", "--pretokenizer", "metaspace")),
    "bpe-end-of-word": ("bpe", ("--units", "chars", "--end-of-word", "</w>", "--pretokenizer", "whitespace")),
    "wordpiece": ("wordpiece", ()),  # lowercased, as BERT loaders read vocab.txt by default
    "wordpiece-cased": ("wordpiece", ("--normalize", "bert")),
    "unigram": ("unigram", ()),
    "superbpe": ("superbpe", ("--transition", "0.5")),
    "pickybpe": ("pickybpe", ()),
}
SUFFIX = {"hf": "tokenizer.json", "hf-folder": "hf-folder", "gpt2": "gpt2", "tiktoken": "run.tiktoken", "wordpiece": "vocab.txt",
          "spm": "run.model", "spm-vocab": "run.vocab", "merges-csv": "merges.csv"}
# The offer per family for the default run of each family (a change here is a product decision).
EXPECTED = {
    "bpe": ("hf", "hf-folder", "gpt2", "tiktoken", "merges-csv"),
    "bpe-chars-metaspace": ("hf", "hf-folder", "merges-csv"),
    "bpe-end-of-word": ("merges-csv",),  # tokenizers' end_of_word_suffix is only an approximation
    "wordpiece": ("hf", "hf-folder", "wordpiece", "merges-csv"),
    "wordpiece-cased": ("hf", "hf-folder", "merges-csv"),  # cased: BERT loaders lowercase vocab.txt by default
    "unigram": ("hf", "hf-folder", "spm", "spm-vocab"),
    "superbpe": ("hf", "hf-folder", "merges-csv"),  # GPT-2 files and tiktoken cannot hold its superwords
    "pickybpe": ("hf", "hf-folder", "gpt2", "merges-csv"),  # its removals break tiktoken's byte-rank rule
}


def _wb(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench", *args], capture_output=True, text=True, cwd=cwd,
                          env=dict(os.environ), timeout=600)


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> dict:
    """{"folder", "project", "held": {name: [lines]}, "runs": {name: (run id, settings)}, "ours": {name: [ids]}}."""
    require_corpora()
    folder = tmp_path_factory.mktemp("families")
    train: list[str] = []
    held: list[str] = []
    for path in CORPUS_FILES:
        lines = path.read_text(encoding="utf-8").split("\n")[:1200]
        train += [line for i, line in enumerate(lines) if i % 10]
        held += [line for i, line in enumerate(lines) if i % 10 == 0 and line.strip()][:15]
    assert len(held) >= 50 and any("\u4e00" <= ch <= "\u9fff" for line in held for ch in line)
    (folder / "train.txt").write_text("\n".join(train) + "\n", encoding="utf-8")
    # A character-level BPE has no unknown token: it is tested on the held-out lines whose
    # characters it saw (still every language; counted below).
    seen = set("".join(train))
    held_seen = [line for line in held if set(line) <= seen]
    assert len(held_seen) >= 50 and any("\u4e00" <= ch <= "\u9fff" for line in held_seen for ch in line)
    (folder / "held.txt").write_text("\n".join(held) + "\n", encoding="utf-8")
    (folder / "held-seen.txt").write_text("\n".join(held_seen) + "\n", encoding="utf-8")
    project = folder / "p.tokproj"
    runs, ours, texts = {}, {}, {}
    for name, (model, flags) in RUNS.items():
        chars_bpe = name.startswith("bpe-")
        texts[name] = held_seen if chars_bpe else held
        done = _wb("train", "train.txt", "--project", str(project), "--model", model, "--vocab-size", "1500",
                   *flags, "--name", name, "--progress", "none", "--json", cwd=folder)
        assert done.returncode == 0, done.stderr
        run_id = json.loads(done.stdout)["run_id"]
        done = _wb("runs", str(project), "--json", cwd=folder)
        settings = next(r["settings"] for r in json.loads(done.stdout) if r["id"] == run_id)
        runs[name] = (run_id, settings)
        done = _wb("encode", "--tokenizer", f"{project}#{run_id}", "--file",
                   "held-seen.txt" if chars_bpe else "held.txt", "--jsonl", cwd=folder)
        assert done.returncode == 0, done.stderr
        ours[name] = [json.loads(line)["ids"] for line in done.stdout.splitlines()]
        assert len(ours[name]) == len(texts[name])
    return {"folder": folder, "project": project, "held": texts, "runs": runs, "ours": ours}


def _export(trained: dict, name: str, fmt: str) -> tuple[subprocess.CompletedProcess, Path]:
    run_id, _settings = trained["runs"][name]
    out = trained["folder"] / name / SUFFIX[fmt]
    out.parent.mkdir(exist_ok=True)
    done = _wb("export", str(trained["project"]), "--run", str(run_id), "--format", fmt, "--out", str(out),
               "--force", cwd=trained["folder"])
    return done, out


@pytest.mark.parametrize("name", list(RUNS))
def test_each_run_is_offered_the_formats_that_fit_its_family(trained, name):
    model, _flags = RUNS[name]
    _run_id, settings = trained["runs"][name]
    assert formats_for(model, settings) == EXPECTED[name]
    assert set(formats_for(model, settings)) <= set(formats_for(model))  # a run narrows its family's list


@pytest.mark.parametrize("name", list(RUNS))
def test_offered_formats_load_in_their_library_with_default_options_and_give_our_ids(trained, name):
    model, _flags = RUNS[name]
    _run_id, settings = trained["runs"][name]
    held, ours = trained["held"][name], trained["ours"][name]
    for fmt in formats_for(model, settings):
        done, out = _export(trained, name, fmt)
        assert done.returncode == 0, (name, fmt, done.stderr)
        if fmt in ("hf", "hf-folder"):  # the folder loads in transformers: tests/formats/test_fmt_hf_folder.py
            loaded = tokenizers.Tokenizer.from_file(str(out if fmt == "hf" else out / "tokenizer.json"))
            assert [loaded.encode(text).ids for text in held] == ours, (name, fmt)
        elif fmt == "gpt2":
            loaded = tokenizers.ByteLevelBPETokenizer(str(out / "vocab.json"), str(out / "merges.txt"))
            assert [loaded.encode(text).ids for text in held] == ours, (name, fmt)
        elif fmt == "tiktoken":
            from tiktoken.load import load_tiktoken_bpe

            side = json.loads(Path(f"{out}.json").read_text("utf-8"))
            encoding = tiktoken.Encoding(name=side["name"], pat_str=side["pat_str"],
                                         mergeable_ranks=load_tiktoken_bpe(str(out)),
                                         special_tokens=side["special_tokens"])
            assert [encoding.encode(text) for text in held] == ours, (name, fmt)
        elif fmt == "spm":
            processor = spm.SentencePieceProcessor(model_file=str(out))
            assert [processor.encode(text) for text in held] == ours, (name, fmt)
        elif fmt == "wordpiece":
            lowercase = settings["normalizer"] == ["bert-lower"]
            bert = tokenizers.BertWordPieceTokenizer(str(out), lowercase=lowercase)
            assert [bert.encode(text, add_special_tokens=False).ids for text in held] == ours, (name, fmt)
            cls, sep = bert.token_to_id("[CLS]"), bert.token_to_id("[SEP]")
            assert [bert.encode(text).ids for text in held] == [[cls, *ids, sep] for ids in ours]
        elif fmt == "spm-vocab":
            model_done, model_out = _export(trained, name, "spm")
            assert model_done.returncode == 0, model_done.stderr
            processor = spm.SentencePieceProcessor(model_file=str(model_out))
            rows = [line.rsplit("\t", 1) for line in out.read_text("utf-8").split("\n")[:-1]]
            assert len(rows) == processor.get_piece_size() == settings["vocab_size"]
            for token_id, (piece, score) in enumerate(rows):
                assert piece == processor.id_to_piece(token_id)
                assert float(score) == pytest.approx(processor.get_score(token_id), rel=1e-6, abs=1e-6)
            # No library loads a .vocab as a tokenizer; the workbench's own import of it must.
            done = _wb("encode", "--tokenizer", str(out), "--file", "held.txt", "--jsonl", cwd=trained["folder"])
            assert done.returncode == 0, done.stderr
            assert [json.loads(line)["ids"] for line in done.stdout.splitlines()] == ours
        else:
            tokenizer = load_tokenizer(f"{trained['project']}#{trained['runs'][name][0]}")
            with open(out, encoding="utf-8", newline="") as handle:
                rows = list(csv.reader(handle))
            assert rows[0] == ["rank", "left", "right", "merged", "frequency"]
            assert len(rows) - 1 == len(tokenizer.merges) > 0
            v = tokenizer.vocab
            assert [row[1:4] for row in rows[1:]] == [[cell(v[a]), cell(v[b]), cell(v[n])]
                                                      for a, b, n in tokenizer.merges]


@pytest.mark.parametrize("name", list(RUNS))
def test_formats_that_do_not_fit_are_refused_with_their_reason(trained, name):
    model, _flags = RUNS[name]
    _run_id, settings = trained["runs"][name]
    fitting = ", ".join(formats_for(model, settings))
    for fmt in FORMATS:
        if fmt in formats_for(model, settings):
            continue
        done, out = _export(trained, name, fmt)
        assert done.returncode == 2, (name, fmt, done.stdout)
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
        assert why_not(model, fmt, settings) in done.stderr
        assert done.stderr.rstrip().endswith(f"formats that fit: {fitting}"), done.stderr
        assert not out.exists() and not Path(f"{out}.json").exists()
