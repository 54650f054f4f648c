"""Files the app ships: the demo corpus (``demo/``) and the icons (``icons/``).

They live inside the package so that every way of running the workbench finds them by one rule,
:func:`importlib.resources.files`: a source checkout, an editable install, a wheel and a frozen
bundle alike. (A top-level ``resources/`` folder mapped into the package needs a ``setup.py`` shim,
and setuptools' editable finder does not map data-only folders, so ``pip install -e .`` and
``pip install .`` would disagree.) Left out: anything that reads the files' content.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def resource_dir(name: str) -> Path:
    """The real folder of the shipped resource ``name`` (``"demo"`` or ``"icons"``).

    Installed packages and frozen one-folder bundles keep these as plain files; a zipped install
    (not supported) would have no folder, which :class:`FileNotFoundError` reports.
    """
    folder = files(__name__) / name
    path = Path(str(folder))
    if not path.is_dir():
        raise FileNotFoundError(path)
    return path
