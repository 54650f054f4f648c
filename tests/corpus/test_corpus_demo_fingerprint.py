"""The bundled demo corpus is usable and documented; fingerprints notice any change."""

from __future__ import annotations

import hashlib

import pytest

from workbench.corpus import demo_corpus_files, file_stats, fingerprint, open_source
from workbench.corpus.fingerprint import fingerprint_matches
from workbench.errors import WorkbenchError


def test_demo_corpus_is_small_multilingual_and_cut_from_the_shared_corpora(corpora):
    files = demo_corpus_files()
    assert [f.name for f in files] == [
        "de_zitate.txt", "en_shakespeare.txt", "en_wiki_taylorswift.txt", "ru_fortunes.txt", "zh_fortunes.txt",
    ]
    assert 150_000 <= sum(f.stat().st_size for f in files) <= 300_000
    sources_md = (files[0].parent / "SOURCES.md").read_text(encoding="utf-8")
    for f in files:
        data = f.read_bytes()
        assert data.endswith(b"\n")
        assert (corpora / f.name).read_bytes().startswith(data)
        assert f"`{f.name}`" in sources_md
        open_source(f)  # valid, non-binary UTF-8
    scripts = {f.name: file_stats(open_source(f)).dominant_script for f in files}
    assert scripts["ru_fortunes.txt"] == "Cyrillic" and scripts["zh_fortunes.txt"] == "Han"


def test_fingerprint_is_size_and_sha256(write, tmp_path):
    path = write(tmp_path / "a.txt", "hello\n")
    fp = fingerprint(path)
    assert fp == f"6:sha256:{hashlib.sha256(b'hello' + bytes([10])).hexdigest()}"
    assert fingerprint_matches(path, fp)
    path.write_text("hellp\n")  # same size, different content
    assert fingerprint(path) != fp and not fingerprint_matches(path, fp)
    assert not fingerprint_matches(tmp_path / "gone.txt", fp)


def test_fingerprint_errors(tmp_path):
    with pytest.raises(WorkbenchError, match="no such file"):
        fingerprint(tmp_path / "gone.txt")
    with pytest.raises(WorkbenchError, match="is a folder"):
        fingerprint(tmp_path)


def test_a_small_file_is_hashed_without_openssl_and_gives_hashlibs_digest(tmp_path):
    """Below BUILTIN_SHA256_BYTES the builtin ``_sha256`` hashes (hashlib would load OpenSSL's 3.6 MB);
    above it hashlib does. Either way the digest is hashlib's: cache keys and stored fingerprints
    must not change. In a fresh interpreter, where nothing has loaded hashlib yet."""
    import subprocess
    import sys

    from workbench.corpus.fingerprint import BUILTIN_SHA256_BYTES

    small, large = tmp_path / "small.txt", tmp_path / "large.txt"
    small.write_bytes(b"def f(x):\n    return x\n" * 1000)
    large.write_bytes(bytes(range(256)) * (BUILTIN_SHA256_BYTES // 256 + 1))
    code = ("import sys; from workbench.corpus.fingerprint import fingerprint, sha256; "
            "print(fingerprint(sys.argv[1])); print(sha256(b'abc').hexdigest()); print('hashlib' in sys.modules); "
            "print(fingerprint(sys.argv[2])); print('hashlib' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(small), str(large)], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == [f"{small.stat().st_size}:sha256:{hashlib.sha256(small.read_bytes()).hexdigest()}",
                   hashlib.sha256(b"abc").hexdigest(), "False",
                   f"{large.stat().st_size}:sha256:{hashlib.sha256(large.read_bytes()).hexdigest()}", "True"]
