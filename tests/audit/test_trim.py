"""Trim: the cascade on a hand-built vocabulary, and trimmed tokenizers that load in their real
library (tokenizers for a trained run's tokenizer.json, tiktoken for a rank file) with the
workbench's ids on held-out lines, every line decoding back to itself."""

from __future__ import annotations

import csv
import subprocess
import sys

import pytest
import tiktoken
from audit_vocabs import audit_vocab
from tiktoken.load import load_tiktoken_bpe
from tokenizers import Tokenizer as HFTokenizer

from workbench.core.encoder import Encoder
from workbench.core.trim import plan_trim
from workbench.errors import WorkbenchError
from workbench.formats.tiktoken_file import tiktoken_pattern
from workbench.store import ProjectStore
from workbench.tasks.trim import held_out_texts, trim_source

WORKBENCH = [sys.executable, "-m", "workbench"]


def test_removing_a_part_removes_what_it_builds():
    tok = audit_vocab()  # 256 bc, 257 ab, 258 abc = ab + c, 259 xy, 260 xyz = xy + z, 261 E4 B8
    plan = plan_trim(tok, [257])
    assert plan.requested == (257,) and plan.cascade == (258,) and plan.dropped_merges == 2
    assert plan.tokenizer.vocab[257] == b"" and plan.tokenizer.vocab[258] == b""  # ids kept: empty slots
    assert plan.tokenizer.vocab[259] == b"xy" and len(plan.tokenizer.merges) == 4
    assert Encoder(plan.tokenizer).encode("abc xyz") == [97, 256, 32, 260]
    compact = plan_trim(tok, [259], compact=True)  # xy goes, and xyz with it; 261 becomes 259
    assert compact.cascade == (260,)
    assert dict(compact.id_map)[261] == 259 and len(compact.tokenizer.vocab) == 260
    assert compact.tokenizer.merges[-1] == (0xE4, 0xB8, 259)


@pytest.mark.parametrize(("ids", "message"), [
    ([300], "id 300 is out of range: this tokenizer's ids are 0 to 261"),
    ([97], "id 97 is a base symbol"),
])
def test_ids_trim_cannot_take(ids, message):
    with pytest.raises(WorkbenchError, match=message):
        plan_trim(audit_vocab(), ids)


@pytest.fixture(scope="module")
def trained(corpora, tmp_path_factory):
    """A byte-level run on a Shakespeare slice, and held-out lines from further on."""
    folder = tmp_path_factory.mktemp("trim")
    text = next(p for p in corpora if p.name == "en_shakespeare.txt").read_bytes()
    (folder / "train.txt").write_bytes(text[:150_000])
    held = text[400_000:430_000]
    (folder / "held.txt").write_bytes(held[: held.rfind(b"\n") + 1])
    subprocess.run([*WORKBENCH, "train", "train.txt", "--project", "p.tokproj", "--vocab-size", "700",
                    "--pretokenizer", "gpt2"], cwd=folder, check=True, capture_output=True)
    return folder


@pytest.mark.parametrize("compact", [False, True])
def test_trimmed_run_matches_tokenizers_and_round_trips(trained, compact):
    from workbench.corpus import open_source

    out = trained / f"trimmed-{compact}.json"
    held = [open_source(str(trained / "held.txt"))]
    result = trim_source(str(trained / "p.tokproj") + "#1", filters=["residue"], held_out=held, compact=compact,
                         project=str(trained / "p.tokproj"), out=str(out))
    plan = result.plan
    assert plan.requested and result.filters["residue"] == len(plan.requested)
    assert result.lines_checked > 500 and result.lines_round_trip == result.lines_checked
    assert result.tokens_after is not None and result.tokens_before is not None
    assert result.tokens_after >= result.tokens_before  # fewer merges never make fewer tokens here
    with ProjectStore.open(trained / "p.tokproj", readonly=True) as store:
        stored = store.load_tokenizer(result.run_id)
        run = store.run(result.run_id)
    assert stored.vocab == plan.tokenizer.vocab and stored.merges == plan.tokenizer.merges
    assert run.status == "finished" and run.settings["trim"]["requested"] == list(plan.requested)
    hf = HFTokenizer.from_file(str(out))
    enc = Encoder(stored)
    lines = held_out_texts(held)
    for line in lines:
        ids = enc.encode(line)
        assert hf.encode(line, add_special_tokens=False).ids == ids
        assert enc.decode(ids) == line
    with open(f"{out}.idmap.csv", newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["old_id", "new_id"] and len(rows) - 1 == sum(1 for p in stored.vocab if p)
    removed = set(plan.removed)
    assert all(int(old) not in removed for old, _new in rows[1:])
    assert all(old == new for old, new in rows[1:]) != compact


def test_trimmed_rank_file_matches_tiktoken(cl100k_file, trained, tmp_path):
    """cl100k's first 3,000 ranks, " the" and "in" removed: the cascade re-derives by tiktoken's
    rule, the export keeps the ids (gaps) and tiktoken gives the same ids on held-out lines."""
    small = tmp_path / "small.tiktoken"
    small.write_bytes(b"".join(cl100k_file.read_bytes().splitlines(keepends=True)[:3000]))
    out = tmp_path / "trimmed.tiktoken"
    done = subprocess.run([*WORKBENCH, "trim", str(small), "--pattern", "cl100k", "--remove", "279 258",
                           "--held-out", str(trained / "held.txt"), "--out", str(out)],
                          capture_output=True, text=True, check=True).stdout
    assert "removed 2 requested +" in done and "round trip:" in done
    ranks = load_tiktoken_bpe(str(out))
    assert len(ranks) < 3000 and 279 not in ranks.values() and 258 not in ranks.values()
    assert max(ranks.values()) == 2999  # ids kept
    encoding = tiktoken.Encoding(name="trimmed", pat_str=tiktoken_pattern("cl100k"), mergeable_ranks=ranks,
                                 special_tokens={})
    from workbench.tasks.sources import load_tokenizer

    mine = Encoder(load_tokenizer(str(out)))
    for line in (trained / "held.txt").read_text(encoding="utf-8").splitlines(keepends=True):
        ids = encoding.encode_ordinary(line)
        assert mine.encode(line) == ids and encoding.decode(ids) == line


def test_cli_refuses_out_of_range_ids_in_one_line(trained, capsys):
    from workbench.cli import run_cli

    project = str(trained / "p.tokproj")
    assert run_cli(["trim", project + "#1", "--remove", "5,70000", "--project", project]) == 2
    assert capsys.readouterr().err == "workbench trim: error: id 70000 is out of range: this tokenizer's ids are 0 to 699\n"


def test_a_large_trim_is_shown_and_done_only_with_yes(trained, capsys):
    """--filter residue cascades through most of a small vocabulary: without --yes the CLI says how
    much (count, share, cascade, token change) and stores nothing; --dry-run shows the same plan;
    with --yes the stored run lists its entries (not the kept ids' range) and its curves are not flat."""
    import json

    from workbench.cli import run_cli

    project = str(trained / "p.tokproj")
    with ProjectStore.open(trained / "p.tokproj", readonly=True) as store:
        runs_before = len(store.runs())
    assert run_cli(["trim", project + "#1", "--filter", "residue", "--project", project]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "% of the vocabulary" in err and "by the cascade" in err
    assert "--dry-run" in err and "--yes" in err
    assert run_cli(["trim", project + "#1", "--filter", "residue", "--dry-run", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["dry_run"] and plan["removed_share"] > 0.1 and plan["run_id"] is None and not plan["exported"]
    with ProjectStore.open(trained / "p.tokproj", readonly=True) as store:
        assert len(store.runs()) == runs_before
    assert run_cli(["trim", project + "#1", "--filter", "residue", "--project", project, "--yes", "--json"]) == 0
    done = json.loads(capsys.readouterr().out)
    assert done["removed"] == plan["removed"] and done["vocab_after"] == plan["vocab_after"]
    assert run_cli(["runs", project]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.split()[:1] == [str(done["run_id"])])
    assert row.split()[2] == str(done["vocab_after"]) and "ids kept" in row
    with ProjectStore.open(trained / "p.tokproj", readonly=True) as store:
        steps = store.steps(done["run_id"], 0)
    tokens = [s.token_count for s in steps]
    assert tokens == sorted(tokens, reverse=True) and tokens[0] > tokens[-1] > 0
    assert sum(1 for s in steps if s.frequency) > len(steps) // 2


def test_tiktokens_rule_derives_a_token_again_where_a_merge_list_cannot():
    """ab (256), bc (257), abc (258). With a merge list abc = ab + c dies with ab; with tiktoken's
    rule abc is whatever its bytes merge into, so without ab it is made from a + bc and stays."""
    from dataclasses import replace

    tok = _tiny_ranks()
    pairs = replace(tok, merge_rule="pairs", merges=((97, 98, 256), (98, 99, 257), (256, 99, 258)))
    assert plan_trim(pairs, [256]).cascade == (258,)
    plan = plan_trim(tok, [256])
    assert plan.cascade == () and plan.tokenizer.merges == ((98, 99, 257), (97, 257, 258))
    assert Encoder(plan.tokenizer).encode("abc") == [258]
    assert plan_trim(tok, [257]).cascade == ()  # abc = ab + c, untouched
    both = plan_trim(tok, [256, 257])  # nothing derives abc any more
    assert both.cascade == (258,) and Encoder(both.tokenizer).encode("abc") == [97, 98, 99]


def _tiny_ranks():
    from workbench.core.model import Tokenizer

    vocab = tuple(bytes([b]) for b in range(256)) + (b"ab", b"bc", b"abc")
    return Tokenizer(vocab=vocab, merges=(), units="bytes", pretokenizer="gpt2", merge_rule="bytes")


def test_trim_never_overwrites_an_output(trained, capsys):
    from workbench.cli import run_cli

    project = str(trained / "p.tokproj")
    out = trained / "kept.json"
    out.write_text("mine", encoding="utf-8")
    assert run_cli(["trim", project + "#1", "--remove", "300", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(out) in err and out.read_text(encoding="utf-8") == "mine"
    map_file = trained / "fresh.json.idmap.csv"
    map_file.write_text("map", encoding="utf-8")
    assert run_cli(["trim", project + "#1", "--remove", "300", "--out", str(trained / "fresh.json")]) == 2
    assert "fresh.json.idmap.csv exists" in capsys.readouterr().err
    assert not (trained / "fresh.json").exists() and map_file.read_text(encoding="utf-8") == "map"


def test_a_trim_whose_gaps_no_file_can_hold_says_only_compact_exports():
    """The new-user check: a trim keeping ids exported with "fix the file"; the report now says why
    and what to do, from the same limit the readers apply."""
    from dataclasses import replace

    from workbench.formats.common import MAX_UNUSED_IDS
    from workbench.tasks.trim import gaps_too_wide

    plan = plan_trim(audit_vocab(), [257])
    assert not gaps_too_wide(plan) and not gaps_too_wide(replace(plan, compact=True))
    kept = len(plan.id_map)
    wide = replace(plan, id_map=((0, 0), (1, kept + MAX_UNUSED_IDS)))
    assert gaps_too_wide(wide) and not gaps_too_wide(replace(wide, compact=True))
