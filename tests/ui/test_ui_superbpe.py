"""A SuperBPE run trained from the Train tab: its live plots mark the transition point t (also when
the project is opened again), and its superword tokens are marked in Inspect and in the Merges table.
With WORKBENCH_SCREENSHOTS set to a folder, the test leaves its grabs there."""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import Qt
from shared_corpora import CORPORA, require_corpora

from workbench.core.encoder import Encoder
from workbench.core.superbpe import is_superword
from workbench.store import ProjectStore
from workbench.tasks import token_colours

SHOTS = os.environ.get("WORKBENCH_SCREENSHOTS")  # a folder: the test leaves its grabs there


def _slice(folder: Path, name: str, count: int) -> Path:
    with open(CORPORA / name, encoding="utf-8") as handle:
        lines = handle.readlines()[:count]
    path = folder / name
    path.write_text("".join(lines), encoding="utf-8")
    return path


def test_a_superbpe_run_marks_t_on_the_plots_and_its_superwords_in_inspect(make_window, qtbot, tmp_path, project):
    require_corpora()
    corpus = _slice(tmp_path, "en_shakespeare.txt", 3000)
    window = make_window(project, [corpus])
    window.show_panel("train")
    panel = window.training
    index = panel.model_combo.findData("superbpe")
    assert index >= 0
    panel.model_combo.setCurrentIndex(index)
    assert panel.option_widgets["transition"].isVisibleTo(panel)
    panel.option_widgets["transition"].setValue(0.5)
    panel.set_options(vocab_size=1200, pretokenizer="gpt2")
    with qtbot.waitSignal(panel.run_finished, timeout=120_000) as finished:
        assert panel.start()
    run_id, status = finished.args
    assert status == "finished", panel.error_text()
    with ProjectStore.open(project, readonly=True) as store:
        settings = store.run(run_id).settings
    t = settings["superbpe"]["transition_merge"]
    assert t == 600 - 256
    qtbot.waitUntil(lambda: panel.plots.last_step(run_id) == 944, timeout=10_000)
    lines = panel.plots.runs[run_id].transition_lines
    assert set(lines) == set(panel.plots.plots) and all(line.value() == t for line in lines.values())
    assert lines["vocab"].label is not None and lines["vocab"].label.toPlainText() == "t"
    assert "from merge 345 on" in lines["tokens"].toolTip()
    if SHOTS:
        window.resize(1400, 860)
        qtbot.wait(300)
        panel.plots.redraw()
        assert panel.grab().save(str(Path(SHOTS) / "superbpe-train-plots.png"))

    # Inspect: a sentence whose superwords are underlined in their own colour.
    window.show_panel("inspect")
    inspect = window.inspect
    inspect.set_project(project)
    assert inspect.primary.set_source(("run", run_id))
    text = "What say you, my lord? I will not be the king of the world, and I am not the man."
    inspect.set_text(text)
    generation = inspect.flush()
    qtbot.waitUntil(lambda: inspect.applied_generation >= generation and inspect.colouring_done(), timeout=15_000)
    tok = inspect.primary.loaded.tokenizer
    ids = Encoder(tok).encode(text)
    superwords = [tok.vocab[i] for i in ids if is_superword(tok.vocab[i])]
    assert superwords, [tok.vocab[i] for i in ids]
    block = inspect.primary.editor.document().firstBlock()
    underlined = [block.text()[fr.start:fr.start + fr.length] for fr in block.layout().formats()
                  if fr.format.underlineStyle() == fr.format.UnderlineStyle.SingleUnderline]
    assert sorted(underlined) == sorted(p.decode("utf-8") for p in superwords)
    assert fr_colour(block) == token_colours.MARK_COLOURS["superword"][False]
    if SHOTS:
        qtbot.wait(200)
        assert inspect.grab().save(str(Path(SHOTS) / "superbpe-inspect.png"))

    # Merges: the superword results (after t) are drawn in the superword colour, with a tooltip line.
    window.show_panel("merges")
    merges = window.merges
    merges.set_filter(", and")
    model = merges.model
    qtbot.waitUntil(lambda: model.rowCount() > 0 and model.data(model.index(0, 3)) not in (None, "…"), timeout=15_000)
    rows = [r for r in range(model.rowCount()) if int(model.data(model.index(r, 0))) >= t]
    assert rows
    cell = model.index(rows[0], 3)
    from workbench.ui.style import is_dark  # the teal of the theme the window shows (a test before may leave dark)

    assert model.data(cell, Qt.ItemDataRole.ForegroundRole).color().name() == ("#5eead4" if is_dark() else "#0f766e")
    assert "superword: crosses a space" in model.data(cell, Qt.ItemDataRole.ToolTipRole)
    assert model.data(model.index(rows[0], 0), Qt.ItemDataRole.ForegroundRole) is None
    if SHOTS:
        merges.set_filter("")
        qtbot.waitUntil(lambda: model.rowCount() > t + 20, timeout=15_000)
        merges.table.scrollTo(model.index(t - 6, 0), merges.table.ScrollHint.PositionAtTop)
        qtbot.wait(400)
        assert merges.grab().save(str(Path(SHOTS) / "superbpe-merges.png"))

    # Reopened: the marker comes back with the stored run.
    window.shutdown()
    again = make_window(project)
    again.show_panel("train")
    qtbot.waitUntil(lambda: run_id in again.training.plots.runs
                    and again.training.plots.runs[run_id].transition == t, timeout=10_000)
    assert Qt.PenStyle.DashLine == again.training.plots.runs[run_id].transition_lines["tokens"].pen.style()


def fr_colour(block) -> str:
    """The underline colour of the first superword range of ``block``."""
    for fr in block.layout().formats():
        if fr.format.underlineStyle() == fr.format.UnderlineStyle.SingleUnderline:
            return fr.format.underlineColor().name()
    return ""
