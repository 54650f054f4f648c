"""Helpers shared by the Compare tests (a uniquely named module: ``conftest`` is ambiguous when
several test folders are collected together)."""

from __future__ import annotations

from pathlib import Path

WORKED = "go goes fit unfit undo unzip\n"


def corpus_slice(corpora: list[Path], name: str, chars: int, start: int = 0) -> str:
    path = next(p for p in corpora if p.name == name)
    text = path.read_text(encoding="utf-8")[start : start + chars]
    return text[: text.rfind("\n") + 1]  # whole lines, as the readers stream them
