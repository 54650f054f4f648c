"""The real cl100k_base.tiktoken imported into a project: the inspector's ids and coloured spans
equal tiktoken's own, special tokens switch between text and recognised, and side by side with a
trained run the boundary disagreements are marked."""

from __future__ import annotations

import pytest
from inspect_helpers import (
    coloured_spans,
    join_graphemes,
    oracle_groups,
    settle,
    type_text,
    visible_parts,
)

from workbench.core.pretokenize import CL100K_PATTERN
from workbench.tasks import token_colours

tiktoken = pytest.importorskip("tiktoken")

SPECIALS = {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276}
TEXT = ("Tokenizers split 中文字符和日本語 too 👩‍👩‍👧‍👦 🇩🇪 👍🏽, e\u0301 and  spaces.\n"
        "def f(x):\n\treturn x ** 2  # 1234567\n<|endoftext|> after")
CL = ("ref", 1)


@pytest.fixture(scope="module")
def oracle(cl100k_file):
    from tiktoken.load import load_tiktoken_bpe

    return tiktoken.Encoding(name="cl100k_oracle", pat_str=CL100K_PATTERN,
                             mergeable_ranks=load_tiktoken_bpe(str(cl100k_file)), special_tokens=SPECIALS)


class _Token:  # what oracle_groups reads
    def __init__(self, start, end):
        self.start, self.end = start, end


def _tiktoken_groups(oracle, text, allowed):
    """tiktoken's ids, and its tokens as character spans: a token starts where tiktoken's own
    decode_with_offsets says and ends after the character holding its last byte."""
    ids = oracle.encode(text, allowed_special=allowed, disallowed_special=())
    _decoded, starts = oracle.decode_with_offsets(ids)
    char_of_byte = [k for k, ch in enumerate(text) for _ in ch.encode("utf-8")]
    tokens, position = [], 0
    for token_id, start in zip(ids, starts):
        length = len(oracle.decode_single_token_bytes(token_id))
        assert char_of_byte[position] == start
        tokens.append(_Token(start, char_of_byte[position + length - 1] + 1))
        position += length
    return ids, join_graphemes(oracle_groups(tokens), text)


@pytest.mark.parametrize("recognise", [False, True])
def test_ids_and_coloured_spans_equal_tiktoken(qtbot, panel, cl_project, oracle, recognise):
    panel.set_project(cl_project)
    assert panel.primary.set_source(CL)
    panel.special_mode.setCurrentIndex(1 if recognise else 0)
    panel.set_text(TEXT)
    settle(qtbot, panel)
    ids, groups = _tiktoken_groups(oracle, TEXT, "all" if recognise else set())
    layout = panel.primary.layout_
    assert layout.ids() == ids
    applied = coloured_spans(panel.primary.editor)
    assert [(a, b) for a, b, _f in applied] == visible_parts(groups, TEXT)
    special = [(a, b, f) for a, b, f in applied if TEXT[a:b] == "<|endoftext|>"]
    if recognise:
        assert 100257 in ids
        (_a, _b, fmt), = special
        assert fmt.fontWeight() == 700 and fmt.background().color().name() == token_colours.SPECIAL_COLOURS[False][0]
    else:
        assert 100257 not in ids and not special  # split into ordinary pieces like "<|", "endo", …


def test_typing_under_cl100k_matches_tiktoken(qtbot, panel, cl_project, oracle):
    panel.set_project(cl_project)
    assert panel.primary.set_source(CL)
    panel.set_text("")
    settle(qtbot, panel)
    typed = "héllo 世界 👩‍💻 ok"
    type_text(qtbot, panel.primary.editor, typed)
    settle(qtbot, panel)
    ids, groups = _tiktoken_groups(oracle, typed, set())
    assert panel.primary.layout_.ids() == ids
    assert [(a, b) for a, b, _f in coloured_spans(panel.primary.editor)] == visible_parts(groups, typed)


def test_side_by_side_marks_where_boundaries_disagree(qtbot, panel, cl_project):
    panel.set_project(cl_project)
    assert panel.primary.set_source(CL)
    second = panel.add_pane(("run", 1))
    second.set_merges(0)  # one byte per token
    panel.set_text("1234567")
    settle(qtbot, panel)
    # cl100k: "123" "456" "7"; bytes: every digit. They disagree inside the first two groups only.
    assert [panel.text()[g.start:g.end] for g in panel.primary.layout_.groups()] == ["123", "456", "7"]
    assert panel.primary.editor._disagree == [(0, 3), (3, 6)]
    assert second.editor._disagree == [(0, 3), (3, 6)]
    assert second.editor.toPlainText() == "1234567"  # the second column mirrors the text
    assert [panel.counts.value("Tokens", col) for col in range(2)] == ["3", "7"]
    second.set_merges(None)
    panel.remove_pane(second)
    settle(qtbot, panel)
    assert panel.primary.editor._disagree == []


def test_import_keeps_the_file_in_the_project(qtbot, panel, empty_project, cl100k_file):
    panel.set_project(empty_project)
    assert panel.is_empty_state() and "No tokenizer yet" in panel.empty_message()
    with qtbot.waitSignal(panel.import_finished, timeout=20000) as blocker:
        panel.import_file(cl100k_file)
    outcome = blocker.args[0]
    assert outcome.error is None and outcome.name == "cl100k_base"
    assert any("recognised cl100k_base" in note for note in outcome.notes)
    assert not panel.is_empty_state()
    assert panel.primary.source() == ("ref", outcome.ref_id)
    panel.set_text("hello world")
    settle(qtbot, panel)
    assert panel.primary.layout_.ids() == [15339, 1917]


def test_import_of_a_bad_file_says_why(qtbot, panel, empty_project, tmp_path):
    bad = tmp_path / "broken.tiktoken"
    bad.write_text("not base64!! 0\n", encoding="utf-8")
    panel.set_project(empty_project)
    with qtbot.waitSignal(panel.import_finished, timeout=10000) as blocker:
        panel.import_file(bad)
    assert "broken.tiktoken line 1" in blocker.args[0].error
    assert "Import failed" in panel.status.text()
