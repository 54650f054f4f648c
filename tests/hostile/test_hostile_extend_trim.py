"""Hostile input to ``workbench extend``, ``trim`` and ``audit`` (issue 25), through the real CLI.

A damaged base (a ``.tiktoken`` cut mid-line, a rank of 10**9, a ``tokenizer.json`` merge of a
piece that is not in the vocabulary, of one piece, or made twice), a base that is not BPE, ids that
are out of range or not numbers, a ``--remove`` that orphans merges (the cascade takes them and
says so), an output that exists (never overwritten: not the export, its id map, the new tokens'
CSV or a non-project given as ``--project``), and a project run edited to hold garbage. The
contract: exit 2 with one line naming the file or flag, nothing written, no traceback, no hang.
"""

from __future__ import annotations

import contextlib
import json
import random
import re
import shutil
import sqlite3
from pathlib import Path

import pytest
from hostile_helpers import Hang, digest, one_line_error, run_inproc, workbench_limited

CORPUS = "Domain words: tokenizer tokenizers tokenization, merges merged merging. 数字 123.\n" * 30


@pytest.fixture()
def corpus(tmp_path) -> Path:
    path = tmp_path / "domain.txt"
    path.write_text(CORPUS, "utf-8")
    return path


def _refused(args: list[str], *names: str) -> str:
    code, _out, err = run_inproc(args, timeout_s=30)
    assert code == 2, (args, err[-800:])
    line = one_line_error(err)
    for name in names:
        assert name in line, (args, line)
    return line


def _three_commands(base: str, corpus: Path, tmp_path: Path) -> list[list[str]]:
    return [["extend", str(corpus), "--base", base, "--add", "5", "--project", str(tmp_path / "ext.tokproj"),
             "--progress", "none", "--no-count-cache"],
            ["trim", base, "--remove", "300", "--out", str(tmp_path / "trimmed.json")],
            ["audit", base]]


def _hf_with(exports, tmp_path: Path, change) -> Path:
    doc = json.loads(exports["hf"].read_text("utf-8"))
    change(doc["model"]["merges"])
    path = tmp_path / "damaged.json"
    path.write_text(json.dumps(doc, ensure_ascii=False), "utf-8")
    return path


def _cut_tiktoken(exports, tmp_path: Path) -> Path:
    data = exports["tiktoken"].read_bytes()
    path = tmp_path / "cut.tiktoken"
    path.write_bytes(data[: data.index(b"\n", len(data) // 2) + 3])  # mid-line: a token without its rank
    shutil.copy(exports["tiktoken"].with_name(exports["tiktoken"].name + ".json"),
                tmp_path / "cut.tiktoken.json")
    return path


DAMAGED = {
    "tiktoken cut mid-line": (_cut_tiktoken, ("cut.tiktoken", "line")),
    "merge of a piece not in the vocab": (
        lambda e, t: _hf_with(e, t, lambda m: m.__setitem__(5, ["zzzq", "qqq"])), ("damaged.json", "zzzq")),
    "merge of one piece": (lambda e, t: _hf_with(e, t, lambda m: m.__setitem__(5, ["a"])), ("damaged.json", "entry 6")),
    "a merge that is a number": (lambda e, t: _hf_with(e, t, lambda m: m.__setitem__(5, 7)), ("damaged.json", "entry 6")),
    "a token made by two merges": (lambda e, t: _hf_with(e, t, lambda m: m.append(m[3])), ("damaged.json", "two merges")),
}


@pytest.mark.parametrize("case", list(DAMAGED))
def test_a_damaged_base_is_refused_in_one_line_by_extend_trim_and_audit(case, exports, corpus, tmp_path):
    make, names = DAMAGED[case]
    base = make(exports, tmp_path)
    before = digest(*tmp_path.iterdir())
    for args in _three_commands(str(base), corpus, tmp_path):
        _refused(args, *names)
    assert digest(*tmp_path.iterdir()) == before  # nothing written: no project, no export, base untouched


def test_a_rank_of_a_billion_in_an_extend_base_is_refused_before_allocating(exports, corpus, tmp_path):
    base = tmp_path / "huge.tiktoken"
    base.write_bytes(exports["tiktoken"].read_bytes() + b"enp6eno= 1000000000\n")
    for args in (["extend", str(corpus), "--base", str(base), "--add", "5", "--project", "x.tokproj",
                  "--progress", "none"], ["trim", str(base), "--remove", "300", "--out", "t.json"]):
        done = workbench_limited(*args, cwd=tmp_path)  # 2 GB cap: a dense 10**9 vocabulary needs 8+
        assert done.returncode == 2, done.stderr[-500:]
        assert "huge.tiktoken" in one_line_error(done.stderr)
    assert not (tmp_path / "x.tokproj").exists() and not (tmp_path / "t.json").exists()


@pytest.mark.parametrize("run, model", [(2, "wordpiece"), (3, "unigram")])
def test_a_wordpiece_or_unigram_base_is_only_read(three_runs, corpus, tmp_path, run, model):
    """Extend and trim take WordPiece and Unigram bases now: the base project stays byte for byte what
    it was, a trim that would take a single character (which any text may need) or an id out of range
    is refused in one line, and an audit reads any model."""
    from workbench.tasks.sources import load_tokenizer

    project = tmp_path / "three.tokproj"
    shutil.copy(three_runs, project)
    before = digest(project)
    base = f"{project}#{run}"
    tok = load_tokenizer(base)
    assert tok.model == model
    specials = set(tok.special_tokens.values()) if isinstance(tok.special_tokens, dict) else set()
    single = next(i for i, piece in enumerate(tok.vocab)
                  if i not in specials and len(piece.decode("utf-8", "replace").removeprefix("##")) == 1)
    _refused(["trim", base, "--remove", str(single), "--project", str(project)], "single character")
    _refused(["trim", base, "--remove", str(len(tok.vocab) + 7), "--project", str(project)], "out of range")
    assert digest(project) == before
    code, _out, err = run_inproc(["extend", str(corpus), "--base", base, "--add", "5", "--project",
                                  str(tmp_path / "e.tokproj"), "--progress", "none"], timeout_s=60)
    assert code == 0, err[-800:]
    assert digest(project) == before and (tmp_path / "e.tokproj").exists()
    code, out, err = run_inproc(["audit", base, "--json"], timeout_s=30)
    assert code == 0, err
    assert json.loads(out)["counts"]["tokenizer"]


BAD_IDS = {"-1": "negative", "abc": "not an id", "1e3": "not an id", "[1.5]": "not an id", "[[300]]": "not an id",
           '{"a": 1}': "JSON list", "9" * 30: "far too large", "99999": "out of range", "65": "base symbol",
           "[" * 5000: "nested", "300,,x": "not an id"}


def test_ids_out_of_range_or_not_numbers_are_refused_naming_the_item(exports, tmp_path):
    out = tmp_path / "t.json"
    for remove, says in BAD_IDS.items():
        _refused(["trim", str(exports["hf"]), "--remove", remove, "--out", str(out)], says)
    _refused(["trim", str(exports["hf"]), "--remove", "", "--out", str(out)], "nothing to remove")
    assert not out.exists() and not Path(f"{out}.idmap.csv").exists()


def test_a_remove_that_orphans_merges_cascades_and_says_so(exports, tmp_path):
    """The first merge's token is a part of later ones: they go with it (said, listed), and what is
    written loads in the real library with every remaining merge's parts present."""
    from tokenizers import Tokenizer as HFTokenizer

    doc = json.loads(exports["hf"].read_text("utf-8"))
    first = "".join(doc["model"]["merges"][0]) if isinstance(doc["model"]["merges"][0], list) \
        else doc["model"]["merges"][0].replace(" ", "")
    first_id = doc["model"]["vocab"][first]
    source = digest(exports["hf"])
    out = tmp_path / "t.json"
    code, text, err = run_inproc(["trim", str(exports["hf"]), "--remove", str(first_id), "--out", str(out)],
                                 timeout_s=30)
    assert code == 0, err
    assert "cascade (removed because a removed token was their part)" in text
    code, js, err = run_inproc(["trim", str(exports["hf"]), "--remove", str(first_id), "--out",
                                str(tmp_path / "t2.json"), "--json"], timeout_s=30)
    assert code == 0, err
    result = json.loads(js)
    assert result["requested"] == [first_id] and result["cascade"]
    assert result["removed"] == 1 + len(result["cascade"]) == result["dropped_merges"]
    trimmed = json.loads(out.read_text("utf-8"))
    vocab = trimmed["model"]["vocab"]
    assert first not in vocab and len(vocab) == len(doc["model"]["vocab"]) - result["removed"]
    for merge in trimmed["model"]["merges"]:
        left, right = merge if isinstance(merge, list) else merge.split(" ")
        assert left in vocab and right in vocab and left + right in vocab, merge
    ids = HFTokenizer.from_file(str(out)).encode("tokenizer merges words").ids
    assert ids and all(i not in [first_id, *result["cascade"]] for i in ids)
    assert digest(exports["hf"]) == source  # the source is only read


def test_an_existing_output_is_never_overwritten(exports, trained, corpus, tmp_path):
    keep = tmp_path / "keep.json"
    keep.write_text('{"mine": 1}', "utf-8")
    side = tmp_path / "side.json.idmap.csv"
    side.write_text("a,b\n", "utf-8")
    folder = tmp_path / "gpt2"
    folder.mkdir()
    (folder / "merges.txt").write_text("mine\n", "utf-8")
    text_file = tmp_path / "notes.txt"
    text_file.write_text("not a project\n", "utf-8")
    before = digest(keep, side, folder / "merges.txt", text_file, corpus, trained)
    src = f"{trained}#1"
    _refused(["trim", src, "--remove", "280", "--out", str(keep)], "keep.json", "exists")
    _refused(["trim", src, "--remove", "280", "--out", str(tmp_path / "side.json")], "idmap.csv", "exists")
    _refused(["trim", src, "--remove", "280", "--out", str(folder), "--format", "gpt2"], "merges.txt", "exists")
    _refused(["trim", src, "--remove", "280", "--out", str(trained)], "p.tokproj", "exists")
    _refused(["trim", src, "--remove", "280", "--project", str(text_file)], "notes.txt", "not a Tokenizer Workbench")
    _refused(["extend", str(corpus), "--base", src, "--add", "5", "--project", str(text_file), "--progress", "none"],
             "notes.txt", "not a Tokenizer Workbench")
    # --csv-out naming the corpus itself: refused before anything is trained or stored
    new = tmp_path / "new.tokproj"
    _refused(["extend", str(corpus), "--base", src, "--add", "5", "--project", str(new), "--csv-out", str(corpus),
              "--progress", "none"], "--csv-out", "exists")
    _refused(["extend", str(corpus), "--base", src, "--add", "5", "--project", str(new), "--csv-out",
              str(tmp_path / "missing" / "x.csv"), "--progress", "none"], "--csv-out", "does not exist")
    _refused(["extend", str(corpus), "--base", src, "--add", "5", "--project", str(new), "--reference",
              str(tmp_path / "missing.txt"), "--progress", "none"], "--reference", "no such file")
    assert not new.exists()
    assert digest(keep, side, folder / "merges.txt", text_file, corpus, trained) == before
    assert not (tmp_path / "side.json").exists()


def test_trim_out_named_tiktoken_holds_tiktoken_not_json(trained, tmp_path):
    out = tmp_path / "t.tiktoken"
    code, _out, err = run_inproc(["trim", f"{trained}#1", "--remove", "280", "--out", str(out)], timeout_s=30)
    assert code == 0, err
    assert not out.read_bytes().lstrip().startswith(b"{")
    lines = out.read_bytes().splitlines()
    assert lines and all(re.fullmatch(rb"[A-Za-z0-9+/=]+ \d+", line) for line in lines)


def test_a_project_run_edited_to_hold_garbage_is_refused_or_used_in_one_line(three_runs, corpus, tmp_path):
    """The crafted-project mutations (stored values of run 1 made hostile), then extend, trim and
    audit of that run: exit 0 or 2, one line, no traceback or hang, and the project is never
    written by trim/audit when refused (extend/trim store into another project)."""
    from test_fuzz_project_columns import _mutate

    rng = random.Random("hostile-extend-trim")
    failures: list[str] = []
    codes: list[int] = []
    for n in range(8):
        project = tmp_path / f"case{n}.tokproj"
        shutil.copy(three_runs, project)
        with contextlib.closing(sqlite3.connect(project, isolation_level=None)) as conn:
            done = [_mutate(conn, rng) for _ in range(rng.randint(1, 3))]
            if n % 2:  # aim at run 1 (the BPE run) too: one of its merges made hostile
                conn.execute("UPDATE merges SET new_id = ? WHERE run_id = 1 AND rank = ?",
                             (rng.choice([-1, 10**12, 5, "x"]), rng.randint(1, 40)))
        before = digest(project)
        case = f"#{n} ({'; '.join(done)})"
        out = tmp_path / f"out{n}"
        out.mkdir()
        for args in (["extend", str(corpus), "--base", f"{project}#1", "--add", "5", "--project",
                      str(out / "e.tokproj"), "--progress", "none", "--no-count-cache"],
                     ["trim", f"{project}#1", "--remove", "300", "--out", str(out / "t.json")],
                     ["audit", f"{project}#1"]):
            try:
                code, _o, err = run_inproc(args, timeout_s=30)
            except Exception as exc:  # noqa: BLE001 - a traceback is exactly what this test reports
                failures.append(f"{case}: {args[0]} raised {type(exc).__name__}: {exc}"[:300])
                continue
            except Hang:
                failures.append(f"{case}: {args[0]} did not finish in 30 s")
                continue
            lines = [line for line in err.splitlines() if line.strip() and "note:" not in line
                     and ": warning: " not in line]
            if code not in (0, 2) or "Traceback" in err or (code == 2 and len(lines) != 1):
                failures.append(f"{case}: {args[0]} exited {code}: {err[-300:]}")
            codes.append(code)
        if digest(project) != before:
            failures.append(f"{case}: the crafted project was written")
    assert not failures, "\n".join(failures[:6])
    assert 0 in codes and 2 in codes, codes  # some garbage is refused, some left the run usable
