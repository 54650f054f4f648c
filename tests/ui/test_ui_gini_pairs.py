"""The Compare tab holds a parity-aware run against the project's classic BPE run of the same
vocabulary size, through a real window: the user ticks only the parity run, Compute brings the
"Gini vs classic BPE" page to the front with each language's token cost before and after (equal to
the comparison's own per-language rows) and Gini before → after; a parity run of a size no classic
run has says how to make one. With WORKBENCH_SCREENSHOTS set to a folder, the test leaves its grabs
there (light and dark theme)."""

from __future__ import annotations

import os
from pathlib import Path

from parallel_text import write_parallel
from shared_corpora import CORPORA, require_corpora

from workbench.cli import run_cli

SHOTS = os.environ.get("WORKBENCH_SCREENSHOTS")


def test_compare_pairs_a_parity_run_with_classic_bpe_of_its_size(make_window, qtbot, tmp_path, project):
    require_corpora()
    train = []
    for lang, name in (("en", "en_shakespeare.txt"), ("de", "de_zitate.txt"), ("ru", "ru_fortunes.txt")):
        lines = (CORPORA / name).read_text(encoding="utf-8").splitlines()
        train.append(tmp_path / f"{lang}_train.txt")
        train[-1].write_text("\n".join(lines[:300]) + "\n", encoding="utf-8")
    dev = write_parallel(tmp_path, ("en", "de", "ru"))  # the same content in each: UDHR articles 1-5
    common = ["--project", str(project), "--progress", "none", "--no-count-cache"]
    assert run_cli(["train", *map(str, train), "--model", "bpe", "--vocab-size", "420", "--name", "classic",
                    *common]) == 0
    for size in ("420", "430"):
        assert run_cli(["train", *map(str, train), "--model", "parity-bpe", "--parity-dev",
                        ",".join(map(str, dev)), "--vocab-size", size, "--name", f"parity {size}", *common]) == 0
    window = make_window(project)
    window.resize(1400, 860)
    window.show_panel("compare")
    panel = window.compare
    qtbot.waitUntil(lambda: not panel.listing(), timeout=20000)
    panel.compare_runs([2, 3])  # the two parity runs only, as the Train tab's history sends them
    for path in train:
        panel.set_file_checked(path, False)
    panel.add_corpus_files([(str(p), {}) for p in dev])
    panel.parallel.setChecked(True)  # translations of each other: a language's cost is its tokens
    assert panel.classic_combo.currentData() == "auto"
    with qtbot.waitSignal(panel.computed, timeout=120_000) as computed:
        assert panel.compute()
    result = computed.args[0]
    assert panel.tabs.currentWidget() is panel.gini_page  # in front: the user does not hunt for it
    assert [t.tokenizer for t in result.totals][-1] == "Run 1 · classic (classic BPE, added)"
    paired, unpaired = result.gini_pairs
    assert paired.pair.before == "Run 1 · classic (classic BPE, added)" and unpaired.pair.before is None
    note = panel.gini_note.text()
    assert paired.summary() in note and "Gini" in note and "→" in note
    assert "vocabulary size 430" in note and "--vocab-size 430" in note  # the empty state says how
    rows = panel.gini_model.rows
    assert [r.language for r in rows] == ["en", "de", "ru", "Gini (language cost)"]
    per_language = {(m.tokenizer, m.language): m for m in result.per_language}
    for r in rows[:3]:  # each cell is the comparison's own row: the tokens of that language
        before = per_language[(paired.pair.before, r.language)]
        after = per_language[("Run 2 · parity 420", r.language)]
        assert r.cost_before == before.tokens and r.cost_after == after.tokens
    gini = {m.tokenizer: m.gini for m in result.totals}
    assert rows[3].cost_before == gini[paired.pair.before] and rows[3].cost_after == gini["Run 2 · parity 420"]
    assert rows[3].cost_after < rows[3].cost_before
    shown = panel.gini_model.data(panel.gini_model.index(3, 6))
    assert shown.startswith("−")  # the Gini fell, printed with a minus sign
    state = panel.session_state()  # the choice is kept with the question and comes back with it
    assert state["results"]["classic"] == "auto"
    panel.classic_combo.setCurrentIndex(panel.classic_combo.findData(""))
    assert panel.restore_session(state) and panel.classic_combo.currentData() == "auto"
    qtbot.waitUntil(lambda: not panel.tasks.busy(), timeout=60_000)
    if SHOTS:
        qtbot.wait(200)
        assert panel.grab().save(str(Path(SHOTS) / "compare-gini-pairs.png"))
        window.set_theme("dark")
        qtbot.wait(200)
        assert panel.grab().save(str(Path(SHOTS) / "compare-gini-pairs-dark.png"))
        window.set_theme("light")
