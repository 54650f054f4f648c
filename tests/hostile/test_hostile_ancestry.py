"""A legitimately trained deep chain (issue 26): a 1,500-letter line trained without a pre-tokenizer
nests its merges about 940 levels deep, which Python's recursion limit could not walk ("maximum
recursion depth exceeded"). Trained through the real CLI, then explained by the store's ancestry
and the real Merges detail widget, which says how deep the token is."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest
from hostile_helpers import workbench


@pytest.fixture(scope="module")
def deep_chain(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("deep")
    rng = random.Random(1)
    (folder / "line.txt").write_text("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(1500)) + "\n",
                                     encoding="utf-8")
    done = workbench("train", "line.txt", "--project", "deep.tokproj", "--pretokenizer", "none",
                     "--vocab-size", "3000", "--progress", "none", "--no-count-cache", cwd=folder)
    assert done.returncode == 0, done.stderr
    return folder / "deep.tokproj"


def _longest(store) -> int:
    """The id of the longest piece of run 1 (the whole line, built by the deepest chain)."""
    return max((row for row in store.vocab(1)), key=lambda row: len(row[1]))[0]


def test_the_ancestry_of_a_1500_letter_chain_is_built_without_recursion(deep_chain):
    from workbench.store import ProjectStore
    from workbench.store.browse import MergeSource, store_connection

    with ProjectStore.open(deep_chain, readonly=True) as store:
        token = _longest(store)
        root = MergeSource(store_connection(store), ("run", 1)).ancestry(token)
        assert root.depth() > sys.getrecursionlimit() // 2 + 100  # far beyond what recursion reached
        leaves = root.leaves()
        assert b"".join(leaf.piece for leaf in leaves) == root.piece and len(leaves) == len(root.piece)
        assert len(root.merges()) >= root.depth() - 1  # one merge per level at least
        assert "parts=2" in repr(root)


def test_the_merges_detail_shows_the_chain_and_its_depth(deep_chain, qtbot):
    pytest.importorskip("PySide6")
    from workbench.store import ProjectStore
    from workbench.store.browse import MergeSource, store_connection
    from workbench.ui.merges.detail import MergeDetail

    with ProjectStore.open(deep_chain, readonly=True) as store:
        token = _longest(store)
        source = MergeSource(store_connection(store), ("run", 1))
        levels = source.ancestry(token).depth() - 1
        detail = MergeDetail()
        qtbot.addWidget(detail)
        detail.resize(600, 500)
        detail.show()
        detail.show_token(source, token)
        qtbot.waitUntil(lambda: detail.stack.currentIndex() == 1, timeout=10000)
        assert f"{levels} levels deep" in detail.subtitle.text()
        assert "built from 1501 base tokens" in detail.subtitle.text()
        item, nesting = detail.tree.topLevelItem(0), 0
        while item.childCount():  # the tree holds the whole chain, one item per level on the left spine
            item, nesting = item.child(0), nesting + 1
        assert nesting >= levels // 2 and item.text(2) == "base"
        qtbot.wait(50)  # the widget paints the deep tree without trouble


@pytest.mark.parametrize("command", [("export", "--format", "merges-csv", "--out", "m.csv"),
                                     ("export", "--format", "hf", "--out", "t.json"),
                                     ("export", "--format", "tiktoken", "--out", "t.tiktoken"),
                                     ("audit", "--json")])
def test_exporting_and_auditing_the_chain_ends_in_seconds(deep_chain, command):
    """Proving the export's rank table and the audit's derivations ran the merge rule's quadratic scan
    over every piece of up to 1,500 letters: 43 s for a CSV of merges, 80 s for the audit (minutes for
    a longer line). The rule now takes the heap above 48 symbols; a generous bound names a hang."""
    force = ("--force",) if command[0] == "export" else ()
    done = workbench(command[0], str(deep_chain), *command[1:], *force, cwd=deep_chain.parent, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    if command[0] == "audit":
        import json

        counts = json.loads(done.stdout)["counts"]
        # every merge of a trained run is reachable by its own bytes: the derivations found them all
        assert counts["model_unreachable"] == 0 and counts["merge_tokens"] > 1000
    else:
        assert "wrote" in done.stdout + done.stderr
