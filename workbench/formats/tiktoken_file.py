"""tiktoken ``.tiktoken`` rank files, read and written, plus our JSON sidecar.

Layout (what ``tiktoken.load.load_tiktoken_bpe`` parses): one ``base64(token) rank`` per line; the
rank is the token id and the merge priority. The file holds neither the split pattern nor the
special tokens, so:

* reading recognises the public OpenAI files by SHA-256 and restores their pattern and specials;
  otherwise it uses the sidecar ``PATH.json`` we write on export; otherwise the caller's pattern,
  or the GPT-2 pattern with a note saying so;
* writing puts ``name``, ``pat_str``, ``special_tokens`` (what ``tiktoken.Encoding`` needs) and our
  own settings in that sidecar.

Imported tokenizers keep ``merge_rule="bytes"`` (tiktoken's rule); the merge list is recovered
from the ranks (:mod:`workbench.formats.recover`) for the merge browser. Left out: the older
GPT-2 "data gym" pair, which :mod:`workbench.formats.gpt2_files` reads instead.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Iterator, Sequence
from functools import partial
from pathlib import Path

from workbench.core.model import Tokenizer
from workbench.core.normalize import parse_normalizer
from workbench.core.pretokenize import PRESET_PATTERNS, make_pretokenizer
from workbench.errors import WorkbenchError
from workbench.formats.common import assemble_vocab, check_id_range, load_json, read_bytes
from workbench.formats.recover import recover_merges

ENDOFTEXT = "<|endoftext|>"
FIM_PREFIX = "<|fim_prefix|>"
FIM_MIDDLE = "<|fim_middle|>"
FIM_SUFFIX = "<|fim_suffix|>"
ENDOFPROMPT = "<|endofprompt|>"

# SHA-256 of the public files, as pinned in tiktoken_ext/openai_public.py (expected_hash).
KNOWN_FILES: dict[str, dict] = {
    "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930": {
        "name": "r50k_base", "pretokenizer": "gpt2", "special_tokens": {ENDOFTEXT: 50256},
    },
    "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069": {
        "name": "p50k_base", "pretokenizer": "gpt2", "special_tokens": {ENDOFTEXT: 50256},
    },
    "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7": {
        "name": "cl100k_base",
        "pretokenizer": "cl100k",
        "special_tokens": {
            ENDOFTEXT: 100257, FIM_PREFIX: 100258, FIM_MIDDLE: 100259, FIM_SUFFIX: 100260, ENDOFPROMPT: 100276,
        },
    },
    "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d": {
        "name": "o200k_base", "pretokenizer": "o200k", "special_tokens": {ENDOFTEXT: 199999, ENDOFPROMPT: 200018},
    },
}

SIDECAR_FORMAT = "workbench-tiktoken-sidecar"
# tiktoken needs some pattern; "none" (the whole text is one piece) spelled as a regex.
WHOLE_TEXT_PATTERN = r"[\s\S]+"


def sidecar_path(path: Path) -> Path:
    """``X.tiktoken`` → ``X.tiktoken.json``."""
    return path.with_name(path.name + ".json")


def tiktoken_pattern(pretokenizer: str) -> str:
    """The ``pat_str`` tiktoken runs for one of our pre-tokenizer specs."""
    pre = make_pretokenizer(pretokenizer)
    if pre.name == "metaspace":
        raise WorkbenchError(
            "tiktoken cannot express the metaspace pre-tokenizer (it replaces spaces with ▁ before splitting)"
        )
    if pre.pattern is None:
        return WHOLE_TEXT_PATTERN
    if pre.name == "custom":
        _refuse_uncovering_pattern(pre)
    return pre.pattern


# Text a custom pattern is probed on before a tiktoken export (letters, digits, punctuation,
# spaces, line breaks, non-Latin scripts).
_PROBE = "Hello, world! It's 2024-06-01.\n\tÜber 数字 123 — x_y  z\r\n"


def _refuse_uncovering_pattern(pre) -> None:
    """tiktoken drops text its pattern does not match (and its Rust core panics on an empty
    match), while our custom pre-tokenizer keeps such text as its own pieces: refuse the export
    rather than write a file that encodes differently or crashes its loader."""
    compiled = pre.compiled()
    empty = compiled.search("") is not None or any(m.start() == m.end() for m in compiled.finditer(_PROBE))
    covered = sum(b - a for a, b in ((m.start(), m.end()) for m in compiled.finditer(_PROBE)))
    if empty or covered < len(_PROBE):
        why = "matches empty strings" if empty else "skips text"
        raise WorkbenchError(
            f"the custom pre-tokenizer {pre.pattern!r} {why}; tiktoken would drop that text (the workbench keeps it): "
            "export as hf instead, or train with a pattern that covers all text"
        )


def parse_ranks(data: bytes, source: str) -> dict[bytes, int]:
    """Parse rank lines, refusing a malformed line by number (tiktoken's own loader only says
    which line text failed, and accepts duplicate ranks silently).

    A well-formed file takes the fast path (one dict comprehension, as tiktoken's loader, then
    whole-table checks); anything odd falls back to the line-by-line parse that names the line.
    """
    ranks = _parse_ranks_fast(data)
    if ranks is not None:
        return ranks
    return _parse_ranks_checked(data, source)


# The whole file as well-formed rank lines: base64, one space, a rank; LF or CRLF endings.
_WELL_FORMED = re.compile(rb"(?:[A-Za-z0-9+/=]+ [0-9]+\r?\n)*(?:[A-Za-z0-9+/=]+ [0-9]+\r?)?")


def _parse_ranks_fast(data: bytes) -> dict[bytes, int] | None:
    """The ranks of a well-formed file, or None when any check fails (the slow path then says why).

    Once the file matches :data:`_WELL_FORMED`, ``data.split()`` alternates token, rank exactly, so
    decoding runs in C (``map``) instead of a Python loop over 100k lines.
    """
    if _WELL_FORMED.fullmatch(data) is None:
        return None
    fields = data.split()
    try:
        decode = partial(binascii.a2b_base64, strict_mode=True)  # type: ignore[call-arg]  # 3.11+
        tokens = list(map(decode, fields[0::2]))
    except (ValueError, binascii.Error, TypeError):  # TypeError: Python 3.10 has no strict_mode
        return None
    ranks = dict(zip(tokens, map(int, fields[1::2])))
    # As many distinct tokens and distinct ranks as lines, and no empty token: the rules the
    # checked parse enforces line by line, enforced for the whole table at once.
    if not ranks or len(ranks) != len(tokens) or len(set(ranks.values())) != len(tokens) or b"" in ranks:
        return None
    return ranks


def _parse_ranks_checked(data: bytes, source: str) -> dict[bytes, int]:
    ranks: dict[bytes, int] = {}
    seen_rank: dict[int, int] = {}
    for number, line in enumerate(data.split(b"\n"), start=1):
        line = line.rstrip(b"\r")
        if not line.strip():
            continue
        fields = line.split()
        if len(fields) != 2:
            raise WorkbenchError(
                f"{source} line {number}: expected a base64 token and a rank separated by one space"
            )
        try:
            token = base64.b64decode(fields[0], validate=True)
        except (binascii.Error, ValueError):
            shown = fields[0][:40].decode("ascii", "replace")
            raise WorkbenchError(f"{source} line {number}: {shown!r} is not valid base64") from None
        try:
            if len(fields[1]) > 19:  # int() of thousands of digits is slow, then refused
                raise ValueError
            rank = int(fields[1])
        except ValueError:
            shown = fields[1][:20].decode("ascii", "replace")
            raise WorkbenchError(f"{source} line {number}: rank {shown!r} is not a whole number") from None
        if rank < 0:
            raise WorkbenchError(f"{source} line {number}: rank {rank} is negative")
        if not token:
            raise WorkbenchError(f"{source} line {number}: empty token")
        if token in ranks:
            raise WorkbenchError(f"{source} line {number}: token {token!r} already listed with rank {ranks[token]}")
        if rank in seen_rank:
            raise WorkbenchError(f"{source} line {number}: rank {rank} already used on line {seen_rank[rank]}")
        ranks[token] = rank
        seen_rank[rank] = number
    if not ranks:
        raise WorkbenchError(f"{source}: no ranks found: is this a .tiktoken file?")
    check_id_range(ranks.values(), len(ranks), source, what="rank")
    return ranks


def read_tiktoken(path: Path, pattern: str | None = None) -> tuple[Tokenizer, list[str]]:
    """Load ``path`` as a :class:`Tokenizer` (``merge_rule="bytes"``) plus notes for the user."""
    path = Path(path)
    data = read_bytes(path)
    ranks = parse_ranks(data, path.name)
    notes: list[str] = []
    digest = hashlib.sha256(data).hexdigest()
    known = KNOWN_FILES.get(digest)
    normalizer: tuple[str, ...] = ()
    end_of_word = ""
    unk = None
    if known is not None:
        name = known["name"]
        pretokenizer = known["pretokenizer"]
        specials = dict(known["special_tokens"])
        notes.append(f"recognised {name} by SHA-256: pre-tokenizer {pretokenizer}, {len(specials)} special tokens")
        if pattern is not None:
            notes.append("ignored the given pattern: the public file's own pattern applies")
    elif sidecar_path(path).exists():
        side = _read_sidecar(sidecar_path(path))
        name, pretokenizer, specials, normalizer, end_of_word, unk = _sidecar_settings(side, sidecar_path(path).name)
        notes.append(f"settings from {sidecar_path(path).name}")
    else:
        name = path.stem
        specials = {}
        if pattern is None:
            pretokenizer = "gpt2"
            notes.append(
                f"{path.name} is not a known public file and has no {sidecar_path(path).name}: "
                "assumed the GPT-2 pre-tokenizer and no special tokens (pass a pattern to choose another)"
            )
        else:
            pretokenizer = pattern
    pretokenizer = make_pretokenizer(pretokenizer).spec()
    missing = [b for b in range(256) if bytes([b]) not in ranks]
    if missing:
        notes.append(f"{len(missing)} of the 256 single bytes have no rank: text containing them cannot be encoded")
    merges: Sequence[tuple[int, int, int]]
    if known is not None:
        # The public files are known to be fully explained by their merges, and encoding them
        # (merge_rule "bytes") needs only the ranks: recover the 100k+ merges when first asked
        # for (merge browser, export), not on every open — most of the time of an open.
        merges = LazyMerges(ranks)
    else:
        recovered, unexplained = recover_merges(ranks)
        merges = tuple(recovered)
        if unexplained:
            notes.append(f"{len(unexplained)} tokens are not the merge of two lower-ranked tokens (first id {unexplained[0]})")
    pieces = {rank: token for token, rank in ranks.items()}
    for special, sid in specials.items():
        if sid in pieces:
            raise WorkbenchError(f"{path.name}: special token {special!r} id {sid} is also the rank of {pieces[sid]!r}")
    vocab = assemble_vocab(pieces, specials, path.name)
    tokenizer = Tokenizer(
        vocab=vocab,
        merges=merges,  # type: ignore[arg-type]  # a LazyMerges reads as the tuple it stands for
        units="bytes",
        pretokenizer=pretokenizer,
        normalizer=normalizer,
        special_tokens=specials,
        end_of_word=end_of_word,
        name=name,
        unk_token=unk,
        merge_rule="bytes",
    )
    return tokenizer, notes


class LazyMerges(Sequence):
    """The merge list of a rank file, recovered (:func:`recover_merges`) on first use.

    Reads like the tuple it stands for — ``len``, indexing, slicing (a tuple), iteration, ``==``
    against a tuple, hashing — so ``Tokenizer.merges`` users need not know. Pickles as the tuple.
    """

    #: What :func:`~workbench.formats.common.validate_tokenizer` checks of a merge list holds here
    #: by construction (each merge is two lower ranks whose bytes join to a rank's bytes; ids are
    #: ranks; the reader refuses a special id that is also a rank), so validating does not recover
    #: the 100k merges an open does not need.
    valid_by_construction = True

    def __init__(self, ranks: dict[bytes, int]):
        self._ranks: dict[bytes, int] | None = ranks
        self._merges: tuple[tuple[int, int, int], ...] | None = None

    def _all(self) -> tuple[tuple[int, int, int], ...]:
        if self._merges is None:
            assert self._ranks is not None
            self._merges = tuple(recover_merges(self._ranks)[0])
            self._ranks = None
        return self._merges

    def __len__(self) -> int:
        return len(self._all())

    def __getitem__(self, index):
        return self._all()[index]

    def __iter__(self) -> Iterator[tuple[int, int, int]]:
        return iter(self._all())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (LazyMerges, tuple, list)):
            return self._all() == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._all())

    def __reduce__(self):
        return (tuple, (self._all(),))

    def __repr__(self) -> str:
        state = f"{len(self._merges)} merges" if self._merges is not None else "not recovered yet"
        return f"LazyMerges({state})"


def _read_sidecar(path: Path) -> dict:
    side = load_json(read_bytes(path), path.name, "sidecar JSON")
    if not isinstance(side, dict) or not isinstance(side.get("pat_str"), str):
        raise WorkbenchError(f"{path.name}: expected an object with a \"pat_str\" string: fix or delete the sidecar")
    return side


def _sidecar_settings(side: dict, source: str) -> tuple[str, str, dict[str, int], tuple[str, ...], str, str | None]:
    """``(name, pretokenizer, specials, normalizer, end_of_word, unk_token)`` from a sidecar, every
    field checked: a sidecar that imported "successfully" with a broken field used to make every
    later encode of the stored reference crash."""
    def bad(field: str, expected: str) -> WorkbenchError:
        return WorkbenchError(f"{source}: \"{field}\" must be {expected}: fix or delete the sidecar")

    name = side.get("name")
    if name is not None and not isinstance(name, str):
        raise bad("name", "a string")
    settings = side.get("workbench")
    if settings is None:
        settings = {}
    if not isinstance(settings, dict):
        raise bad("workbench", "an object of settings")
    pretokenizer = settings.get("pretokenizer") or side["pat_str"]
    if not isinstance(pretokenizer, str):
        raise bad("workbench.pretokenizer", "a string")
    if pretokenizer != "none" and side["pat_str"] == WHOLE_TEXT_PATTERN:
        pretokenizer = "none"
    raw_specials = side.get("special_tokens")
    if raw_specials is None:
        raw_specials = {}
    if not isinstance(raw_specials, dict) or not all(
            isinstance(k, str) and k and isinstance(v, int) and not isinstance(v, bool) for k, v in raw_specials.items()):
        raise bad("special_tokens", "an object of token → whole-number id")
    normalizer = settings.get("normalizer") or ()
    if not isinstance(normalizer, (list, tuple)) or not all(isinstance(n, str) for n in normalizer):
        raise bad("workbench.normalizer", "a list of normalizer names")
    end_of_word = settings.get("end_of_word") or ""
    if not isinstance(end_of_word, str):
        raise bad("workbench.end_of_word", "a string")
    unk = settings.get("unk_token")
    if unk is not None and not isinstance(unk, str):
        raise bad("workbench.unk_token", "a string or null")
    return (name or Path(source).stem.removesuffix(".tiktoken"), pretokenizer, dict(raw_specials),
            parse_normalizer(tuple(normalizer)), end_of_word, unk or None)


def render_tiktoken(tokenizer: Tokenizer, name: str) -> tuple[bytes, bytes, list[str]]:
    """``(ranks file, sidecar JSON, notes)``. Ranks are our ids: tiktoken merges by rank, so ids
    must follow merge order, which they do for trained runs and imported rank files."""
    if tokenizer.units != "bytes":
        from workbench.formats.export import formats_for

        fitting = ", ".join(formats_for(tokenizer.model, tokenizer.settings())) or "none"
        raise WorkbenchError(
            f"tiktoken files hold byte-level tokens; this tokenizer works on characters: export it as {fitting}"
        )
    pat_str = tiktoken_pattern(tokenizer.pretokenizer)
    notes: list[str] = []
    specials = dict(tokenizer.special_tokens)
    special_ids = set(specials.values())
    seen: dict[bytes, int] = {}
    lines: list[bytes] = []
    for token_id, piece in enumerate(tokenizer.vocab):
        if token_id in special_ids or not piece:
            continue
        if piece in seen:
            raise WorkbenchError(
                f"ids {seen[piece]} and {token_id} are both {piece!r}: a .tiktoken file needs each token once "
                "(export as hf or gpt2 instead)"
            )
        seen[piece] = token_id
        lines.append(base64.b64encode(piece) + b" " + str(token_id).encode("ascii") + b"\n")
    missing = [b for b in range(256) if bytes([b]) not in seen]
    if missing:
        raise WorkbenchError(
            f"{len(missing)} single bytes (first 0x{missing[0]:02X}) have no id: tiktoken needs all 256"
        )
    for special in specials:
        if special.encode("utf-8") in seen:
            raise WorkbenchError(f"special token {special!r} is also an ordinary piece: tiktoken needs them distinct")
    if tokenizer.normalizer:
        notes.append(
            f"tiktoken applies no normalizer: normalize text ({','.join(tokenizer.normalizer)}) before encoding"
        )
    sidecar = {
        "format": SIDECAR_FORMAT,
        "version": 1,
        "name": name,
        "pat_str": pat_str,
        "special_tokens": specials,
        "workbench": tokenizer.settings(),
        "usage": "tiktoken.Encoding(name=..., pat_str=..., "
        "mergeable_ranks=tiktoken.load.load_tiktoken_bpe(PATH), special_tokens=...); "
        "set TIKTOKEN_CACHE_DIR='' when PATH may be overwritten: tiktoken caches files by path",
    }
    side_bytes = (json.dumps(sidecar, ensure_ascii=False, indent=2) + "\n").encode("utf-8")
    return b"".join(lines), side_bytes, notes


def preset_of_pattern(pat_str: str) -> str:
    """Map a tiktoken ``pat_str`` back to our preset name when it is one of them."""
    for preset, pattern in PRESET_PATTERNS.items():
        if pattern == pat_str:
            return preset
    return "none" if pat_str == WHOLE_TEXT_PATTERN else pat_str
