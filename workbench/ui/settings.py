"""Every persistent window setting, declared once with its type and default (Picard-style).

One typed wrapper over ``QSettings``: every read passes ``type=`` — read back in a new process,
``QSettings`` otherwise hands out strings (``'true'``, ``'512'``) on some back ends (STYLE.md,
trap 8). Lists and dicts are stored as JSON text for the same reason. What it leaves out: project
data (that lives in the ``.tokproj`` file) and anything a user would want to carry between machines.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from PySide6.QtCore import QByteArray, QSettings, QStandardPaths

MAX_RECENT = 10
THEMES = ("system", "light", "dark")


class AppSettings:
    """Typed access to the app's ``QSettings`` (organisation/application names set by the app)."""

    def __init__(self, qsettings: QSettings | None = None):
        self._s = qsettings if qsettings is not None else QSettings()

    # ---- raw typed access ------------------------------------------------------------------
    def _get(self, key: str, default: Any, kind: type) -> Any:
        value = self._s.value(key, default, type=kind)
        return default if value is None else value

    def sync(self) -> None:
        self._s.sync()

    # ---- window layout ---------------------------------------------------------------------
    @property
    def geometry(self) -> QByteArray:
        return self._get("window/geometry", QByteArray(), QByteArray)

    @geometry.setter
    def geometry(self, value: QByteArray) -> None:
        self._s.setValue("window/geometry", value)

    @property
    def window_state(self) -> QByteArray:
        return self._get("window/state", QByteArray(), QByteArray)

    @window_state.setter
    def window_state(self, value: QByteArray) -> None:
        self._s.setValue("window/state", value)

    def splitter_state(self, name: str) -> QByteArray:
        return self._get(f"splitters/{name}", QByteArray(), QByteArray)

    def set_splitter_state(self, name: str, value: QByteArray) -> None:
        self._s.setValue(f"splitters/{name}", value)

    # ---- recent projects ---------------------------------------------------------------------
    @property
    def recent_projects(self) -> list[str]:
        try:
            items = json.loads(self._get("files/recent", "[]", str))
        except json.JSONDecodeError:
            return []
        return [str(p) for p in items if isinstance(p, str)][:MAX_RECENT]

    def add_recent_project(self, path: str | Path) -> list[str]:
        text = str(Path(path).absolute())
        items = [text] + [p for p in self.recent_projects if p != text]
        self._s.setValue("files/recent", json.dumps(items[:MAX_RECENT]))
        return items[:MAX_RECENT]

    def remove_recent_project(self, path: str | Path) -> None:
        text = str(Path(path).absolute())
        self._s.setValue("files/recent", json.dumps([p for p in self.recent_projects if p != text]))

    def clear_recent_projects(self) -> None:
        self._s.setValue("files/recent", "[]")

    # ---- preferences -------------------------------------------------------------------------
    @property
    def theme(self) -> str:
        value = self._get("view/theme", "system", str)
        return value if value in THEMES else "system"

    @theme.setter
    def theme(self, value: str) -> None:
        self._s.setValue("view/theme", value if value in THEMES else "system")

    @property
    def last_folder(self) -> str:
        """Where file dialogs start: the last folder used, else the user's documents.

        Never a folder inside the installed app (adding the demo corpus once made it the last
        folder, and Save As then offered to write into the installation): such a folder, or one
        that no longer exists, gives the documents folder instead.
        """
        value = self._get("files/last_folder", "", str)
        if value and Path(value).is_dir() and not inside_installation(value):
            return value
        return documents_folder()

    @last_folder.setter
    def last_folder(self, value: str | Path) -> None:
        self._s.setValue("files/last_folder", str(value))

    @property
    def last_location(self) -> str:
        """The last corpus URL added (Add location…), offered again; never one carrying a secret."""
        return self._get("files/last_location", "", str)

    @last_location.setter
    def last_location(self, value: str) -> None:
        self._s.setValue("files/last_location", value)

    @property
    def train_settings(self) -> dict:
        """The training form as last used (validated again by the form when applied)."""
        try:
            value = json.loads(self._get("train/last_settings", "{}", str))
        except json.JSONDecodeError:
            return {}
        return value if isinstance(value, dict) else {}

    @train_settings.setter
    def train_settings(self, value: dict) -> None:
        self._s.setValue("train/last_settings", json.dumps(value))

    @property
    def show_guide(self) -> bool:
        """Whether the first-run guide opens with the demo ("Don't show again" turns it off)."""
        return self._get("help/show_guide", True, bool)

    @show_guide.setter
    def show_guide(self, value: bool) -> None:
        self._s.setValue("help/show_guide", bool(value))

    @property
    def boundary_marks(self) -> bool:
        """Inspect draws a thin line between tokens, so the split reads without colour (issue 14).

        The user's own preference, for every project; a project's kept Inspect session still
        brings back the state it was left in.
        """
        return self._get("inspect/boundary_marks", False, bool)

    @boundary_marks.setter
    def boundary_marks(self, value: bool) -> None:
        self._s.setValue("inspect/boundary_marks", bool(value))

    @property
    def show_whitespace_preview(self) -> bool:
        return self._get("train/preview_marks", True, bool)

    @show_whitespace_preview.setter
    def show_whitespace_preview(self, value: bool) -> None:
        self._s.setValue("train/preview_marks", bool(value))


def installation_folders() -> list[Path]:
    """Folders that belong to the installed app (the package; a frozen app's own folder)."""
    import workbench

    folders = [Path(workbench.__file__).resolve().parent]
    if getattr(sys, "frozen", False):
        folders.append(Path(sys.executable).resolve().parent)
    return folders


def inside_installation(path: str | Path) -> bool:
    try:
        resolved = Path(path).resolve()
    except OSError:
        return False
    return any(resolved == folder or folder in resolved.parents for folder in installation_folders())


def documents_folder() -> str:
    """The user's documents folder (the home folder when the platform has none)."""
    docs = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.DocumentsLocation)
    return docs if docs and Path(docs).is_dir() else str(Path.home())
