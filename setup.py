"""The optional C loops of training (issue 24): BPE's merge loop (workbench/core/_bpe_merge.c) and
WordPiece's frequency-score queue loop (workbench/core/_wordpiece_queue.c).

Everything else is in pyproject.toml. ``optional=True``: without a C compiler (or Python headers)
the build prints a warning and installs the pure-Python package, which trains the same merges
(tests/test_packaging_files.py builds it with a compiler that fails)."""

import os

from setuptools import Extension, setup

_ARGS = [] if os.name == "nt" else ["-O2"]
setup(ext_modules=[Extension("workbench.core._bpe_merge", ["workbench/core/_bpe_merge.c"], optional=True,
                             depends=["workbench/core/_merge_common.h"],
                             extra_compile_args=_ARGS),
                   Extension("workbench.core._wordpiece_queue", ["workbench/core/_wordpiece_queue.c"], optional=True,
                             depends=["workbench/core/_merge_common.h"],
                             extra_compile_args=_ARGS)])
