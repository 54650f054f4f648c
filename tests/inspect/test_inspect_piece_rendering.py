"""One piece renderer: hostile pieces read the same in ``workbench encode --json``, the inspector's
hover and the merge browser's cells.

The CLI and the inspector show a space as a space (the editor draws whitespace glyphs itself);
the browser shows it as ``␣``, and with that one difference the three texts are identical.
"""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
import unicodedata

from hostile_run import HOSTILE_PIECES, HOSTILE_TEXT, write_hostile_project
from hypothesis import given, settings
from hypothesis import strategies as st
from inspect_helpers import settle

from workbench.core.display import VISIBLE_SPACE, piece_text

# Each piece as the one renderer must show it (plain spaces): a NUL, a split character, a lone
# carriage return, a zero-width space and an emoji.
EXPECTED = [" the\\x00\\xe4", "\\xb8", "\\xad", "\\rx", "\\u200b", "👍"]


def test_cli_inspector_and_merge_browser_render_alike(qtbot, panel, tmp_path):
    project = write_hostile_project(tmp_path / "hostile.tokproj")
    text_file = tmp_path / "text.txt"
    text_file.write_bytes(HOSTILE_TEXT.encode("utf-8"))
    done = subprocess.run([sys.executable, "-m", "workbench", "encode", "--tokenizer", str(project),
                           "--file", str(text_file), "--json"], capture_output=True, check=False, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["tokens"] == EXPECTED == [piece_text(p) for p in HOSTILE_PIECES]

    panel.set_project(project)
    assert panel.primary.set_source(("run", 1))
    # The editor turns a lone \r into a line break, so the text typed there leaves out "\rx";
    # that token is described by the function the hover calls for a single token.
    panel.set_text(HOSTILE_TEXT.replace("\rx", ""))
    settle(qtbot, panel)
    layout = panel.primary.layout_
    rx = result["ids"][3]
    assert layout.ids() == [i for i in result["ids"] if i != rx]
    hover: dict[int, str] = {}  # id → its piece as the hover tooltip shows it
    for index in range(layout.n_tokens):
        group = layout.group_of_token(index)
        tip = panel.primary.describe(group)
        if len(group.ids) == 1:  # one token: a table of id, piece, bytes, merge
            found = re.findall(r">piece</td><td[^>]*><code>“(.*?)”</code>", tip)
        else:  # the tokens that share one character, one row each
            found = re.findall(r"<td align=right><b>\d+</b></td><td><code>“(.*?)”</code>", tip)
        assert len(found) == len(group.ids), tip
        for token_id, shown in zip(group.ids, found):
            hover[token_id] = html.unescape(shown).replace("\xa0", " ")  # _code() keeps spaces as &nbsp;
    tip = panel.primary._describe_id(panel.primary.loaded.tokenizer, rx)
    hover[rx] = html.unescape(re.findall(r">piece</td><td[^>]*><code>“(.*?)”</code>", tip)[0])
    assert [hover[i] for i in result["ids"]] == result["tokens"]

    from workbench.ui.merges.panel import MergePanel

    browser = MergePanel()
    qtbot.addWidget(browser)
    try:
        browser.set_project(project)
        model = browser.model
        tok = panel.primary.loaded.tokenizer
        checked = 0
        for token_id, token in zip(result["ids"], result["tokens"]):
            if token_id in tok.merge_of_id:  # made by a merge: its row's "merged" cell
                row = model.row_of_key(tok.merge_of_id[token_id][0])
                assert model.data(model.index(row, 3)) == token.replace(" ", VISIBLE_SPACE)
                checked += 1
        assert checked == 4  # " the\x00\xe4", "\rx", ZWSP, emoji
    finally:
        browser.shutdown()


# ---- the rendering maps back to exactly one byte string -------------------------------------------
_TOKEN = re.compile(r"\\(?:x([0-9a-f]{2})|u([0-9a-f]{4})|U([0-9a-f]{8})|([ntr\\]))|(.)", re.DOTALL)


def _parse(shown: str, visible_space: bool) -> bytes:
    """The inverse the docstring's table promises (written here from the table, not the code)."""
    shown = shown.removeprefix("◌")  # the dotted circle under a leading mark is added, never a piece's own
    out = bytearray()
    for m in _TOKEN.finditer(shown):
        byte, u4, u8, letter, plain = m.groups()
        if byte is not None:
            out += bytes([int(byte, 16)])  # below 80 the character, from 80 a stray byte: same bytes
        elif u4 or u8:
            out += chr(int(u4 or u8, 16)).encode("utf-8")
        elif letter is not None:
            out += {"n": b"\n", "t": b"\t", "r": b"\r", "\\": b"\\"}[letter]
        else:
            out += (" " if visible_space and plain == VISIBLE_SPACE else plain).encode("utf-8")
    return bytes(out)


@given(st.one_of(st.binary(max_size=12), st.text(max_size=6).map(lambda t: t.encode("utf-8", "surrogatepass"))),
       st.booleans())
@settings(max_examples=400, deadline=None)
def test_rendering_is_unambiguous(piece, visible_space):
    shown = piece_text(piece, visible_space=visible_space)
    assert _parse(shown, visible_space) == piece


def test_fast_path_escapes_the_same_characters_as_the_table():
    # piece_text skips its per-character loop when str.isprintable() holds; that is only right
    # while isprintable() is False exactly for the escaped categories (the space excepted).
    from workbench.core.display import _INVISIBLE

    differ = [cp for cp in range(0x110000) if not 0xD800 <= cp < 0xE000
              and chr(cp).isprintable() != (chr(cp) == " " or unicodedata.category(chr(cp)) not in _INVISIBLE)]
    assert differ == []
    assert piece_text(b"") == "" and piece_text("a b␣".encode(), visible_space=True) == "a␣b\\u2423"
