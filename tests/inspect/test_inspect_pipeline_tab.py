"""Inspect's Pipeline tab on imported tokenizer.json files built with ``tokenizers``' own API: the
stages of the cursor's line equal the library's, each line carries its round-trip mark, and a
lost line names the stage that lost it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from inspect_helpers import settle
from PySide6.QtGui import QTextCursor

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hf_pipelines import bert, llama, save  # noqa: E402

TEXTS = ["Hello world, this is a test.", "Another line of text here!", "twenty-one or twenty two",
         "the quick brown fox jumps over the lazy dog"] * 10
TEXT = "hello world, this is a test.\nHello World\nrare ꙮ here\n"


@pytest.fixture(scope="module")
def pipelines(tmp_path_factory):
    root = tmp_path_factory.mktemp("pipeline_tab")
    return {name: (real, save(real, root, name)) for name, real in (("bert", bert(TEXTS)), ("llama", llama(TEXTS)))}


def _show(qtbot, panel, project, path, text=TEXT):
    from workbench.ui.inspect.worker import import_reference

    outcome = import_reference(project, path)
    panel.set_project(project)
    assert panel.primary.set_source(("ref", outcome.ref_id))
    panel.set_text(text)
    settle(qtbot, panel)
    with qtbot.waitSignal(panel.pipeline.explained, timeout=15000):
        panel.tabs.setCurrentWidget(panel.pipeline)
    return panel.pipeline.last


def test_pipeline_tab_shows_bert_stages_and_marks(qtbot, panel, empty_project, pipelines):
    real, path = pipelines["bert"]
    result = _show(qtbot, panel, empty_project, path)
    # the columns colour what tokenizers gives for the whole text, token by token at its offsets
    whole = real.encode(TEXT, add_special_tokens=False)
    assert panel.primary.layout_.ids() == whole.ids
    assert [m.ok for m in result.marks] == [True, False, False, True]
    assert result.marks[1].cause == "normalizer: BertNormalizer"
    assert result.marks[2].cause == "[UNK] (model)"
    stages = result.stages
    line = TEXT.splitlines()[0]
    assert stages.normalized == real.normalizer.normalize_str(line)
    assert stages.ids == real.encode(line).ids and stages.decoded == real.decode(real.encode(line).ids)
    assert [(p, tuple(s)) for p, s in real.pre_tokenizer.pre_tokenize_str(line)] == stages.pre_tokens
    assert panel.pipeline.marks.count() == 4 and "✗ normalizer: BertNormalizer" in panel.pipeline.marks.item(1).text()
    shown = panel.pipeline.stages.toPlainText()
    assert "+[CLS]" in shown and "+[SEP]" in shown and "BertPreTokenizer" in shown

    # moving the cursor to line 2 explains line 2, naming what lost it
    cursor = QTextCursor(panel.primary.editor.document().findBlockByNumber(1))
    with qtbot.waitSignal(panel.pipeline.explained, timeout=15000):
        panel.primary.editor.setTextCursor(cursor)
    assert panel.pipeline.last.index == 1
    assert "lost by normalizer: BertNormalizer" in panel.pipeline.title.text()
    assert panel.pipeline.last.stages.decoded == "hello world"


def test_pipeline_tab_on_a_llama_tokenizer_round_trips_with_byte_fallback(qtbot, panel, empty_project, pipelines):
    real, path = pipelines["llama"]
    result = _show(qtbot, panel, empty_project, path)
    assert panel.primary.layout_.ids() == real.encode(TEXT, add_special_tokens=False).ids
    assert all(m.ok for m in result.marks)
    line = TEXT.splitlines()[0]
    assert result.stages.ids == real.encode(line).ids
    with qtbot.waitSignal(panel.pipeline.explained, timeout=15000):
        panel.pipeline.line_chosen.emit(2)
    stages = panel.pipeline.last.stages
    assert stages.text == "rare ꙮ here" and stages.ids == real.encode("rare ꙮ here").ids
    assert any(t.token.startswith("<0x") for t in stages.model)  # ꙮ is spelt by its byte pieces
    assert stages.normalizer_steps[-1][1] == real.normalizer.normalize_str("rare ꙮ here")
