"""Export a tokenizer to a file format, verified before it is reported done.

Every export is rendered in memory, staged beside its destination, **reloaded** — with our own
reader always, and with ``tokenizers`` / ``tiktoken`` when they are importable — and compared id
for id with our :class:`~workbench.core.encoder.Encoder` on a built-in multilingual sample (emoji
sequences, flags, combining marks, CJK, digits, CRLF, runs of spaces), a sample made of the
tokenizer's own merged pieces, and any text the caller adds. Only then does it replace the
destination (atomically, see :mod:`workbench.core.atomic`). A mismatch raises
:class:`WorkbenchError` and nothing is left under the output name.

Formats that hold only a vocabulary (``wordpiece``, ``spm-vocab``) or only merges (``merges-csv``)
are verified piece by piece instead of by encoding (``wordpiece`` also by encoding, in the BERT
loader ``tokenizers`` ships).

Not every format fits every tokenizer: :func:`formats_for` lists, per model family (and, given a
run's settings, per run), the formats whose real library reproduces the ids with its **default**
loader options, and :func:`why_not` says in one sentence why another is not offered. The CLI, the
export dialog and :func:`export_tokenizer` all ask these two, so a format that does not fit is
refused before anything is rendered.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from workbench.core.atomic import Staging, refuse_existing
from workbench.core.model import ENCODES_AS, Tokenizer
from workbench.core.special_roles import with_template
from workbench.errors import WorkbenchError
from workbench.formats.common import piece_to_text
from workbench.formats.detect import FORMATS
from workbench.formats.gpt2_files import read_gpt2, render_gpt2
from workbench.formats.hf_folder import FOLDER_FILES, render_hf_folder
from workbench.formats.hf_json import read_hf_json, render_hf_json
from workbench.formats.hf_roles import role_tokens
from workbench.formats.merges_csv import cell, read_merges_csv, render_merges_csv
from workbench.formats.tiktoken_file import read_tiktoken, render_tiktoken, sidecar_path, tiktoken_pattern
from workbench.formats.vocab_lists import (
    SPM_VOCAB_NORMALIZER,
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


# -------------------------------------------------------------------------- which formats fit
# Why a format never fits a family, whatever the run's settings. A format missing here fits the
# family (subject to the run-level checks in :func:`why_not`).
_NOT_FOR_FAMILY: dict[str, dict[str, str]] = {
    "bpe": {
        "wordpiece": "vocab.txt is a WordPiece vocabulary: a BERT loader splits words by greedy longest match "
                     "with ## continuations (and needs [UNK]), not by this BPE's merges, so it gives other ids",
        "spm-vocab": "a .vocab lists pieces without their merges: it reloads as another tokenizer",
        "spm": "a BPE .model cannot be verified yet: our metaspace BPE adds no dummy ▁ prefix, and reading "
               "such a .model back is not supported",
    },
    "wordpiece": {
        "gpt2": "vocab.json + merges.txt is a BPE: it replays merges, while a WordPiece splits words by "
                "greedy longest match, so its ## pieces cannot be merges of each other",
        "tiktoken": "tiktoken runs byte-level BPE ranks; a WordPiece splits characters by greedy longest match",
        "spm": "sentencepiece runs Unigram or BPE models, not WordPiece's greedy longest match",
        "spm-vocab": "a .vocab is SentencePiece's listing of a Unigram model; a WordPiece's listing is vocab.txt",
    },
    "unigram": {
        "gpt2": "vocab.json + merges.txt is a BPE: a Unigram learns no merges, it picks the best-scoring split",
        "tiktoken": "tiktoken runs byte-level BPE ranks: a Unigram learns no merges, it picks the best-scoring split",
        "wordpiece": "a BERT loader encodes vocab.txt by greedy longest match, not by a Unigram's scores, "
                     "so it gives other ids",
        "merges-csv": "a Unigram learns no merges: the table would be empty (its pieces and scores are in spm-vocab)",
    },
}

_SUPERWORDS = ("this SuperBPE run's superwords (tokens across spaces) come from its stage-2 split, which does not cut "
               "at spaces; ")
# … and what a family that trains another kind's tokenizer cannot go to besides that kind's refusals.
_NOT_FOR_TRAINED: dict[str, dict[str, str]] = {
    # SuperBPE's tokenizers are BPE whose split no longer cuts at spaces: what holds the split holds them.
    "superbpe": {
        "gpt2": _SUPERWORDS + "vocab.json + merges.txt cannot hold that split, and a GPT-2 loader cuts text at spaces "
                              "with GPT-2's pattern, so no superword merge would ever apply (tokenizer.json holds it)",
        "tiktoken": _SUPERWORDS + "tiktoken drops the text between its pattern's matches, where superwords live, and "
                                  "merges by byte rank, not by merge rank (tokenizer.json holds it)",
    },
    "pickybpe": {
        "tiktoken": "tiktoken joins the two pieces whose bytes form the lowest-ranked token, and a PickyBPE run's "
                    "merges (made around its removed tokens) do not follow that rule: it gives other ids",
    },
}
_BERT_NORMALIZERS = (("bert",), ("bert-lower",))
_FOLDER_FORMATS = ("gpt2", "hf-folder")  # formats that write a folder of files
_BERT_SPECIALS = ("[UNK]", "[CLS]", "[SEP]")


def why_not(model: str, fmt: str, settings: Mapping[str, Any] | None = None) -> str:
    """Why ``fmt`` is not offered for a ``model`` tokenizer; ``""`` when it fits.

    ``settings`` (a run's settings or :meth:`Tokenizer.settings`: ``units``, ``pretokenizer``,
    ``normalizer``, ``special_tokens``, ``unk_token``) adds the run-level rules, e.g. the GPT-2 pair only for a
    byte-level BPE with GPT-2's own split; without it the answer is for the family.
    """
    if fmt not in FORMATS:
        return f"{fmt!r} is not an export format"
    if model in ENCODES_AS:  # a family that trains another kind's tokenizer (PickyBPE: a BPE)
        reason = _NOT_FOR_TRAINED.get(model, {}).get(fmt)
        if reason:
            return reason
        model = ENCODES_AS[model]
    family = _NOT_FOR_FAMILY.get(model)
    if family is None:
        return f"{model!r} is not a model family the workbench exports"
    if fmt == "hf-folder":  # a tokenizer.json with its loader's config: fits where tokenizer.json fits
        return why_not(model, "hf", settings)
    if fmt in family:
        return family[fmt]
    if settings is None:
        return ""
    units = settings.get("units", "bytes")
    pre = settings.get("pretokenizer", "gpt2")
    normalizer = tuple(settings.get("normalizer") or ())
    if model in ("bpe", "superbpe"):
        if fmt == "hf" and settings.get("end_of_word"):
            return ("tokenizers glues the end-of-word marker to a word's last character before merging, so "
                    "merges this run made before joining the marker never apply there: other ids on some words "
                    "(train without --end-of-word to export a tokenizer.json)")
        if fmt in ("gpt2", "tiktoken") and units != "bytes":
            return f"{'the GPT-2 pair' if fmt == 'gpt2' else 'tiktoken'} is byte-level; this run works on characters"
        if fmt in ("gpt2", "tiktoken") and normalizer:
            return (f"{'the GPT-2 pair' if fmt == 'gpt2' else 'a tiktoken file'} carries no normalizer; "
                    f"this run normalizes with {','.join(normalizer)}")
        if fmt == "tiktoken":
            try:
                tiktoken_pattern(pre)
            except WorkbenchError as exc:
                return str(exc)
        if fmt == "gpt2" and pre != "gpt2":
            return (f"a GPT-2 loader splits text with GPT-2's pattern; this run uses {pre!r} "
                    "(tokenizer.json and tiktoken carry the pattern)")
    if model == "wordpiece":
        if fmt == "hf" and pre == "metaspace":
            return "tokenizer.json has no WordPiece layout for the metaspace pre-tokenizer"
        if fmt == "wordpiece" and (pre != "bert" or normalizer not in _BERT_NORMALIZERS):
            return ("vocab.txt carries no normalizer or pre-tokenizer, so a BERT loader runs BERT's; "
                    f"this run uses pre-tokenizer {pre!r} and normalizer {','.join(normalizer) or 'none'} "
                    "(tokenizer.json carries them)")
        if fmt == "wordpiece" and normalizer != ("bert-lower",):
            return ("vocab.txt cannot say the run is cased, and BERT loaders lowercase by default "
                    "(BertTokenizerFast, BertWordPieceTokenizer): this cased run's ids would differ "
                    "(tokenizer.json and hf-folder carry it; train with --normalize bert-lower for vocab.txt)")
        missing = [name for name in _BERT_SPECIALS if name not in (settings.get("special_tokens") or ())]
        if fmt == "wordpiece" and (missing or settings.get("unk_token", "[UNK]") != "[UNK]"):
            return (f"a BERT loader needs {', '.join(_BERT_SPECIALS)} in vocab.txt (and [UNK] as the unknown "
                    f"token); this run lacks {', '.join(missing) or '[UNK] as its unknown token'}")
    if model == "unigram" and fmt == "spm-vocab" and normalizer != SPM_VOCAB_NORMALIZER:
        return (f"a .vocab cannot say its normalizer and is read back with SentencePiece's clean-up "
                f"({','.join(SPM_VOCAB_NORMALIZER)}); this run uses {','.join(normalizer) or 'none'} "
                "(the .model and tokenizer.json carry it)")
    return ""


def formats_for(model: str, settings: Mapping[str, Any] | None = None) -> tuple[str, ...]:
    """The export formats whose real library reproduces a ``model`` tokenizer's ids (in
    :data:`FORMATS` order); ``settings`` narrows the family's list to one run's."""
    return tuple(fmt for fmt in FORMATS if not why_not(model, fmt, settings))


def _family_of(tokenizer: Tokenizer) -> str:
    """The family whose rules fit ``tokenizer``: a BPE that splits with SuperBPE's stage-2 pattern
    holds superwords (its model kind alone says BPE)."""
    from workbench.core.superbpe import STAGE2_PATTERN

    return "superbpe" if tokenizer.model == "bpe" and tokenizer.pretokenizer == STAGE2_PATTERN else tokenizer.model


def refuse_unfit(tokenizer: Tokenizer, fmt: str, trained_as: str | None = None) -> None:
    """Raise the one-line refusal for a format that does not fit ``tokenizer``; ``trained_as``: the
    family of the run it comes from, when that family refuses more than its kind (PickyBPE)."""
    model = trained_as or _family_of(tokenizer)
    reason = why_not(model, fmt, tokenizer.settings())
    if reason:
        fitting = formats_for(model, tokenizer.settings())
        family = {"bpe": "BPE", "wordpiece": "WordPiece", "unigram": "Unigram", "superbpe": "SuperBPE",
                  "pickybpe": "PickyBPE", "parity-bpe": "parity-aware BPE"}.get(model, model)
        raise WorkbenchError(f"{fmt} is not offered for this {family} tokenizer: {reason}; "
                             f"formats that fit: {', '.join(fitting) or 'none'}")


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
    if fmt == "hf-folder":
        return [out_path / name for name in FOLDER_FILES]
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
    chat_template: str | None = None,
    model_max_length: int | None = None,
    before_write: Callable[[], None] | None = None,
) -> ExportResult:
    """Write ``tokenizer`` as ``fmt`` (one of :data:`FORMATS`) to ``out_path``, verified.

    ``force`` replaces existing outputs (atomically); ``frequencies`` fills the merges CSV's last
    column; ``legacy_merges`` writes ``"a b"`` merge strings in tokenizer.json for old readers;
    ``sample`` adds texts to the verification sample; ``name`` names the tiktoken encoding;
    ``chat_template`` and ``model_max_length`` go into an ``hf-folder``'s tokenizer_config.json;
    ``before_write`` runs once everything is verified, just before the files are put in place
    (the CLI prints the pre-export warnings there; raising in it writes nothing).
    """
    if fmt not in FORMATS:
        raise WorkbenchError(f"unknown export format {fmt!r}: choose one of {', '.join(FORMATS)}")
    refuse_unfit(tokenizer, fmt)
    out_path = Path(out_path)
    if fmt in _FOLDER_FORMATS and out_path.exists() and not out_path.is_dir():
        raise WorkbenchError(f"{out_path} is a file: the {fmt} format writes a folder with "
                             f"{' and '.join(p.name for p in output_paths(fmt, out_path))}")
    finals = output_paths(fmt, out_path)
    refuse_existing(finals, force)
    notes: list[str] = []
    files: list[bytes]
    if fmt == "hf":
        data, notes = render_hf_json(tokenizer, legacy_merges=legacy_merges)
        files = [data]
    elif fmt == "hf-folder":
        files, notes = render_hf_folder(tokenizer, model_max_length=model_max_length, chat_template=chat_template,
                                        legacy_merges=legacy_merges)
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
    # The GPT-2 pair and the hf-folder are folders of their own: staged whole beside out_path and
    # renamed into place, so a failed export leaves neither an empty folder nor a temporary one.
    folder = fmt in _FOLDER_FORMATS
    with Staging(out_path.parent if folder else finals[0].parent, target=out_path) as staging:
        staged = [staging.stage(final.name, data) for final, data in zip(finals, files)]
        checks = _VERIFIERS[fmt](tokenizer, staged, texts, notes)
        if before_write is not None:
            before_write()
        if folder:  # the user's other files in an existing folder stay (Staging.commit_folder)
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
    # An end-of-word run never gets here: formats_for does not offer it (tokenizers only approximates it).
    cases = _expected(tokenizer, texts)
    reloaded, _ = read_hf_json(staged[0])
    _same_structure("workbench reader", tokenizer, reloaded, "hf")
    checks = [_compare("workbench reader", "hf", cases, _encoder_of(reloaded))]
    lib = _try_import("tokenizers")
    if lib is None:
        checks.append("tokenizers not installed: library check skipped")
        return checks
    try:
        hf = lib.Tokenizer.from_file(str(staged[0]))
    except Exception as exc:  # noqa: BLE001 - the library's own error types are not public API
        raise WorkbenchError(f"hf export failed verification: tokenizers cannot load it ({exc}): "
                             "nothing was written") from None
    hf_cases = _hf_unigram_cases(tokenizer, cases, notes) if tokenizer.model == "unigram" else cases
    if tokenizer.template != "none":  # the text's own ids, then the template's additions around them
        checks.append(_compare(f"tokenizers {lib.__version__} (add_special_tokens=False)", "hf", hf_cases,
                               lambda text: hf.encode(text, add_special_tokens=False).ids))
        hf_cases = [(text, with_template(ids, tokenizer.special_roles, tokenizer.template, tokenizer.special_tokens))
                    for text, ids in hf_cases]
    elif tokenizer.pipeline is not None and tokenizer.pipeline.post_processor:
        # a tokenizer.json's own post-processor (kept as the file had it) wraps the text's ids
        checks.append(_compare(f"tokenizers {lib.__version__} (add_special_tokens=False)", "hf", hf_cases,
                               lambda text: hf.encode(text, add_special_tokens=False).ids))
        before, after = tokenizer.pipeline.post_additions()
        hf_cases = [(text, [i for _t, i in before] + list(ids) + [i for _t, i in after]) for text, ids in hf_cases]
    checks.append(_compare(f"tokenizers {lib.__version__}", "hf", hf_cases,
                           lambda text: hf.encode(text).ids))  # default options, as a user calls it
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
    if lib is None:
        checks.append("tokenizers not installed: library check skipped")
    else:
        # The loader with its default options (GPT-2's split, no prefix space): the formats_for
        # rules offer the pair only for a byte-level BPE with GPT-2's pattern and no normalizer.
        try:
            hf = lib.ByteLevelBPETokenizer(str(staged[0]), str(staged[1]))
        except Exception as exc:  # noqa: BLE001 - the library's own error types are not public API
            raise WorkbenchError(f"gpt2 export failed verification: tokenizers cannot load it ({exc}): "
                                 "nothing was written") from None
        checks.append(_compare(f"tokenizers {lib.__version__} ByteLevelBPETokenizer", "gpt2", cases,
                               lambda text: hf.encode(text).ids))
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
        checks.append(_compare_bert_loader(tokenizer, staged[0], _expected(tokenizer, texts)))
    return checks


def _compare_bert_loader(tokenizer: Tokenizer, path: Path, cases: list[tuple[str, list[int]]]) -> str:
    """Our ids from ``tokenizers``' BERT loader, ``BertWordPieceTokenizer(vocab.txt, lowercase=…)``.

    Every other option is the loader's default (clean_text, handle_chinese_chars, strip_accents
    following lowercase, ``##``, [UNK]) — the BERT pipeline the run trained with. ``lowercase`` is
    the one fact vocab.txt cannot carry: it is the run's normalizer. The loader wraps each text in
    [CLS] … [SEP] by BERT's convention, so the comparison asks for the text's own tokens.
    """
    from tokenizers import BertWordPieceTokenizer

    lowercase = tokenizer.normalizer == ("bert-lower",)
    try:
        bert = BertWordPieceTokenizer(str(path), lowercase=lowercase)
    except Exception as exc:  # noqa: BLE001 - the library's own error types are not public API
        raise WorkbenchError(f"wordpiece export failed verification: tokenizers' BertWordPieceTokenizer cannot "
                             f"load it ({exc}): nothing was written") from None
    return _compare(f"BertWordPieceTokenizer(lowercase={lowercase})", "wordpiece", cases,
                    lambda text: bert.encode(text, add_special_tokens=False).ids)


def _verify_spm(tokenizer: Tokenizer, staged: list[Path], texts: list[str], notes: list[str]) -> list[str]:
    if tokenizer.model == "unigram":
        return _verify_unigram_vocab(tokenizer, staged[0], texts)
    reloaded, _ = read_spm_vocab(staged[0])
    if len(reloaded.vocab) != len(tokenizer.vocab):
        raise WorkbenchError("spm-vocab export failed verification: line count differs from the vocabulary size")
    for token_id, piece in enumerate(tokenizer.vocab):
        if (piece or token_id in tokenizer.special_ids) and reloaded.vocab[token_id] != piece:
            raise WorkbenchError(f"spm-vocab export failed verification: line {token_id + 1} reads back differently")
    return [f"workbench reader: all {len(tokenizer.vocab)} pieces read back byte for byte at their ids"]


def _verify_unigram_vocab(tokenizer: Tokenizer, path: Path, texts: list[str]) -> list[str]:
    """A Unigram's .vocab must list, line n = id n - 1, the piece and score sentencepiece itself
    reports for the .model of the same tokenizer (the model that reproduces the ids); read back,
    it must give our ids (no library loads a .vocab as a tokenizer)."""
    import struct

    from workbench.formats.spm_model import model_pieces, render_spm_model

    model, _notes = render_spm_model(tokenizer)
    # A piece may hold a tab (SentencePiece writes pieces as they are): the score is after the last one.
    lines = [line.rsplit("\t", 1) for line in path.read_text("utf-8").split("\n")[:-1]]
    lib = _try_import("sentencepiece")
    if lib is not None:
        processor = lib.SentencePieceProcessor(model_proto=model)
        listed = [(processor.id_to_piece(i), processor.get_score(i)) for i in range(processor.get_piece_size())]
        label = f"sentencepiece {getattr(lib, '__version__', '')} (the .model of the same run)"
    else:
        listed = model_pieces(model)
        label = "the .model of the same run (sentencepiece not installed)"
    if len(lines) != len(listed):
        raise WorkbenchError(f"spm-vocab export failed verification: {len(lines)} lines for {len(listed)} pieces")
    for number, (fields, (piece, score)) in enumerate(zip(lines, listed), start=1):
        if (len(fields) != 2 or fields[0] != piece
                or struct.pack("<f", float(fields[1])) != struct.pack("<f", score)):
            raise WorkbenchError(f"spm-vocab export failed verification: line {number} is not {label}'s "
                                 f"piece {piece!r} with score {score}: nothing was written")
    checks = [f"{label}: same piece and float32 score on all {len(lines)} lines"]
    if tokenizer.normalizer:  # the .vocab cannot say it: the reader assumes none
        return checks
    reloaded, _notes = read_spm_vocab(path)
    checks.append(_compare("workbench reader", "spm-vocab", _expected(tokenizer, texts), _encoder_of(reloaded)))
    return checks


def _verify_csv(tokenizer: Tokenizer, staged: list[Path], texts: list[str], notes: list[str]) -> list[str]:
    rows = read_merges_csv(staged[0])
    if len(rows) != len(tokenizer.merges):
        raise WorkbenchError("merges-csv export failed verification: row count differs from the merge count")
    vocab = tokenizer.vocab
    for (rank, left, right, merged, _freq), (a, b, new) in zip(rows, tokenizer.merges):
        if (left, right, merged) != (cell(vocab[a]), cell(vocab[b]), cell(vocab[new])):
            raise WorkbenchError(f"merges-csv export failed verification: rank {rank} reads back differently")
    return [f"csv reader: {len(rows)} merges read back in rank order"]


def _verify_hf_folder(tokenizer: Tokenizer, staged: list[Path], texts: list[str], notes: list[str]) -> list[str]:
    """tokenizer.json as for ``hf``; the config files must name each role's token with the id
    tokenizer.json gives it (transformers looks the names up there)."""
    import json

    checks = _verify_hf(tokenizer, staged[:1], texts, notes)
    document = json.loads(staged[0].read_text("utf-8"))
    added = {entry["content"]: entry["id"] for entry in document.get("added_tokens") or []}
    for path in staged[1:]:
        written = json.loads(path.read_text("utf-8"))
        for key, token in role_tokens(tokenizer).items():
            if written.get(key) != token or added.get(token) != tokenizer.special_tokens.get(token):
                raise WorkbenchError(f"hf-folder export failed verification: {path.name} does not name {token!r} "
                                     f"as {key} with its id: nothing was written")
    roles = ", ".join(role_tokens(tokenizer)) or "no roles"
    checks.append(f"tokenizer_config.json and special_tokens_map.json: {roles} at their ids")
    return checks


_VERIFIERS: dict[str, Callable[[Tokenizer, list[Path], list[str], list[str]], list[str]]] = {
    "hf": _verify_hf,
    "hf-folder": _verify_hf_folder,
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
