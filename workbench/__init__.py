"""Tokenizer Workbench: see, train, browse and export subword tokenizers.

The domain packages (``core``, ``formats``, ``corpus``, ``store``) are plain Python and never
import Qt; only ``workbench.ui`` does. ``tests/test_layers.py`` enforces that.
"""

__version__ = "0.1.0"
