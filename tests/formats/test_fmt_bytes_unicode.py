from workbench.formats.bytes_unicode import (
    byte_decoder,
    byte_encoder,
    bytes_to_unicode_str,
    is_byte_level_text,
    unicode_str_to_bytes,
)


def test_table_is_a_bijection_onto_printable_characters():
    enc = byte_encoder()
    assert len(enc) == 256 and len(set(enc.values())) == 256
    assert all(ch.isprintable() and not ch.isspace() for ch in enc.values())
    assert byte_decoder() == {c: b for b, c in enc.items()}


def test_gpt2_spellings():
    assert bytes_to_unicode_str(b" the") == "\u0120the"  # Ġthe
    assert bytes_to_unicode_str(b"\n") == "\u010a"  # Ċ
    assert bytes_to_unicode_str(b"A") == "A"


def test_every_byte_string_round_trips():
    data = bytes(range(256)) + "👩\u200d👧 日本".encode()
    assert unicode_str_to_bytes(bytes_to_unicode_str(data)) == data
    assert is_byte_level_text(bytes_to_unicode_str(data))
    assert not is_byte_level_text("日本")
