"""Inspect's **Pipeline** view: how the active column's tokenizer treats the line under the cursor,
stage by stage, and whether each line of the text comes back from ``decode(encode(line))``.

Left, every line with its round-trip mark (✓, or ✗ and the stage that lost it); right, the stages
of the chosen line (the cursor's line, or one clicked on the left): normalizers, added tokens and
the flag that matched each, pre-tokens with their input spans, the model's tokens, what the
post-processor adds, the decoded text. Everything shown comes from
:func:`workbench.tasks.pipeline_view.explain`, run off the GUI thread on the panel's job runner
(newest request wins); this module only draws. It works only while visible: the panel asks for
an update when the tab is shown, the text or the cursor's line changes, or another column becomes
active.
"""

from __future__ import annotations

import html
from functools import partial

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import QLabel, QListWidget, QListWidgetItem, QSplitter, QTextBrowser, QVBoxLayout, QWidget

from workbench.core import display
from workbench.tasks.pipeline_view import MAX_MARKED_LINES, Explanation, Stages, explain
from workbench.ui.jobs import JobRunner
from workbench.ui.style import error_colour, monospace_font, muted

_OK, _LOST = "✓", "✗"


def _shown(text: str) -> str:
    return html.escape(display.show_whitespace(text))


class PipelineView(QWidget):
    """The Pipeline tab under the columns (see the module docstring)."""

    line_chosen = Signal(int)  # a line clicked in the marks list
    explained = Signal()  # a result was drawn (tests wait on it)

    def __init__(self, jobs: JobRunner, parent: QWidget | None = None):
        super().__init__(parent)
        self.setAccessibleName("Pipeline stages")
        self.jobs = jobs
        self.encoder = None
        self.name = ""
        self.last: Explanation | None = None
        self.title = QLabel("Pipeline")
        self.summary = QLabel()
        self.summary.setWordWrap(True)
        self.marks = QListWidget()
        self.marks.setAccessibleName("Round trip per line")
        self.marks.setFont(monospace_font())
        self.marks.itemClicked.connect(self._on_item_clicked)
        self.stages = QTextBrowser()
        self.stages.setAccessibleName("Stages of the line")
        self.stages.setOpenLinks(False)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.marks)
        split.addWidget(self.stages)
        split.setStretchFactor(0, 2)
        split.setStretchFactor(1, 3)
        split.setChildrenCollapsible(False)
        box = QVBoxLayout(self)
        box.setContentsMargins(4, 4, 4, 4)
        box.addWidget(self.title)
        box.addWidget(self.summary)
        box.addWidget(split, 1)

    # ---- requests ---------------------------------------------------------------------------------------
    def request(self, encoder, name: str, text: str, line: int, separator: str = "\n") -> None:
        """Explain ``line`` of ``text`` under ``encoder`` (None: no tokenizer loaded yet)."""
        self.encoder, self.name = encoder, name
        if encoder is None:
            self.title.setText("Pipeline")
            self.summary.setText("Choose a tokenizer above; its stages show here.")
            self.stages.clear()
            self.marks.clear()
            return
        self.jobs.submit(partial(explain, encoder, text, line, separator), self._on_done, self._on_error,
                         key="pipeline")

    @Slot(object)
    def _on_done(self, result: Explanation) -> None:
        self.last = result
        self._draw_marks(result)
        self.stages.setHtml(_stages_html(result.stages) if result.stages is not None else
                            f"<p>{html.escape(result.error or '')}</p>")
        self.explained.emit()

    @Slot(str)
    def _on_error(self, message: str) -> None:
        self.summary.setText(message)
        self.explained.emit()

    @Slot(QListWidgetItem)
    def _on_item_clicked(self, item: QListWidgetItem) -> None:
        self.line_chosen.emit(int(item.data(Qt.ItemDataRole.UserRole)))

    # ---- drawing --------------------------------------------------------------------------------------
    def _draw_marks(self, result: Explanation) -> None:
        survived = sum(1 for m in result.marks if m.ok)
        more = (f" (marks for the first {MAX_MARKED_LINES:,} of {result.lines:,} lines)"
                if result.lines > len(result.marks) else "")
        self.title.setText(f"Pipeline of {self.name} — line {result.index + 1}")
        self.summary.setText(f"{survived:,} of {len(result.marks):,} lines survive decode(encode(line)) == line"
                             f"{more}. Click a line to see its stages.")
        self.marks.blockSignals(True)
        self.marks.clear()
        bad = error_colour()
        for number, mark in enumerate(result.marks):
            if mark.ok:
                label = f"{number + 1:>4} {_OK}"
            else:
                label = f"{number + 1:>4} {_LOST} {mark.cause}"
            item = QListWidgetItem(label)
            item.setData(Qt.ItemDataRole.UserRole, number)
            if not mark.ok:
                item.setForeground(bad)
                item.setToolTip(f"{mark.cause}: {mark.detail}\ncame back as: {display.show_whitespace(mark.decoded)}")
            self.marks.addItem(item)
        self.marks.blockSignals(False)
        if 0 <= result.index < self.marks.count():
            self.marks.setCurrentRow(result.index)
        chosen = result.marks[result.index] if result.index < len(result.marks) else None
        if chosen is not None and not chosen.ok:
            self.title.setText(f"Pipeline of {self.name} — line {result.index + 1}: {_LOST} lost by {chosen.cause}")


_CHIP_COLOURS = ("#dbe9f6", "#fbe3c8", "#d9f0dd", "#f3d9ea")


def _chips(items: list[tuple[str, str]]) -> str:
    """Pieces as coloured runs with a small caption each, wrapping like text (HTML for QTextBrowser)."""
    if not items:
        return "<p><i>none</i></p>"
    cells = " ".join(
        f"<span style='background-color:{_CHIP_COLOURS[i % len(_CHIP_COLOURS)]}; color:#111'><tt>{text}</tt></span>"
        f"<sub>{caption}</sub>" for i, (text, caption) in enumerate(items))
    return f"<p style='line-height:150%'>{cells}</p>"


def _runs(text: str, spans: list[tuple[int, int]]) -> list[tuple[str, str]]:
    """The normalized text cut where it stops following the input one character for one, each run
    with the input span it came from (``a:b``)."""
    out: list[tuple[str, str]] = []
    start = 0
    for i in range(1, len(text) + 1):
        if i == len(text) or spans[i] != (spans[i - 1][1], spans[i - 1][1] + 1) or \
                spans[i - 1][1] - spans[i - 1][0] != 1:
            out.append((_shown(text[start:i]), f"{spans[start][0]}:{spans[i - 1][1]}"))
            start = i
    return out


def _stages_html(found: Stages) -> str:
    grey = muted().name()
    comp = found.components
    parts = [f"<p style='color:{grey}'>normalizer: {html.escape(' → '.join(comp.get('normalizer') or []) or 'none')}"
             f" · pre-tokenizer: {html.escape(' → '.join(comp.get('pre_tokenizer') or []) or 'none')}"
             f" · post-processor: {html.escape(str(comp.get('post_processor') or 'none'))}"
             f" · decoder: {html.escape(' → '.join(comp.get('decoder') or []) or 'none')}</p>"]
    parts.append(f"<h4>1 · Input</h4><p><tt>{_shown(found.text)}</tt></p>")
    steps = "".join(f"<tr><td style='color:{grey}'>{html.escape(name)}</td><td><tt>{_shown(text)}</tt></td></tr>"
                    for name, text in found.normalizer_steps)
    spans = _chips(_runs(found.normalized, found.alignment)[:80]) if len(found.alignment) == len(found.normalized) else ""
    parts.append(f"<h4>2 · Normalized</h4><table>{steps}</table>" if steps else "<h4>2 · Normalized</h4><p>unchanged</p>")
    if steps:
        parts.append(f"<p style='color:{grey}'>the normalized text in runs, each ← its span in the input</p>{spans}")
    added = _chips([(_shown(m.content), f"id {m.id} · {m.start}:{m.end} · {' '.join(m.flags)}") for m in found.added])
    parts.append(f"<h4>3 · Added tokens found</h4>{added}")
    pre = _chips([(_shown(p), f"{a}:{b}") for p, (a, b) in found.pre_tokens[:60]])
    parts.append(f"<h4>4 · Pre-tokens</h4>{pre}")
    model = _chips([(_shown(t.token), f"{t.id}") for t in found.model[:80]])
    parts.append(f"<h4>5 · Model tokens</h4>{model}")
    if found.post_before or found.post_after:
        post = " ".join(f"<b>+{html.escape(t)}</b> ({i})" for t, i in found.post_before) + " … " + " ".join(
            f"<b>+{html.escape(t)}</b> ({i})" for t, i in found.post_after)
    else:
        post = "nothing"
    parts.append(f"<h4>6 · Post-processor adds</h4><p>{post}</p><p style='color:{grey}'>ids: "
                 f"{html.escape(', '.join(map(str, found.ids[:60])))}{' …' if len(found.ids) > 60 else ''}</p>")
    same = found.decoded == found.text
    colour = "" if same else f" style='color:{error_colour().name()}'"
    parts.append(f"<h4>7 · Decoded</h4><p{colour}><tt>{_shown(found.decoded)}</tt></p>")
    return "".join(parts)
