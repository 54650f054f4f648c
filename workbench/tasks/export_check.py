"""The pre-export check: what will go wrong *after* an export that loads and verifies fine.

An export is verified id for id in its own library (:mod:`workbench.formats.export`); these are the
problems that surface later, in the next tool or in training. Each is a warning with a one-line
reason (:class:`Finding`); the CLI prints them before writing (``--strict`` refuses to write, exit
2) and the export dialog shows them before the user confirms.

* ``merges-space`` — a merged piece holding a space or line break: ``merges.txt``, the legacy
  ``"a b"`` merges of tokenizer.json and GGUF's merge list are one ``left right`` line per merge, so
  such a merge splits into three pieces there (byte-level pieces spell a space ``Ġ`` and are safe);
* ``ill-formed-utf8`` — a piece no UTF-8 text can produce (``b"\\xff…"``; a *fragment* of a character,
  normal in byte-level vocabularies, is not one): an id spent on nothing;
* ``unreachable`` — ids that encoding never produces, when an audit result is given (the audit is
  computed elsewhere; without one this rule is not checked);
* ``special-in-corpus`` — a special token that occurs in the training corpus as plain text: with
  special tokens recognised in text (tokenizers' and transformers' default) that text becomes the
  special id, unlike what the model saw in training (the first :data:`MAX_SCAN_BYTES` are read);
* ``vocab-multiple`` — a vocabulary size that is not a multiple of 64: embedding and output
  matrices are padded to one (GPU tiles), so the gap is trained as dead rows;
* ``llama-cpp`` — a BPE whose pre-tokenizer regex is none of the presets llama.cpp implements
  (``gpt2`` = its ``gpt-2``, ``cl100k`` = ``llama-bpe``/Llama 3, ``o200k`` = ``gpt-4o``): its GGUF
  converter identifies a tokenizer by the pre-tokenizer type, and no type splits text like this
  regex, so it refuses the tokenizer. (Even a known regex needs the vocabulary's checksum added to
  ``convert_hf_to_gguf_update.py`` under that type; a regex without a type cannot be added.)

* ``superwords`` — a SuperBPE tokenizer's tokens across spaces (``"ĠofĠthe"``): tokenizer.json holds
  them with the stage-2 split that makes them, but its merges alone do not — ``merges.txt`` + ``vocab.json``
  (what ``tokenizer.model.save()`` writes, or a GPT-2 loader reads) come with GPT-2's split at spaces,
  under which no superword merge ever applies (the ``gpt2`` and ``tiktoken`` exports are refused for it).

Left out: anything the export itself verifies (ids in the target library), model-side limits.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from workbench.core.audit import IMPOSSIBLE, utf8_status
from workbench.core.model import Tokenizer
from workbench.core.superbpe import is_superword
from workbench.errors import WorkbenchError

_log = logging.getLogger(__name__)

#: How much corpus text the special-token rule reads at most (a check, not a second training pass).
MAX_SCAN_BYTES = 64 << 20
#: Our pre-tokenizer presets that are llama.cpp pre-tokenizer types, with the type's name there.
LLAMA_CPP_PRESETS = {"gpt2": "gpt-2", "cl100k": "llama-bpe", "o200k": "gpt-4o"}
#: Formats llama.cpp's converter reads (a Hugging Face folder, or GPT-2's pair).
_LLAMA_CPP_FORMATS = ("hf", "hf-folder", "gpt2")
_MERGE_LINE_FORMATS = ("hf", "hf-folder", "gpt2")


@dataclass(frozen=True)
class Finding:
    """One warning: which rule, and the one line that says what and why."""

    rule: str
    message: str


def _shown(items: Sequence[str], limit: int = 3) -> str:
    more = f" and {len(items) - limit} more" if len(items) > limit else ""
    return ", ".join(items[:limit]) + more


def _visible(piece: str) -> str:
    """A piece with its spaces and line breaks made visible (``'␣a'``)."""
    return "'" + piece.replace(" ", "␣").replace("\n", "\\n").replace("\r", "\\r") + "'"


def check_tokenizer(tokenizer: Tokenizer, fmt: str = "hf", *, corpus_texts: Iterable[str] | None = None,
                    unreachable: Sequence[int] | None = None, extension: bool = False) -> list[Finding]:
    """The warnings for exporting ``tokenizer`` as ``fmt`` (see the module docstring); ``extension``:
    the run extends a base (its size remedy is ``extend --pad-to``, not training again)."""
    findings: list[Finding] = []
    vocab, specials = tokenizer.vocab, tokenizer.special_ids
    if tokenizer.model == "bpe" and tokenizer.units == "chars" and fmt in _MERGE_LINE_FORMATS:
        spaced = sorted({vocab[i].decode("utf-8", "replace") for merge in tokenizer.merges for i in merge[:2]
                         if any(c in vocab[i] for c in (b" ", b"\n", b"\r"))})
        if spaced:
            findings.append(Finding("merges-space", f"{len(spaced)} merged piece(s) hold a space or line break "
                                    f"({_shown([_visible(p) for p in spaced])}): merges.txt and GGUF keep a merge as one "
                                    "\"left right\" line, so these merges cannot be read back there"))
    bad = [i for i, piece in enumerate(vocab)
           if piece and i not in specials and not (tokenizer.units == "bytes" and len(piece) == 1)
           and not (tokenizer.byte_fallback and len(piece) == 1) and utf8_status(piece) == IMPOSSIBLE]
    if bad:
        findings.append(Finding("ill-formed-utf8", f"{len(bad)} piece(s) are ill-formed UTF-8 that no text produces "
                                f"({_shown([f'id {i} {vocab[i]!r}' for i in bad])}): their ids are never used"))
    if unreachable:
        findings.append(Finding("unreachable", f"{len(unreachable)} token(s) are unreachable: encoding never "
                                f"produces them ({_shown([f'id {i}' for i in unreachable])}); trim them"))
    if corpus_texts is not None and tokenizer.special_tokens:
        found = _specials_in_text(list(tokenizer.special_tokens), corpus_texts)
        if found:
            findings.append(Finding("special-in-corpus", f"special token(s) {_shown([repr(t) for t in found])} occur "
                                    "in the training corpus as plain text: encoders that recognise special tokens "
                                    "in text (the default in tokenizers and transformers) turn that text into the "
                                    "special id"))
    superwords = [i for i in range(len(vocab)) if i not in specials and is_superword(vocab[i])] \
        if tokenizer.model == "bpe" and tokenizer.units == "bytes" else []
    if superwords:
        findings.append(Finding("superwords", f"{len(superwords)} superword token(s) cross spaces "
                                f"({_shown([_visible(vocab[i].decode('utf-8', 'replace')) for i in superwords])}): "
                                "only a loader that runs this file's own pre-tokenizer produces them — merges.txt + "
                                "vocab.json (GPT-2 files) cannot hold them, since GPT-2 loaders cut text at spaces"))
    size = len(vocab)
    if size % 64:
        findings.append(Finding("vocab-multiple", f"the vocabulary size {size:,} is not a multiple of 64: model "
                                f"embeddings are padded to one ({(size + 63) // 64 * 64:,}), so the gap is dead rows; "
                                + ("extend again with --pad-to 64 (reserved special tokens <|reserved_N|> fill the "
                                   "gap; Pad vocabulary in the window)" if extension else "train to a multiple of 64")))
    if tokenizer.model == "bpe" and fmt in _LLAMA_CPP_FORMATS and tokenizer.pretokenizer not in LLAMA_CPP_PRESETS:
        pre = tokenizer.pretokenizer if len(tokenizer.pretokenizer) <= 40 else tokenizer.pretokenizer[:39] + "…"
        findings.append(Finding("llama-cpp", f"the pre-tokenizer “{pre}” is none of the regexes llama.cpp implements "
                                "(gpt2, cl100k = llama-bpe, o200k = gpt-4o): its GGUF converter will refuse this "
                                "tokenizer; train with one of those to convert it"))
    return findings


def _specials_in_text(tokens: list[str], texts: Iterable[str]) -> list[str]:
    found: list[str] = []
    read = 0
    for text in texts:
        for token in tokens:
            if token not in found and token in text:
                found.append(token)
        read += len(text)
        if read >= MAX_SCAN_BYTES or len(found) == len(tokens):
            break
    return found


def _corpus_texts(sources: Sequence) -> Iterable[str]:
    from workbench.corpus import iter_text

    for src in sources:
        if getattr(src, "kind", "") == "wordcounts":
            continue  # counted words, not running text: specials cannot be searched for there
        yield from iter_text(src)


#: The reachability rule audits the vocabulary itself (one encode per id: ~1 s for 64k ids) up to this
#: size; above it, only an audit's result given by the caller is used.
REACHABILITY_UP_TO = 65_536


def unreachable_ids(tokenizer: Tokenizer) -> list[int]:
    """Ids encoding never produces (the audit's reachability: decoded alone and after a space, the
    text encodes to something else)."""
    from workbench.core.audit import UNREACHABLE, reachability

    categories = reachability(tokenizer) or []
    return [i for i, category in enumerate(categories) if category == UNREACHABLE]


def check_run(project: str | Path, run_id: int | None, fmt: str, *,
              unreachable: Sequence[int] | None = None) -> tuple[int, list[Finding]]:
    """``(run id, warnings)`` for exporting a project's run (default: the latest usable one) as
    ``fmt``. The special-token rule reads the run's corpus files when they are still there (a
    missing one leaves that rule out, with a log line)."""
    from workbench.corpus.counts import corpus_sources
    from workbench.formats.export import refuse_unfit
    from workbench.store import ProjectStore
    from workbench.tasks.import_export import latest_usable_run

    with ProjectStore.open(project, readonly=True) as store:
        rid = run_id if run_id is not None else latest_usable_run(store)
        if rid is None:
            raise WorkbenchError(f"{project}: the project has no trained run yet: train one first")
        tokenizer = store.load_tokenizer(rid)
        # a format that does not fit is refused before any warning
        refuse_unfit(tokenizer, fmt, str(store.run(rid).settings.get("model") or tokenizer.model))
        extension = isinstance(store.run(rid).settings.get("extend"), dict)
        wanted = set(store.run(rid).corpus_ids)
        refs = [c for c in store.corpora() if c.id in wanted]
    if unreachable is None and len(tokenizer.vocab) <= REACHABILITY_UP_TO:
        unreachable = unreachable_ids(tokenizer)
    texts: Iterable[str] | None = None
    if tokenizer.special_tokens and refs:
        try:
            sources, _warnings = corpus_sources([(c.path, c.reader_options) for c in refs])
            texts = _corpus_texts(sources)
        except WorkbenchError as exc:
            _log.info("pre-export check: special tokens not searched in the corpus (%s)", exc)
    try:
        return rid, check_tokenizer(tokenizer, fmt, corpus_texts=texts, unreachable=unreachable, extension=extension)
    except WorkbenchError as exc:  # a corpus file that cannot be read any more mid-way
        _log.info("pre-export check: special tokens not searched in the corpus (%s)", exc)
        return rid, check_tokenizer(tokenizer, fmt, unreachable=unreachable, extension=extension)
