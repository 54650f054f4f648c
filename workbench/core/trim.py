"""Remove vocabulary entries from a BPE tokenizer safely: the cascade, ids kept or renumbered.

Removing a token must remove what depends on it, or the tokenizer ships merges that name a missing
id (the hand-spliced merge lists of the issue trackers). The **cascade**:

* merge list (``pairs``, GPT-2 / Hugging Face / our runs): every merge that uses a removed token as
  a part, or makes one, is dropped, and a token no remaining merge makes is removed in turn —
  one pass in rank order, since a merge's parts are made by earlier merges;
* tiktoken's rule (``bytes``): a token is made by whatever its own bytes merge into, so a token
  whose derivation went through a removed one is derived again with what is left
  (:func:`workbench.core.audit.derivations`); if no derivation is left it is removed, and so on.

After either, every remaining merge-made token is checked to still be producible from its own
bytes (nothing unreachable is kept). Base symbols (bytes, a character alphabet) and special tokens
are never removed: every text needs the first, and the second are not vocabulary the corpus
produces. Ids are kept by default (a removed id becomes an empty slot, as imported vocabularies
with gaps have); ``compact`` renumbers the kept ids densely in their old order.

**WordPiece and Unigram** encode by longest match and by Viterbi over the pieces, not by merges:
removing a piece never leaves another unproducible, so there is no cascade (a run's merge records
that name a removed piece are dropped: they are history, inference does not read them). Their
spelling symbols stay — single characters (WordPiece ``x`` and ``##x``, a Unigram character),
byte pieces and specials — so every text still encodes. Ids are kept here too by default: the
exporters write an empty slot as a placeholder no text produces (``[unusedN]`` in ``vocab.txt``,
an UNUSED piece in a ``.model``); a Unigram model's other scores are left as they are.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable, Sequence

from workbench.core.audit import derivations, supports_residues, token_kind
from workbench.core.model import Tokenizer
from workbench.errors import WorkbenchError


@dataclass(frozen=True)
class TrimPlan:
    """What a trim removes and the tokenizer it leaves."""

    requested: tuple[int, ...]  # ids asked for (after refusing none: see plan_trim)
    cascade: tuple[int, ...]  # ids removed because they depended on a requested one
    dropped_merges: int  # merges of the original list no longer present
    tokenizer: Tokenizer
    id_map: tuple[tuple[int, int], ...]  # (old id, new id) for every kept id
    compact: bool

    @property
    def removed(self) -> tuple[int, ...]:
        return tuple(sorted({*self.requested, *self.cascade}))


def check_ids(tok: Tokenizer, ids: Iterable[int]) -> list[int]:
    """The ids, checked: in range, not empty, not special, not a base symbol (one clear reason)."""
    size = len(tok.vocab)
    ids = list(ids)
    for token_id in ids:  # out of range first: the likeliest typo, whatever else the list holds
        if not 0 <= token_id < size:
            raise WorkbenchError(f"id {token_id} is out of range: this tokenizer's ids are 0 to {size - 1}")
    out = []
    for token_id in ids:
        if token_id in tok.special_ids:
            raise WorkbenchError(f"id {token_id} is a special token: trim removes vocabulary entries, not specials")
        if not tok.vocab[token_id]:
            raise WorkbenchError(f"id {token_id} is an empty slot already: nothing to remove")
        if pieces(tok) and spelling_symbol(tok, token_id):
            raise WorkbenchError(f"id {token_id} is a single character or byte piece: every text may need it to "
                                 "be spelled, so it stays (remove longer pieces)")
        if not pieces(tok) and token_kind(tok, token_id) == "base":
            raise WorkbenchError(f"id {token_id} is a base symbol: every text may need it, so it stays "
                                 "(remove merge-made tokens)")
        out.append(token_id)
    return sorted(set(out))


def pieces(tok: Tokenizer) -> bool:
    """Whether ``tok`` encodes by its pieces alone (WordPiece, Unigram): no cascade to follow."""
    return tok.model in ("wordpiece", "unigram")


def spelling_symbol(tok: Tokenizer, token_id: int) -> bool:
    """A WordPiece/Unigram piece every text may need: one character (``x``, ``##x``) or a byte piece."""
    from workbench.core.unigram import byte_block

    if tok.model == "unigram" and tok.byte_fallback and token_id in set(byte_block(tok) or ()):
        return True
    text = tok.vocab[token_id].decode("utf-8", "replace")
    if tok.model == "wordpiece":
        prefix = tok.continuing_prefix or "##"
        if text.startswith(prefix) and len(text) > len(prefix):
            text = text[len(prefix):]
    return len(text) <= 1


def removable(tok: Tokenizer, ids: Iterable[int]) -> list[int]:
    """The merge-made (WordPiece/Unigram: longer than a character), non-special ids among ``ids``
    (what a filter may remove)."""
    if pieces(tok):
        return [i for i in ids if 0 <= i < len(tok.vocab) and tok.vocab[i] and i not in tok.special_ids
                and not spelling_symbol(tok, i)]
    return [i for i in ids if 0 <= i < len(tok.vocab) and tok.vocab[i] and i not in tok.special_ids
            and token_kind(tok, i) == "merge"]


def _plan_pieces(tok: Tokenizer, ids: Sequence[int], compact: bool) -> TrimPlan:
    """WordPiece / Unigram: the pieces asked for become empty slots; no cascade (module docstring)."""
    requested = check_ids(tok, ids)
    gone = set(requested)
    vocab = [b"" if i in gone else piece for i, piece in enumerate(tok.vocab)]
    merges = tuple(m for m in tok.merges if not gone.intersection(m))
    trimmed = replace(tok, vocab=tuple(vocab), merges=merges)
    id_map = tuple((i, i) for i in range(len(vocab)) if vocab[i] or i in tok.special_ids)
    if compact:
        trimmed, id_map = _compacted(trimmed, id_map)
    return TrimPlan(tuple(requested), (), len(tok.merges) - len(merges), trimmed, id_map, compact)


def plan_trim(tok: Tokenizer, ids: Sequence[int], *, compact: bool = False) -> TrimPlan:
    """Remove ``ids`` and their cascade; raises :class:`WorkbenchError` for ids trim cannot take."""
    if pieces(tok):
        return _plan_pieces(tok, ids, compact)
    if not supports_residues(tok):
        raise WorkbenchError(f"trim works on BPE tokenizers with merges applied while encoding; this one is "
                             f"{tok.model}" + (" (SentencePiece BPE)" if tok.model == "bpe" else ""))
    requested = check_ids(tok, ids)
    gone = set(requested)
    vocab = list(tok.vocab)
    before = derivations(tok)
    assert before is not None
    if tok.merge_rule == "bytes":
        derived = _cascade_ranks(tok, gone, before)
        while True:  # the safety net: every merge-made token left is derived by what is left
            for token_id in gone:
                vocab[token_id] = b""
            full = derivations(replace(tok, vocab=tuple(vocab), merges=()))
            assert full is not None
            lost = {i for i in derived if i not in gone and i not in full}
            if not lost:
                derived = {i: full[i] for i in derived if i not in gone}
                break
            gone.update(lost)
        merges = [(a, b, n) for n, (a, b) in sorted(derived.items())]
    else:
        merges = _cascade_pairs(tok, gone)
        # Nothing unreachable stays: a token whose own merge went but another merge of the same
        # piece remains (a duplicate in an imported list) must still be producible; else it goes.
        while True:
            kept = set(merges)
            doubtful = [i for i, (a, b) in before.items() if i not in gone and (a, b, i) not in kept]
            if not doubtful:
                break
            for token_id in gone:
                vocab[token_id] = b""
            probe = derivations(replace(tok, vocab=tuple(vocab), merges=tuple(merges)), only=doubtful)
            assert probe is not None
            lost = {i for i in doubtful if i not in probe}
            before = {**before, **{i: probe[i] for i in doubtful if i in probe}}
            if not lost:
                break
            gone.update(lost)
            merges = [m for m in merges if not ({m[0], m[1], m[2]} & gone)]
    for token_id in gone:
        vocab[token_id] = b""
    trimmed = replace(tok, vocab=tuple(vocab), merges=tuple(merges))
    dropped = len(before) - len(trimmed.merges) if tok.merge_rule == "bytes" else len(tok.merges) - len(merges)
    id_map = tuple((i, i) for i in range(len(vocab)) if vocab[i] or i in tok.special_ids)
    if compact:
        trimmed, id_map = _compacted(trimmed, id_map)
    cascade = tuple(sorted(gone - set(requested)))
    return TrimPlan(tuple(requested), cascade, dropped, trimmed, id_map, compact)


def _cascade_pairs(tok: Tokenizer, gone: set[int]) -> list[tuple[int, int, int]]:
    kept: list[tuple[int, int, int]] = []
    made: set[int] = set()
    for left, right, new in tok.merges:
        if left in gone or right in gone or new in gone:
            continue
        kept.append((left, right, new))
        made.add(new)
    # A token whose every merge was dropped is made by nothing: removed, and what uses it after it.
    orphans = {new for _a, _b, new in tok.merges if new not in made and new not in gone}
    while orphans:
        gone.update(orphans)
        kept = [m for m in kept if not ({m[0], m[1], m[2]} & gone)]
        made = {new for _a, _b, new in kept}
        orphans = {new for _a, _b, new in tok.merges if new not in made and new not in gone}
    return kept


def _cascade_ranks(tok: Tokenizer, gone: set[int],
                   before: dict[int, tuple[int, int]]) -> dict[int, tuple[int, int]]:
    """tiktoken's rule: re-derive every token whose derivation used a removed one, until stable;
    returns the derivations left. A token untouched keeps its derivation: removing a token that
    never formed while its bytes were merged changes nothing there. (Tokens unreachable from the
    start are not the trim's doing: the audit reports them, and they stay unless asked for.)"""
    derived = dict(before)
    users: dict[int, list[int]] = {}
    for token_id, (left, right) in before.items():
        users.setdefault(left, []).append(token_id)
        users.setdefault(right, []).append(token_id)
    vocab = list(tok.vocab)
    frontier = set(gone)
    while frontier:
        for token_id in frontier:
            vocab[token_id] = b""
        affected = {u for g in frontier for u in users.get(g, ()) if u not in gone}
        # every token whose tree reaches a removed one, not only its direct users
        stack = list(affected)
        while stack:
            for u in users.get(stack.pop(), ()):
                if u not in affected and u not in gone:
                    affected.add(u)
                    stack.append(u)
        if not affected:
            break
        probe = derivations(replace(tok, vocab=tuple(vocab), merges=()), only=affected)
        assert probe is not None
        derived.update(probe)
        for token_id, (left, right) in probe.items():  # a new derivation: its new parts have a new user
            users.setdefault(left, []).append(token_id)
            users.setdefault(right, []).append(token_id)
        frontier = {u for u in affected if u not in probe}
        gone.update(frontier)
    for token_id in gone:
        derived.pop(token_id, None)
    return derived


def _compacted(tok: Tokenizer, id_map: tuple[tuple[int, int], ...]) -> tuple[Tokenizer, tuple[tuple[int, int], ...]]:
    new_of = {old: new for new, (old, _same) in enumerate(id_map)}
    vocab = tuple(tok.vocab[old] for old, _same in id_map)
    merges = tuple((new_of[a], new_of[b], new_of[n]) for a, b, n in tok.merges)
    specials = {name: new_of[i] for name, i in tok.special_tokens.items()}
    scores = tuple(tok.scores[old] for old, _same in id_map) if tok.scores else ()
    out = replace(tok, vocab=vocab, merges=merges, special_tokens=specials, scores=scores)
    return out, tuple((old, new_of[old]) for old, _same in id_map)
