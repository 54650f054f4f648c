"""Hostile tokenizer files and inputs through the real CLI (issue 15, items 2, 3, 4, 9).

Each case is something a user can feed in: a 4 KB file with one id of 10**9, /dev/zero, a FIFO,
a broken sidecar, a 5,000-digit id, a JSONL line nested 100,000 deep, a count of 2**63. The
contract: exit 2 with exactly one line on stderr that names the file or argument, nothing
allocated by the hostile number, nothing stored, no traceback, no hang.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest
from hostile_helpers import digest, one_line_error, run_inproc, workbench_limited

HUGE = [10**9, 2 * 10**9, 2**40, 2**63]


@pytest.mark.parametrize("value", HUGE)
def test_huge_id_in_vocab_json_is_refused_before_allocating(exports, tmp_path, value):
    folder = tmp_path / "gpt2"
    shutil.copytree(exports["gpt2"], folder)
    vocab = json.loads((folder / "vocab.json").read_text("utf-8"))
    vocab["zzzz"] = value
    (folder / "vocab.json").write_text(json.dumps(vocab), "utf-8")
    project = tmp_path / "p.tokproj"
    calls = [["encode", "--tokenizer", "gpt2/vocab.json", "--text", "hi"]]
    if value == HUGE[0]:  # every reading command once; the other sizes through encode only
        calls += [["decode", "--tokenizer", "gpt2/vocab.json", "--ids", "1"], ["import", "gpt2", "--project", "p.tokproj"]]
    for args in calls:
        done = workbench_limited(*args, cwd=tmp_path)  # 2 GB cap: a dense 10**9 vocabulary would need 8+
        assert done.returncode == 2, done.stderr[-500:]
        line = one_line_error(done.stderr)
        assert "vocab.json" in line and "beyond" in line and str(value)[:9] in line
    assert not project.exists()


@pytest.mark.parametrize("value", [10**9, 2**63])
def test_huge_id_in_tokenizer_json_and_tiktoken_is_refused(exports, tmp_path, value):
    doc = json.loads(exports["hf"].read_text("utf-8"))
    doc["model"]["vocab"]["zzzz"] = value
    (tmp_path / "tokenizer.json").write_text(json.dumps(doc), "utf-8")
    ranks = exports["tiktoken"].read_bytes() + b"enp6enp6 " + str(value).encode() + b"\n"
    (tmp_path / "big.tiktoken").write_bytes(ranks)
    for src in ("tokenizer.json", "big.tiktoken"):
        done = workbench_limited("encode", "--tokenizer", src, "--text", "hi", cwd=tmp_path)
        assert done.returncode == 2, done.stderr[-500:]
        line = one_line_error(done.stderr)
        assert src in line and "beyond" in line


def test_broken_sidecar_is_refused_and_never_poisons_the_project(trained, exports, tmp_path):
    """A sidecar whose special token id is text imported "successfully"; then every encode crashed."""
    project = tmp_path / "p.tokproj"
    shutil.copy(trained, project)
    before = digest(project)
    for broken in ({"<|x|>": "abc"}, {"<|x|>": [1]}, [1, 2], {"<|x|>": 10**12}):
        case = tmp_path / f"case{len(str(broken))}"
        case.mkdir()
        shutil.copy(exports["tiktoken"], case / "run.tiktoken")
        side = json.loads(exports["tiktoken"].with_name("run.tiktoken.json").read_text("utf-8"))
        side["special_tokens"] = broken
        (case / "run.tiktoken.json").write_text(json.dumps(side), "utf-8")
        code, _out, err = run_inproc(["import", str(case / "run.tiktoken"), "--project", str(project)])
        assert code == 2, err
        assert "run.tiktoken" in one_line_error(err)
        assert digest(project) == before  # nothing stored


def test_dev_zero_and_fifo_are_refused_by_every_reading_command(trained, exports, tmp_path):
    fifo = tmp_path / "pipe.txt"
    os.mkfifo(fifo)
    os.mkfifo(tmp_path / "pipe.tiktoken")
    os.mkfifo(tmp_path / "pipe.tokproj")
    calls = [
        ["encode", "--tokenizer", str(trained), "--file", "/dev/zero"],
        ["encode", "--tokenizer", str(trained), "--file", str(fifo)],
        ["stats", str(fifo)],
        ["stats", "/dev/zero"],
        ["train", str(fifo), "--project", str(tmp_path / "new.tokproj"), "--merges", "3"],
        ["import", str(tmp_path / "pipe.tiktoken"), "--project", str(tmp_path / "new.tokproj")],
        ["encode", "--tokenizer", str(tmp_path / "pipe.tiktoken"), "--text", "hi"],
        ["runs", str(tmp_path / "pipe.tokproj")],
    ]
    for args in calls:
        code, _out, err = run_inproc(args, timeout_s=10)  # a blocking open() of a FIFO would hang here
        assert code == 2, (args, err)
        line = one_line_error(err)
        assert "regular file" in line, line
    assert not (tmp_path / "new.tokproj").exists()


def test_dev_zero_in_a_child_process_is_refused_at_once(trained, tmp_path):
    done = workbench_limited("encode", "--tokenizer", str(trained), "--file", "/dev/zero", cwd=tmp_path, timeout=30)
    assert done.returncode == 2
    assert "/dev/zero" in one_line_error(done.stderr)


def test_five_thousand_digit_id_is_one_line(trained):
    for ids in ("9" * 5000, "[" + "9" * 5000 + "]", "1," + "9" * 30):
        code, _out, err = run_inproc(["decode", "--tokenizer", str(trained), "--ids", ids])
        assert code == 2
        assert "--ids" in one_line_error(err)


def test_deeply_nested_jsonl_line_is_one_line(tmp_path):
    path = tmp_path / "deep.jsonl"
    path.write_text('{"text": "hello world"}\n{"text": ' + "[" * 100_000 + "]" * 100_000 + "}\n", "utf-8")
    for args in (["train", str(path), "--project", str(tmp_path / "j.tokproj"), "--merges", "3", "--progress", "none"],
                 ["stats", str(path)]):
        code, _out, err = run_inproc(args, timeout_s=30)
        assert code == 2, err
        assert "deep.jsonl:2" in one_line_error(err)
    assert not (tmp_path / "j.tokproj").exists()


@pytest.mark.parametrize("count", [str(2**63), str(2**64), "9" * 5000])
def test_huge_word_count_is_one_line(tmp_path, count):
    path = tmp_path / "c.wordcounts.tsv"
    path.write_text(f"hello\t5\nworld\t{count}\n", "utf-8")
    code, _out, err = run_inproc(["train", str(path), "--project", str(tmp_path / "w.tokproj"), "--merges", "3",
                                  "--progress", "none"], timeout_s=30)
    assert code == 2, err
    assert "c.wordcounts.tsv:2" in one_line_error(err)
    assert not (tmp_path / "w.tokproj").exists()


def test_a_100_kb_token_does_not_hang_the_import(exports, tmp_path):
    """Recovering merges from ranks splits each token (quadratic in its length): a 100 KB token
    took hours; tokens beyond any real file's length are reported as unexplained instead."""
    import base64

    path = tmp_path / "long.tiktoken"
    ranks = exports["tiktoken"].read_bytes()
    next_rank = max(int(line.split()[1]) for line in ranks.splitlines() if line.strip()) + 1
    longest = max((base64.b64decode(line.split()[0]) for line in ranks.splitlines() if line.strip()), key=len)
    # a long repetition of the longest token: every split step merges, so each costs a full scan
    path.write_bytes(ranks + base64.b64encode(longest * (100_000 // len(longest))) + b" %d\n" % next_rank)
    code, out, err = run_inproc(["import", str(path), "--project", str(tmp_path / "p.tokproj")], timeout_s=20)
    assert code == 0, err
    assert "not the merge of two lower-ranked tokens" in out
