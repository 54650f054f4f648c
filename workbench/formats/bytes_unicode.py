"""GPT-2's reversible byte ↔ printable-character table.

Byte-level vocabularies (``tokenizer.json``, GPT-2 ``vocab.json``/``merges.txt``) store pieces as
text in which every byte is one printable character: the 188 printable Latin-1 bytes stand for
themselves, the other 68 (controls, space, …) are shifted to U+0100 onward, so a space is ``Ġ``
and a newline ``Ċ``. The table itself is :mod:`workbench.core.byte_level`; this module adds the conversions.
"""

from __future__ import annotations

from workbench.core.byte_level import byte_decoder, byte_encoder, bytes_to_unicode_str

__all__ = ["byte_encoder", "byte_decoder", "bytes_to_unicode_str", "unicode_str_to_bytes"]


def unicode_str_to_bytes(text: str) -> bytes:
    """Inverse of :func:`bytes_to_unicode_str`; raises ``KeyError`` on a character outside the table."""
    dec = byte_decoder()
    return bytes(dec[ch] for ch in text)


def is_byte_level_text(text: str) -> bool:
    """True when every character of ``text`` is one of the 256 stand-in characters."""
    dec = byte_decoder()
    return all(ch in dec for ch in text)
