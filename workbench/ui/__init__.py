"""The window: PySide6 widgets over the Qt-free core, corpus readers, project store and tasks.

Everything that imports Qt, pyqtgraph or numpy lives here (this ``__init__`` and ``arguments`` stay
Qt-free so the entry point can read its command line first). Nothing in this package tokenizes or
trains by itself: training runs in a child process (``workbench train --spec … --progress json``),
corpus statistics come from :mod:`workbench.corpus`, plotted points are read back from the project
file. Shared modules: ``app``, ``main_window``, ``project_session``, ``jobs``, ``settings``, ``style``,
``text``, ``dialogs``, ``empty_state``, ``logs``; one package per tab: ``corpus``, ``train``,
``inspect``, ``merges``, ``compare``. See ARCHITECTURE.md.
"""
