"""Special-token roles, the post-processor template and the ``hf-folder`` export, held to the real
``transformers``: ``AutoTokenizer.from_pretrained(DIR, local_files_only=True)`` with no config.json
must give the workbench's ids on held-out lines of the shared corpora with and without special
tokens, and decode them to the workbench's text — for a BPE, a WordPiece with BERT's template and
a Unigram with Llama's. Runs are small (a few hundred lines), held-out text is every tenth line.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from shared_corpora import CORPUS_FILES, require_corpora

from workbench.cli import run_cli
from workbench.core.encoder import Encoder
from workbench.core.special_roles import with_template
from workbench.errors import ConfigError, DamagedValue
from workbench.tasks.sources import load_tokenizer
from workbench.tasks.spec import RunSpec

transformers = pytest.importorskip("transformers")
sentencepiece = pytest.importorskip("sentencepiece")

# name → train flags (roles and template as a user gives them)
RUNS = {
    "bpe": ("--model", "bpe", "--vocab-size", "700", "--special", "bos=<|begin_of_text|>",
            "--special", "eos=<|end_of_text|>", "--template", "llama"),
    "wordpiece": ("--model", "wordpiece", "--vocab-size", "1500", "--special", "cls=[CLS]", "--special", "sep=[SEP]",
                  "--special", "pad=[PAD]", "--special", "unk=[UNK]", "--special", "mask=[MASK]", "--template", "bert"),
    "unigram": ("--model", "unigram", "--vocab-size", "900", "--special", "bos=<s>", "--special", "eos=</s>",
                "--special", "unk=<unk>", "--template", "llama"),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    require_corpora()
    folder = tmp_path_factory.mktemp("hf_folder")
    train, held = [], []
    for path in CORPUS_FILES:
        lines = path.read_text(encoding="utf-8").split("\n")[:100]
        train += [line for i, line in enumerate(lines) if i % 10]
        held += [line for i, line in enumerate(lines) if i % 10 == 0 and line.strip()][:8]
    assert len(held) >= 35
    (folder / "train.txt").write_text("\n".join(train) + "\n", encoding="utf-8")
    project = folder / "p.tokproj"
    ids = {}
    for name, flags in RUNS.items():
        assert run_cli(["train", str(folder / "train.txt"), "--project", str(project), *flags, "--name", name,
                        "--progress", "none", "--no-count-cache"]) == 0
        ids[name] = len(ids) + 1
    return {"folder": folder, "project": project, "held": held, "ids": ids}


def _export(runs: dict, name: str, *extra: str) -> tuple[int, Path]:
    out = runs["folder"] / f"{name}-folder"
    code = run_cli(["export", str(runs["project"]), "--run", str(runs["ids"][name]), "--format", "hf-folder",
                    "--out", str(out), "--force", *extra])
    return code, out


@pytest.mark.parametrize("name", list(RUNS))
def test_the_folder_loads_in_transformers_offline_and_gives_our_ids_with_and_without_specials(runs, name):
    code, out = _export(runs, name)
    assert code == 0
    assert sorted(p.name for p in out.iterdir()) == ["special_tokens_map.json", "tokenizer.json",
                                                     "tokenizer_config.json"]  # no config.json
    hf = transformers.AutoTokenizer.from_pretrained(str(out), local_files_only=True)
    tok = load_tokenizer(f"{runs['project']}#{runs['ids'][name]}")
    assert tok.template in ("llama", "bert")
    encoder = Encoder(tok)
    for role, token in tok.special_roles.items():  # model code finds each role's token
        assert getattr(hf, f"{role}_token") == token
        assert getattr(hf, f"{role}_token_id") == tok.special_tokens[token]
    added = 0
    for line in runs["held"]:
        ours = encoder.encode(line)
        assert hf(line, add_special_tokens=False)["input_ids"] == ours, (name, line)
        templated = with_template(ours, tok.special_roles, tok.template, tok.special_tokens)
        assert hf(line)["input_ids"] == templated, (name, line)  # add_special_tokens=True, the default
        assert hf.decode(ours) == encoder.decode(ours), (name, line)
        added += len(templated) - len(ours)
    assert added == len(runs["held"]) * (2 if tok.template == "bert" else 1)


def test_the_config_says_the_class_the_roles_the_length_and_the_chat_template(runs, tmp_path):
    template = tmp_path / "chat.jinja"
    template.write_text("{% for m in messages %}{{ bos_token }}{{ m['content'] }}{% endfor %}", encoding="utf-8")
    code, out = _export(runs, "unigram", "--chat-template", str(template), "--model-max-length", "512")
    assert code == 0
    config = json.loads((out / "tokenizer_config.json").read_text("utf-8"))
    assert config["tokenizer_class"] == "PreTrainedTokenizerFast"
    assert (config["bos_token"], config["eos_token"], config["unk_token"]) == ("<s>", "</s>", "<unk>")
    assert config["add_bos_token"] is True and config["model_max_length"] == 512
    assert json.loads((out / "special_tokens_map.json").read_text("utf-8")) == {
        "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}
    hf = transformers.AutoTokenizer.from_pretrained(str(out), local_files_only=True)
    assert hf.model_max_length == 512
    text = hf.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False)
    assert text == "<s>hi"
    # BERT's folder leaves add_bos_token out: transformers would rebuild (and lose) [CLS] … [SEP] from it
    code, out = _export(runs, "wordpiece")
    assert code == 0 and "add_bos_token" not in json.loads((out / "tokenizer_config.json").read_text("utf-8"))


def test_the_users_files_are_kept_and_never_replaced_without_force(runs, capsys):
    out = runs["folder"] / "mine"
    out.mkdir()
    (out / "config.json").write_text("{}", encoding="utf-8")
    (out / "tokenizer.json").write_text("mine", encoding="utf-8")
    args = ["export", str(runs["project"]), "--run", str(runs["ids"]["bpe"]), "--format", "hf-folder", "--out", str(out)]
    assert run_cli(args) == 2
    assert "already exists" in capsys.readouterr().err and (out / "tokenizer.json").read_text("utf-8") == "mine"
    assert run_cli([*args, "--force"]) == 0
    assert (out / "config.json").read_text("utf-8") == "{}"  # the user's other file stays
    assert json.loads((out / "tokenizer.json").read_text("utf-8"))["post_processor"]["type"] == "TemplateProcessing"
    assert run_cli(["export", str(runs["project"]), "--format", "hf", "--out", str(out / "t.json"),
                    "--chat-template", "x.jinja"]) == 2
    assert "use it with --format hf-folder" in capsys.readouterr().err


def test_roles_are_stored_and_written_to_the_sentencepiece_model(runs):
    tok = load_tokenizer(f"{runs['project']}#{runs['ids']['unigram']}")
    assert dict(tok.special_roles) == {"bos": "<s>", "eos": "</s>", "unk": "<unk>"} and tok.template == "llama"
    bpe = load_tokenizer(f"{runs['project']}#{runs['ids']['bpe']}")
    assert list(bpe.special_tokens) == ["<|begin_of_text|>", "<|end_of_text|>"]  # role tokens became specials
    out = runs["folder"] / "u.model"
    assert run_cli(["export", str(runs["project"]), "--run", str(runs["ids"]["unigram"]), "--format", "spm",
                    "--out", str(out), "--force"]) == 0
    processor = sentencepiece.SentencePieceProcessor(model_file=str(out))
    assert (processor.bos_id(), processor.eos_id(), processor.unk_id()) == (1, 2, 0)
    line = runs["held"][0]
    assert processor.encode(line, add_bos=True) == [1, *Encoder(tok).encode(line)]


def test_a_damaged_role_is_named_and_a_default_run_exports_no_post_processor(runs, tmp_path):
    project = tmp_path / "d.tokproj"
    project.write_bytes(runs["project"].read_bytes())
    with sqlite3.connect(project) as db:
        raw = db.execute("SELECT settings FROM runs WHERE id = ?", (runs["ids"]["wordpiece"],)).fetchone()[0]
        settings = json.loads(raw)
        settings["special_roles"]["cls"] = "[NOPE]"
        db.execute("UPDATE runs SET settings = ? WHERE id = ?", (json.dumps(settings), runs["ids"]["wordpiece"]))
    with pytest.raises(DamagedValue, match="special roles"):
        load_tokenizer(f"{project}#{runs['ids']['wordpiece']}")
    # A WordPiece run without roles: BERT's specials in the vocabulary, but nothing added around texts.
    spec = RunSpec(model="wordpiece", vocab_size=100).validate()
    assert spec.template == "none" and "special_roles" not in spec.settings() and "template" not in spec.settings()


@pytest.mark.parametrize(("kwargs", "field", "words"), [
    ({"model": "bpe", "special_roles": {"unk": "<unk>"}}, "special_roles", "has no unknown token"),
    ({"model": "wordpiece", "special_roles": {"unk": "<oov>"}}, "special_roles", "[UNK]"),
    ({"model": "wordpiece", "template": "bert", "special_roles": {"cls": "[CLS]"}}, "template", "sep"),
    ({"model": "bpe", "template": "llama"}, "template", "bos"),
    ({"model": "bpe", "template": "t5"}, "template", "unknown post-processor template"),
    ({"model": "bpe", "special_roles": {"boss": "<s>"}}, "special_roles", "not a special-token role"),
    ({"model": "bpe", "special_roles": {"bos": "s"}}, "special_tokens", "one character"),
])
def test_roles_that_cannot_be_used_are_refused_naming_the_setting(kwargs, field, words):
    with pytest.raises(ConfigError) as caught:
        RunSpec(vocab_size=400, **kwargs).validate()
    assert caught.value.field == field and words in str(caught.value)


def test_the_cli_names_the_flag_of_a_bad_role(tmp_path, capsys):
    (tmp_path / "t.txt").write_text("hello world\n", encoding="utf-8")
    code = run_cli(["train", str(tmp_path / "t.txt"), "--project", str(tmp_path / "p.tokproj"), "--vocab-size", "300",
                    "--special", "bos=<s>", "--special", "bos=<b>"])
    assert code == 2 and "--special: the bos role is given twice" in capsys.readouterr().err


@pytest.mark.parametrize("name", list(RUNS))
def test_encode_applies_the_runs_template_as_the_exported_folder_does(runs, name, capsys):
    """``workbench encode`` adds what the run's post-processor adds (the default, as tokenizers' and
    transformers' encode do); ``--no-special-tokens`` leaves it out. It used to ignore the template."""
    code, out = _export(runs, name)
    assert code == 0
    hf = transformers.AutoTokenizer.from_pretrained(str(out), local_files_only=True)
    source = f"{runs['project']}#{runs['ids'][name]}"
    for line in runs["held"][:6]:
        capsys.readouterr()
        assert run_cli(["encode", "--tokenizer", source, "--text", line, "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["ids"] == hf(line)["input_ids"], (name, line)
        assert run_cli(["encode", "--tokenizer", source, "--text", line, "--json", "--no-special-tokens"]) == 0
        assert json.loads(capsys.readouterr().out)["ids"] == hf(line, add_special_tokens=False)["input_ids"]


def test_a_default_wordpiece_run_tells_model_code_its_pad_and_unk_tokens(runs, tmp_path):
    """No roles set (the default): the folder names the roles its tokens' conventional names say, so
    transformers can pad a batch; the ids stay the run's (no template is inferred)."""
    project = tmp_path / "wp.tokproj"
    assert run_cli(["train", str(runs["folder"] / "train.txt"), "--project", str(project), "--model", "wordpiece",
                    "--vocab-size", "600", "--progress", "none", "--no-count-cache"]) == 0
    out = tmp_path / "folder"
    assert run_cli(["export", str(project), "--format", "hf-folder", "--out", str(out)]) == 0
    hf = transformers.AutoTokenizer.from_pretrained(str(out), local_files_only=True)
    assert (hf.pad_token, hf.unk_token, hf.cls_token, hf.sep_token, hf.mask_token) == (
        "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
    encoder = Encoder(load_tokenizer(str(project)))
    batch = hf(runs["held"][:2], padding=True)["input_ids"]
    for line, padded in zip(runs["held"][:2], batch):
        ours = encoder.encode(line)
        assert padded[:len(ours)] == ours and set(padded[len(ours):]) <= {hf.pad_token_id}
