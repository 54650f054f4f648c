"""Tokenizer files in and out: ``tokenizer.json``, GPT-2 ``vocab.json`` + ``merges.txt``,
``.tiktoken`` (+ sidecar), WordPiece ``vocab.txt``, SentencePiece-style ``.vocab``, merges CSV.

Exports are written so the real libraries (``tokenizers``, ``tiktoken``) load them unchanged, and
are verified against those libraries and our encoder before they are reported done. Imports give
a :class:`~workbench.core.model.Tokenizer`. Plain Python: no Qt, no numpy.
"""

from workbench.formats.detect import (
    FORMATS,
    ImportResult,
    detect_format,
    import_tokenizer,
    load_tokenizer_file,
)
from workbench.formats.export import SAMPLE_TEXTS, ExportResult, export_tokenizer

__all__ = [
    "FORMATS",
    "SAMPLE_TEXTS",
    "ExportResult",
    "ImportResult",
    "detect_format",
    "export_tokenizer",
    "import_tokenizer",
    "load_tokenizer_file",
]
