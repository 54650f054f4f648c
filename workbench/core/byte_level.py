"""GPT-2's reversible byte ↔ printable-character table.

Byte-level vocabularies (``tokenizer.json``, GPT-2 ``vocab.json``/``merges.txt``) store pieces as
text in which every byte is one printable character: the 188 printable Latin-1 bytes stand for
themselves, the other 68 (controls, space, …) are shifted to U+0100 onward, so a space is ``Ġ``
and a newline ``Ċ``. It lives in the core because Hugging Face's trainer breaks ties in the order
of these characters (the ``hf`` tie-break); the formats use it to read and write files.
"""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=1)
def byte_encoder() -> dict[int, str]:
    """byte value → its stand-in character (the table published with GPT-2 and used by HF)."""
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    chars = list(printable)
    shift = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + shift)
            shift += 1
    return {b: chr(c) for b, c in zip(printable, chars)}


@lru_cache(maxsize=1)
def byte_decoder() -> dict[str, int]:
    """stand-in character → byte value (inverse of :func:`byte_encoder`)."""
    return {c: b for b, c in byte_encoder().items()}


def bytes_to_unicode_str(piece: bytes) -> str:
    """A byte piece as GPT-2 byte-level text (``b" the"`` → ``"Ġthe"``)."""
    enc = byte_encoder()
    return "".join(enc[b] for b in piece)
