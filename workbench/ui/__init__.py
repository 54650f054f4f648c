"""The window: PySide6 widgets over the Qt-free core, corpus readers and project store.

Everything that imports Qt, pyqtgraph or numpy lives here. Nothing in this package tokenizes or
trains by itself: training runs in a child process (``workbench train --progress json``), corpus
statistics come from :mod:`workbench.corpus`, plotted points are read back from the project file.

Modules: ``app`` (QApplication, arguments), ``main_window`` (menus, docks, wiring),
``project_session`` (the open project), ``corpus_panel``, ``training_panel``, ``plots``,
``run_history``, ``workers`` (threads and the training process), ``dialogs``, ``settings``
(typed QSettings), ``style`` (palettes, colours, icons), ``empty_state``.
"""
