"""Export a tokenizer to a file format, verified before it is reported done.

Every export is rendered in memory, staged beside its destination, **reloaded** — with our own
reader always, and with ``tokenizers`` / ``tiktoken`` when they are importable — and compared id
for id with our :class:`~workbench.core.encoder.Encoder` on a built-in multilingual sample (emoji
sequences, flags, combining marks, CJK, digits, CRLF, runs of spaces), a sample made of the
tokenizer's own merged pieces, and any text the caller adds. Only then does it replace the
destination (atomically, see :mod:`workbench.core.atomic`). A mismatch raises
:class:`WorkbenchError` and nothing is left under the output name.

Formats that hold only a vocabulary (``wordpiece``, ``spm-vocab``) or only merges (``merges-csv``)
are verified piece by piece instead of by encoding.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

from workbench.core.atomic import Staging, refuse_existing
from workbench.core.model import Tokenizer
from workbench.errors import WorkbenchError
from workbench.formats.common import piece_to_text
from workbench.formats.detect import FORMATS
from workbench.formats.gpt2_files import read_gpt2, render_gpt2
from workbench.formats.hf_json import hf_pattern, read_hf_json, render_hf_json
from workbench.formats.merges_csv import cell, read_merges_csv, render_merges_csv
from workbench.formats.tiktoken_file import read_tiktoken, render_tiktoken, sidecar_path
from workbench.formats.vocab_lists import (
    read_spm_vocab,
    read_wordpiece,
    render_spm_vocab,
    render_wordpiece,
)

# Hard cases every byte-level export must survive: ZWJ emoji, flags, skin tones, combining
# marks, CJK and Hangul, digit runs, CRLF, tabs, long and trailing spaces, contractions.
SAMPLE_TEXTS: tuple[str, ...] = (
    "Hello, world! It's 2024-06-01 and we've got 1234567 tokens; they'll say \"ok\".",
    "Grüße aus Köln — naïve café, Ελληνικά, русский текст, עברית, العربية.",
    "日本語のテキストと中文字符，한국어도 있습니다。",
    "emoji: 👩\u200d👩\u200d👧\u200d👦 🇩🇪🇯🇵 👍🏽 ❤️ e\u0301 a\u0308\u0301 Z\u0351\u0352\u0353",
    "line one\r\nline two\r\n\r\n   indented        spaces\t\ttabs\n",
    "    trailing spaces   ",
    "x = [1, 22, 333, 4444, 55555]; if (a<=b) { return 'ok'; } // 3.14159",
)


@dataclass(frozen=True)
class ExportResult:
    """Where the export went, which checks passed (one line each) and what the user should know."""

    format: str
    paths: tuple[Path, ...]
    checks: tuple[str, ...]
    notes: tuple[str, ...] = ()


def output_paths(fmt: str, out_path: Path) -> list[Path]:
    """The files an export writes: the GPT-2 pair goes into the folder ``out_path``."""
    if fmt == "gpt2":
        return [out_path / "vocab.json", out_path / "merges.txt"]
    if fmt == "tiktoken":
        return [out_path, sidecar_path(out_path)]
    if fmt == "hf" and out_path.is_dir():
        return [out_path / "tokenizer.json"]
    return [out_path]


def export_tokenizer(
    tokenizer: Tokenizer,
    fmt: str,
    out_path: str | Path,
    *,
    force: bool = False,
    frequencies: Sequence[int] | None = None,
    legacy_merges: bool = False,
    sample: str | Sequence[str] | None = None,
    name: str | None = None,
) -> ExportResult:
    """Write ``tokenizer`` as ``fmt`` (one of :data:`FORMATS`) to ``out_path``, verified.

    ``force`` replaces existing outputs (atomically); ``frequencies`` fills the merges CSV's last
    column; ``legacy_merges`` writes ``"a b"`` merge strings in tokenizer.json for old readers;
    ``sample`` adds texts to the verification sample; ``name`` names the tiktoken encoding.
    """
    if fmt not in FORMATS:
        raise WorkbenchError(f"unknown export format {fmt!r}: choose one of {', '.join(FORMATS)}")
    out_path = Path(out_path)
    if fmt == "gpt2" and out_path.exists() and not out_path.is_dir():
        raise WorkbenchError(f"{out_path} is a file: the gpt2 format writes a folder with vocab.json and merges.txt")
    finals = output_paths(fmt, out_path)
    refuse_existing(finals, force)
    notes: list[str] = []
    files: list[bytes]
    if fmt == "hf":
        data, notes = render_hf_json(tokenizer, legacy_merges=legacy_merges)
        files = [data]
    elif fmt == "gpt2":
        vocab_json, merges_txt, notes = render_gpt2(tokenizer)
        files = [vocab_json, merges_txt]
    elif fmt == "tiktoken":
        encoding_name = name or tokenizer.name or out_path.stem
        ranks, side, notes = render_tiktoken(tokenizer, encoding_name)
        files = [ranks, side]
    elif fmt == "wordpiece":
        data, notes = render_wordpiece(tokenizer)
        files = [data]
    elif fmt == "spm":
        from workbench.formats.spm_model import render_spm_model

        data, notes = render_spm_model(tokenizer)
        files = [data]
    elif fmt == "spm-vocab":
        data, notes = render_spm_vocab(tokenizer)
        files = [data]
    else:
        files = [render_merges_csv(tokenizer, frequencies)]
    texts = _sample_texts(tokenizer, sample)
    # The GPT-2 pair is a folder of its own: it is staged whole beside out_path and renamed into
    # place, so a failed export leaves neither an empty folder nor a temporary one.
    with Staging(out_path.parent if fmt == "gpt2" else finals[0].parent) as staging:
        staged = [staging.stage(final.name, data) for final, data in zip(finals, files)]
        checks = _VERIFIERS[fmt](tokenizer, staged, texts, notes)
        if fmt == "gpt2":
            staging.commit_folder(out_path)
        else:
            staging.commit(dict(zip(staged, finals)))
    return ExportResult(fmt, tuple(finals), tuple(checks), tuple(notes))


# ------------------------------------------------------------------------------------ the sample
def _sample_texts(tokenizer: Tokenizer, sample: str | Sequence[str] | None) -> list[str]:
    texts = list(SAMPLE_TEXTS)
    texts.append("\n".join(SAMPLE_TEXTS))
    # The tokenizer's own merged pieces, so its merges are exercised whatever its training text.
    pieces = []
    for _left, _right, new in tokenizer.merges[:2000]:
        piece = tokenizer.vocab[new]
        if tokenizer.end_of_word:
            piece = piece.replace(tokenizer.end_of_word.encode("utf-8"), b"")
        pieces.append(piece.decode("utf-8", "ignore"))
    if pieces:
        texts.append(" ".join(pieces))
        texts.append("".join(pieces[:300]))
    if isinstance(sample, str):
        texts.append(sample)
    elif sample:
        texts.extend(sample)
    return [t for t in texts if t]


def _expected(tokenizer: Tokenizer, texts: list[str]) -> list[tuple[str, list[int]]]:
    """(text, our ids) for each text our encoder can encode (a character vocabulary without an
    unknown token cannot encode characters it never saw: those texts are skipped)."""
    from workbench.core.encoder import Encoder

    encoder = Encoder(tokenizer)
    out = []
    for text in texts:
        try:
            out.append((text, encoder.encode(text)))
        except WorkbenchError:
            continue
    if not out:
        raise WorkbenchError("verification impossible: the tokenizer cannot encode any sample text")
    return out


def _compare(label: str, fmt: str, cases: list[tuple[str, list[int]]], encode: Callable[[str], list[int]]) -> str:
    total = 0
    for index, (text, ids) in enumerate(cases):
        got = list(encode(text))
        if got != ids:
            at = next((i for i, (a, b) in enumerate(zip(got, ids)) if a != b), min(len(got), len(ids)))
            raise WorkbenchError(
                f"{fmt} export failed verification: {label} gives different ids than the workbench on sample "
                f"{index + 1} ({text[:40]!r}…) from token {at}: nothing was written"
            )
        total += len(ids)
    return f"{label}: same ids as the workbench on {len(cases)} sample texts ({total} tokens)"


def _agreement(label: str, cases: list[tuple[str, list[int]]], encode: Callable[[str], list[int]]) -> str:
    same = sum(1 for text, ids in cases if list(encode(text)) == ids)
    return f"{label}: loaded; same ids as the workbench on {same} of {len(cases)} sample texts"


def _encoder_of(tokenizer: Tokenizer) -> Callable[[str], list[int]]:
    from workbench.core.encoder import Encoder

    return Encoder(tokenizer).encode


def _try_import(module: str):
    try:
        return __import__(module)
    except ImportError:
        return None


@contextlib.contextmanager
def _tiktoken_cache_off() -> Iterator[None]:
    # tiktoken's loader copies every file it reads into a cache keyed by *path* and, without an
    # expected hash, serves that copy next time: a re-export to the same path would be checked
    # against the stale file. An empty TIKTOKEN_CACHE_DIR disables the cache.
    old = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = ""
    try:
        yield
    finally:
        if old is None:
            del os.environ["TIKTOKEN_CACHE_DIR"]
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = old


# ---------------------------------------------------------------------------------- verifiers
def _verify_hf(tokenizer: Tokenizer, staged: list[Path], texts: list[str], notes: list[str]) -> list[str]:
    cases = _expected(tokenizer, texts)
    approximate = tokenizer.units == "chars" and bool(tokenizer.end_of_word)
    reloaded, _ = read_hf_json(staged[0])
    checks = []
    if approximate:
        checks.append(_agreement("workbench reader", cases, _encoder_of(reloaded)))
    else:
        _same_structure("workbench reader", tokenizer, reloaded, "hf")
        checks.append(_compare("workbench reader", "hf", cases, _encoder_of(reloaded)))
    lib = _try_import("tokenizers")
    if lib is not None:
        try:
            hf = lib.Tokenizer.from_file(str(staged[0]))
        except Exception as exc:  # noqa: BLE001 - the library's own error types are not public API
            raise WorkbenchError(f"hf export failed verification: tokenizers cannot load it ({exc}): "
                                 "nothing was written") from None

        def encode(text: str) -> list[int]:
            return hf.encode(text, add_special_tokens=False).ids

        label = f"tokenizers {lib.__version__}"
        hf_cases = _hf_unigram_cases(tokenizer, cases, notes) if tokenizer.model == "unigram" else cases
        checks.append(_agreement(label, cases, encode) if approximate else _compare(label, "hf", hf_cases, encode))
    else:
        checks.append("tokenizers not installed: library check skipped")
    if approximate:
        notes.append("end-of-word export is approximate in tokenizers' suffix model: " + checks[-1])
    return checks


def _hf_unigram_cases(tokenizer: Tokenizer, cases: list[tuple[str, list[int]]],
                      notes: list[str]) -> list[tuple[str, list[int]]]:
    """What ``tokenizers`` must give for a Unigram tokenizer.json. Its Viterbi has sentencepiece's
    tie rule (of equal candidates the one found first, the earlier start, stays) but sums scores
    per word in double, where sentencepiece — and the workbench's default ids — sum the whole
    line in float32: on a near tie the two may split a word differently, and no tokenizer.json
    can ask for float32 sums. So tokenizers is held to the workbench's double-per-word ids
    (``UnigramModel.encode(float32=False)``), and a note says where they differ from the .model's."""
    from workbench.core.unigram import model_of

    model = model_of(tokenizer)
    out = [(text, model.encode(tokenizer.normalize(text) if tokenizer.normalizer else text, float32=False))
           for text, _ids in cases]
    differ = sum(1 for (_t, a), (_u, b) in zip(out, cases) if a != b)
    if differ:
        notes.append(f"on {differ} sample text(s) tokenizers splits a near tie differently from sentencepiece: "
                     "it sums scores per word in double, sentencepiece (and the workbench) per line in float32")
    return out


def _verify_gpt2(tokenizer: Tokenizer, staged: list[Path], texts: list[str], notes: list[str]) -> list[str]:
    cases = _expected(tokenizer, texts)
    reloaded, _ = read_gpt2(staged[0], staged[1], pattern=tokenizer.pretokenizer)
    reloaded = _with_settings(reloaded, tokenizer)
    _same_structure("workbench reader", tokenizer, reloaded, "gpt2")
    checks = [_compare("workbench reader", "gpt2", cases, _encoder_of(reloaded))]
    lib = _try_import("tokenizers")
    pre = tokenizer.pre
    if lib is None:
        checks.append("tokenizers not installed: library check skipped")
    elif tokenizer.units != "bytes" or tokenizer.normalizer or pre.name in ("metaspace", "whitespace"):
        checks.append("tokenizers check skipped: the pair cannot express this tokenizer's normalizer/pre-tokenizer")
    else:
        from tokenizers import Regex, models, pre_tokenizers

        try:
            hf = lib.Tokenizer(models.BPE.from_file(str(staged[0]), str(staged[1])))
        except Exception as exc:  # noqa: BLE001 - the library's own error types are not public API
            raise WorkbenchError(f"gpt2 export failed verification: tokenizers cannot load it ({exc}): "
                                 "nothing was written") from None
        if pre.name == "gpt2":
            hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
        elif pre.pattern is None:
            hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
        else:
            hf.pre_tokenizer = pre_tokenizers.Sequence([
                pre_tokenizers.Split(Regex(hf_pattern(pre.pattern)), behavior="isolated", invert=False),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            ])
        checks.append(_compare(f"tokenizers {lib.__version__} BPE.from_file", "gpt2", cases,
                               lambda text: hf.encode(text, add_special_tokens=False).ids))
    return checks


def _verify_spm_model(tokenizer: Tokenizer, staged: list[Path], texts: list[str], notes: list[str]) -> list[str]:
    """Our reader, then sentencepiece itself, must give the workbench's ids on the sample."""
    from workbench.formats.spm_model import read_spm_model

    cases = _expected(tokenizer, texts)
    reloaded, _ = read_spm_model(staged[0])
    checks = [_compare("workbench reader", "spm", cases, _encoder_of(reloaded))]
    lib = _try_import("sentencepiece")
    if lib is None:
        checks.append("sentencepiece not installed: library check skipped")
        return checks
    try:
        processor = lib.SentencePieceProcessor(model_file=str(staged[0]))
    except Exception as exc:  # noqa: BLE001 - sentencepiece raises plain RuntimeError/OSError
        raise WorkbenchError(f"spm export failed verification: sentencepiece cannot load it ({exc}): "
                             "nothing was written") from None
    checks.append(_compare(f"sentencepiece {getattr(lib, '__version__', '')}", "spm", cases,
                           lambda text: processor.encode(text)))
    return checks


def _verify_tiktoken(tokenizer: Tokenizer, staged: list[Path], texts: list[str], notes: list[str]) -> list[str]:
    cases = _expected(tokenizer, texts)
    reloaded, _ = read_tiktoken(staged[0])
    checks = [_compare("workbench reader (tiktoken's byte-rank rule)", "tiktoken", cases, _encoder_of(reloaded))]
    lib = _try_import("tiktoken")
    if lib is None:
        checks.append("tiktoken not installed: library check skipped")
        return checks
    import json

    import tiktoken.load

    side = json.loads(staged[1].read_text("utf-8"))
    try:
        with _tiktoken_cache_off():
            ranks = tiktoken.load.load_tiktoken_bpe(str(staged[0]))
        encoding = lib.Encoding(name=side["name"], pat_str=side["pat_str"], mergeable_ranks=ranks,
                                special_tokens=side["special_tokens"])
    except Exception as exc:  # noqa: BLE001 - tiktoken raises plain ValueError/KeyError/pyo3 panics
        raise WorkbenchError(f"tiktoken export failed verification: tiktoken cannot load it ({exc}): "
                             "nothing was written") from None
    normalize = tokenizer.normalize
    checks.append(_compare(f"tiktoken {getattr(lib, '__version__', '')} Encoding".replace("  ", " "), "tiktoken",
                           cases, lambda text: encoding.encode_ordinary(normalize(text))))
    return checks


def _verify_wordpiece(tokenizer: Tokenizer, staged: list[Path], texts: list[str], notes: list[str]) -> list[str]:
    written = staged[0].read_text("utf-8").split("\n")[:-1]
    reloaded, _ = read_wordpiece(staged[0])
    if len(written) != len(tokenizer.vocab) or len(reloaded.vocab) != len(tokenizer.vocab):
        raise WorkbenchError("wordpiece export failed verification: line count differs from the vocabulary size")
    for token_id in range(len(tokenizer.vocab)):
        if not tokenizer.vocab[token_id] and token_id not in tokenizer.special_ids:
            continue
        expected = piece_to_text(tokenizer, token_id)
        if written[token_id] != expected or piece_to_text(reloaded, token_id) != expected:
            raise WorkbenchError(f"wordpiece export failed verification: line {token_id + 1} is not id {token_id}'s piece")
    checks = [f"workbench reader: {len(written)} lines, line n = id n - 1 for every piece"]
    lib = _try_import("tokenizers")
    if lib is not None:
        from tokenizers import models

        vocab = models.WordPiece.read_file(str(staged[0]))
        wrong = [text for i, text in enumerate(written) if vocab.get(text) != i]
        if wrong:
            raise WorkbenchError(f"wordpiece export failed verification: tokenizers reads {wrong[0]!r} with another id")
        checks.append(f"tokenizers {lib.__version__} WordPiece.read_file: same id for all {len(written)} pieces")
    return checks


def _verify_spm(tokenizer: Tokenizer, staged: list[Path], texts: list[str], notes: list[str]) -> list[str]:
    reloaded, _ = read_spm_vocab(staged[0])
    if len(reloaded.vocab) != len(tokenizer.vocab):
        raise WorkbenchError("spm-vocab export failed verification: line count differs from the vocabulary size")
    for token_id, piece in enumerate(tokenizer.vocab):
        if (piece or token_id in tokenizer.special_ids) and reloaded.vocab[token_id] != piece:
            raise WorkbenchError(f"spm-vocab export failed verification: line {token_id + 1} reads back differently")
    return [f"workbench reader: all {len(tokenizer.vocab)} pieces read back byte for byte at their ids"]


def _verify_csv(tokenizer: Tokenizer, staged: list[Path], texts: list[str], notes: list[str]) -> list[str]:
    rows = read_merges_csv(staged[0])
    if len(rows) != len(tokenizer.merges):
        raise WorkbenchError("merges-csv export failed verification: row count differs from the merge count")
    vocab = tokenizer.vocab
    for (rank, left, right, merged, _freq), (a, b, new) in zip(rows, tokenizer.merges):
        if (left, right, merged) != (cell(vocab[a]), cell(vocab[b]), cell(vocab[new])):
            raise WorkbenchError(f"merges-csv export failed verification: rank {rank} reads back differently")
    return [f"csv reader: {len(rows)} merges read back in rank order"]


_VERIFIERS: dict[str, Callable[[Tokenizer, list[Path], list[str], list[str]], list[str]]] = {
    "hf": _verify_hf,
    "gpt2": _verify_gpt2,
    "tiktoken": _verify_tiktoken,
    "wordpiece": _verify_wordpiece,
    "spm": _verify_spm_model,
    "spm-vocab": _verify_spm,
    "merges-csv": _verify_csv,
}


def _with_settings(reloaded: Tokenizer, original: Tokenizer) -> Tokenizer:
    """The GPT-2 pair cannot carry the normalizer: compare the vocabulary under the same one."""
    from dataclasses import replace

    return replace(reloaded, normalizer=original.normalizer)


def _same_structure(label: str, original: Tokenizer, reloaded: Tokenizer, fmt: str) -> None:
    # WordPiece encodes by longest match over the vocabulary; its files keep no merge log.
    if original.model != "wordpiece" and len(reloaded.merges) != len(original.merges):
        raise WorkbenchError(
            f"{fmt} export failed verification: {label} finds {len(reloaded.merges)} merges, "
            f"expected {len(original.merges)}: nothing was written"
        )
    if dict(reloaded.special_tokens) != dict(original.special_tokens):
        raise WorkbenchError(f"{fmt} export failed verification: {label} finds other special tokens: nothing was written")
