"""The export dialog offers, per run, only the formats whose library reproduces the ids: the others
are greyed out with their reason (item tooltip and a note), and a choice that no longer fits moves
to one that does when another run is picked."""

from __future__ import annotations

import html

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialogButtonBox

from workbench.formats.detect import FORMATS
from workbench.formats.export import formats_for, why_not
from workbench.store import RunInfo
from workbench.ui.dialogs import ExportDialog

SETTINGS = {
    "bpe": {"model": "bpe", "units": "bytes", "pretokenizer": "gpt2", "normalizer": []},
    "wordpiece": {"model": "wordpiece", "units": "chars", "pretokenizer": "bert", "normalizer": ["bert"],
                  "special_tokens": ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], "unk_token": "[UNK]"},
    "unigram": {"model": "unigram", "units": "chars", "pretokenizer": "metaspace", "normalizer": []},
}


def _runs() -> list[RunInfo]:
    return [RunInfo(i + 1, f"{model} run", "finished", settings, 1500, 0 if model == "unigram" else 900,
                    1.7e9, 1.7e9 + 5, {}, None, ())
            for i, (model, settings) in enumerate(SETTINGS.items())]


def _offer(dialog: ExportDialog) -> dict[str, tuple[bool, str]]:
    model = dialog.format_combo.model()
    return {dialog.format_combo.itemData(i): (model.item(i).isEnabled(), model.item(i).toolTip())
            for i in range(dialog.format_combo.count())}


def test_each_family_is_offered_only_the_formats_that_fit_with_the_reasons_for_the_rest(qtbot, tmp_path):
    runs = _runs()
    dialog = ExportDialog(runs, 1, str(tmp_path))
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    for run in runs:
        model = run.settings["model"]
        dialog.run_combo.setCurrentIndex(dialog.run_combo.findData(run.id))
        qtbot.waitUntil(lambda m=model: f"this {dict(bpe='BPE', wordpiece='WordPiece', unigram='Unigram')[m]} run"
                        in dialog.not_offered.text())
        offer = _offer(dialog)
        assert [fmt for fmt in FORMATS if offer[fmt][0]] == list(formats_for(model, run.settings))
        for fmt in FORMATS:
            reason = why_not(model, fmt, run.settings)
            assert offer[fmt][1] == (f"Not offered for this run: {reason}" if reason else "")
            if reason:
                assert html.escape(reason) in dialog.not_offered.text()
        assert dialog.fmt in formats_for(model, run.settings)
        assert dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).isEnabled()
    # A WordPiece-only choice moves to a format that fits when a Unigram run is picked.
    dialog.run_combo.setCurrentIndex(dialog.run_combo.findData(2))
    dialog.format_combo.setCurrentIndex(dialog.format_combo.findData("wordpiece"))
    qtbot.waitUntil(lambda: dialog.path_edit.text().endswith("vocab.txt"))
    dialog.run_combo.setCurrentIndex(dialog.run_combo.findData(3))
    qtbot.waitUntil(lambda: dialog.fmt == "hf")
    assert not dialog.format_combo.model().item(dialog.format_combo.findData("wordpiece")).flags() \
        & Qt.ItemFlag.ItemIsEnabled
