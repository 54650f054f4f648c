"""Encoding a long text piece by piece, with the ids a single pass over the whole text gives.

``workbench encode --file`` on 200 MB held the text, a Python int per id and a string per printed
id at once (3.8 GB, 18× the file). Where the tokenizer allows it, the text is cut only at places
no pre-token can cross (:data:`workbench.core.count.SAFE_CUTS`: a newline between two letters for
the regex presets) and each piece is encoded and handed on before the next is read, so memory is
one chunk plus the encoder's piece cache, whatever the file's size.

Left out (encoded whole, as before): tokenizers with a normalizer (one may turn the newline at a
cut into a space that a pre-token then crosses), the ``metaspace``/``none``/custom pre-tokenizers
(SentencePiece-style models see a line's spaces as a whole), and special tokens containing a line
break when they are matched.
"""

from __future__ import annotations

from typing import Iterable, Iterator

from workbench.core.count import SAFE_CUTS, chunks_for
from workbench.core.encoder import Encoder

CHUNK_CHARS = 1 << 20


def streams_exactly(encoder: Encoder, allow_special: bool = False) -> bool:
    """Whether :func:`encode_chunks` may cut this tokenizer's input (see the module docstring)."""
    tok = encoder.tok
    if tok.pipeline is not None:  # a tokenizer.json's own stages (a prefix space per text, …)
        return False
    if tok.normalizer or tok.pretokenizer not in SAFE_CUTS or tok.pretokenizer == "metaspace":
        return False
    return not (allow_special and any("\n" in token for token in tok.special_tokens))


def encode_chunks(encoder: Encoder, texts: Iterable[str], *, allow_special: bool = False,
                  size: int = CHUNK_CHARS) -> Iterator[list[int]]:
    """The ids of ``"".join(texts)``, in consecutive lists; streamed when :func:`streams_exactly`."""
    if not streams_exactly(encoder, allow_special):
        yield encoder.encode("".join(texts), allow_special=allow_special)
        return
    for chunk in chunks_for(encoder.tok.pretokenizer, texts, size):
        yield encoder.encode(chunk, allow_special=allow_special)
