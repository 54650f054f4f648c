"""The optional C merge loop of BPE training (workbench/core/_bpe_merge.c, issue 24).

Everything else is in pyproject.toml. ``optional=True``: without a C compiler (or Python headers)
the build prints a warning and installs the pure-Python package, which trains the same merges
(tests/test_packaging_files.py builds it with a compiler that fails)."""

import os

from setuptools import Extension, setup

setup(ext_modules=[Extension("workbench.core._bpe_merge", ["workbench/core/_bpe_merge.c"], optional=True,
                             extra_compile_args=[] if os.name == "nt" else ["-O2"])])
