"""Issue 14 in the Merges tab: the sort arrow points the way the order goes; a long token does not
widen the detail pane."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QTableWidget

from workbench.ui import style
from workbench.ui.merges.detail import _short


def _arrow_rows(header) -> list[int]:
    """Dark pixels per row of the first section (an empty title): the arrow's shape, top to bottom."""
    image = header.grab().toImage()
    width = header.sectionSize(0)
    rows = [sum(1 for x in range(width) if image.pixelColor(x, y).lightness() < 100) for y in range(image.height())]
    return [n for n in rows if n]


def test_ascending_order_shows_an_arrow_pointing_up(qtbot):
    style.apply_theme(QApplication.instance(), "light")
    table = QTableWidget(3, 2)
    table.setHorizontalHeaderLabels(["", ""])
    qtbot.addWidget(table)
    table.show()
    header = table.horizontalHeader()
    header.setSortIndicatorShown(True)
    header.setSortIndicator(0, Qt.SortOrder.AscendingOrder)
    up = _arrow_rows(header)
    header.setSortIndicator(0, Qt.SortOrder.DescendingOrder)
    down = _arrow_rows(header)
    assert len(up) >= 2 and up == sorted(up) and up[0] < up[-1]  # narrow at the top: ▲
    assert down == sorted(down, reverse=True) and down[0] > down[-1]  # ▼


def test_long_pieces_are_cut_short_with_an_ellipsis():
    assert _short("x" * 100) == "x" * 39 + "…" and len(_short("x" * 100)) == 40
    assert _short("short") == "short"


def test_the_detail_pane_and_inspect_number_a_merge_alike(panel, worked_project, qtbot):
    """One convention, "merge rank N" counted from 0, in the merge detail and in Inspect's hover."""
    from workbench.store import ProjectStore
    from workbench.ui.inspect.pane import TokenPane

    project, run_id = worked_project
    panel.set_project(project)
    with ProjectStore.open(project, readonly=True) as store:
        tok = store.load_tokenizer(run_id)
    token = tok.id_of_piece[b"low</w>"]
    panel.select_token(("run", run_id), token)
    assert "merge rank 4:" in panel.detail.subtitle.text()
    pane = TokenPane()
    qtbot.addWidget(pane)
    tip = pane._describe_id(tok, token)
    assert "merge rank 4:" in tip and "(merge " not in tip


def test_a_long_token_does_not_squeeze_the_merge_table(panel, tmp_path, qtbot):
    """Eight merges double "a" up to a 256-byte token; selecting it keeps the table's share."""
    from workbench.core.model import MergeEvent, base_vocab
    from workbench.store import ProjectStore

    vocab = base_vocab("bytes")
    initial = list(vocab)
    path = tmp_path / "long.tokproj"
    with ProjectStore.open(path, create=True) as store:
        run = store.create_run("long token", {"units": "bytes", "pretokenizer": "none"}, [], initial,
                               ["base"] * len(initial))
        with store.run_writer(run, interval=float("inf")) as writer:
            last = ord("a")
            for step in range(1, 9):
                vocab.append(vocab[last] * 2)
                writer.add(MergeEvent(step, last, last, len(vocab) - 1, 100 - step, len(vocab), 1000 - step),
                           vocab[-1])
                last = len(vocab) - 1
        store.finish_run(run, "finished")
    panel.set_project(path)
    table_before = panel.table.width()
    panel.select_token(("run", run), len(vocab) - 1)
    qtbot.wait(10)
    assert panel.detail.title.toolTip().startswith("a" * 256)  # whole in the tooltip
    assert panel.detail.title.text().endswith("…") and len(panel.detail.title.text()) <= 40
    assert panel.detail.minimumSizeHint().width() < 500
    assert panel.table.width() >= table_before - 5
