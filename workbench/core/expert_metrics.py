"""Distribution metrics of a tokenization, defined exactly: Rényi and Shannon efficiency, average
token rank and the Gini coefficient of per-language token cost.

Each is computed from numbers the one encoding pass already keeps (:class:`workbench.core
.corpus_metrics.TokenCounts`: every id's frequency), so none of them reads or encodes the text again,
and α or the |V| basis can change without re-counting (they are not part of any cache key because
nothing cached depends on them). Single-token retention needs per-word counts and is counted by
:class:`workbench.core.corpus_metrics.TokenMeter` itself.

Definitions (the ones ``tokenization-scorer`` uses, so its numbers and ours agree to 1e-9):

* p_i = f_i / Σ f over the ids that occur (f_i = occurrences of id i in the encoded text; an
  unknown token counts like any other id).
* **Shannon efficiency** = H(p) / log₂|V| with H(p) = −Σ p_i log₂ p_i.
* **Rényi efficiency** (Zouhar et al., ACL 2023) = H_α(p) / log₂|V| with
  H_α(p) = 1/(1−α) · log₂ Σ p_i^α; α = 1 is Shannon efficiency. The base of the logarithm cancels.
* **|V| basis**: ``declared`` is the vocabulary's size (every id, special tokens and an imported
  vocabulary's gaps included: the rows of the embedding table); ``observed`` is the number of
  distinct ids that occur (``tokenization-scorer``'s default when no ``vocab`` is given).
* **Average token rank**: the occurrence-weighted mean, over the tokens of the text, of each
  token's 1-based rank in the vocabulary's own order, counting only ordinary entries (no special
  tokens, no gaps): for BPE the rank is the position among base symbols then merges, as tiktoken
  calls its ids ranks; for Unigram it is the score order. Special tokens (``[UNK]``) are left out.
* **Gini** of per-language token cost over n languages with costs c: Σ_i Σ_j |c_i − c_j| / (2 n² mean c);
  0 when every language costs the same.

Left out: reading files, caching, display.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

DEFAULT_ALPHA = 2.5
BASES = ("declared", "observed")


def check_alpha(alpha: float) -> float:
    """α as given, or a one-line refusal naming the setting."""
    if not (isinstance(alpha, (int, float)) and math.isfinite(alpha) and alpha > 0):
        from workbench.errors import WorkbenchError

        raise WorkbenchError(f"Rényi α {alpha}: must be a positive number (2.5 is the usual choice; 1 is Shannon)")
    return float(alpha)


def check_basis(basis: str) -> str:
    if basis not in BASES:
        from workbench.errors import WorkbenchError

        raise WorkbenchError(f"|V| basis {basis!r}: choose 'declared' (the vocabulary's size) or 'observed' "
                             "(distinct ids that occur)")
    return basis


def _probabilities(frequencies: Iterable[int]) -> list[float]:
    freqs = [f for f in frequencies if f > 0]
    total = sum(freqs)
    return [f / total for f in freqs] if total else []


def basis_size(frequencies: Mapping[int, int], declared: int, basis: str) -> int:
    """|V| for the efficiencies: the declared size, or the distinct ids that occur."""
    return declared if basis == "declared" else sum(1 for f in frequencies.values() if f > 0)


def shannon_efficiency(frequencies: Iterable[int], vocab_size: int) -> float | None:
    """H(p) / log₂|V|; None without tokens or with |V| < 2 (log₂|V| would be 0)."""
    probs = _probabilities(frequencies)
    if not probs or vocab_size < 2:
        return None
    return -math.fsum(p * math.log2(p) for p in probs) / math.log2(vocab_size)


def renyi_efficiency(frequencies: Iterable[int], vocab_size: int, alpha: float = DEFAULT_ALPHA) -> float | None:
    """H_α(p) / log₂|V| (Zouhar et al. 2023); Shannon efficiency at α = 1."""
    if alpha == 1.0:
        return shannon_efficiency(frequencies, vocab_size)
    probs = _probabilities(frequencies)
    if not probs or vocab_size < 2:
        return None
    return math.log2(math.fsum(p ** alpha for p in probs)) / (1 - alpha) / math.log2(vocab_size)


def ordinary_ranks(counted: Sequence[bool]) -> list[int]:
    """Each id's 1-based rank among the ordinary entries (0 for special tokens and gaps)."""
    ranks, r = [], 0
    for ok in counted:
        if ok:
            r += 1
            ranks.append(r)
        else:
            ranks.append(0)
    return ranks


def average_token_rank(frequencies: Mapping[int, int], ranks: Sequence[int]) -> float | None:
    """Occurrence-weighted mean rank of the ordinary tokens of the text (None without any)."""
    total = weighted = 0
    for i, f in frequencies.items():
        r = ranks[i] if 0 <= i < len(ranks) else 0
        if r:
            total += f
            weighted += f * r
    return weighted / total if total else None


def gini(values: Sequence[float]) -> float | None:
    """Gini coefficient Σ_i Σ_j |x_i − x_j| / (2 n² mean); None for fewer than two values."""
    n = len(values)
    mean = math.fsum(values) / n if n else 0.0
    if n < 2 or mean <= 0:
        return None
    return math.fsum(abs(a - b) for a in values for b in values) / (2 * n * n * mean)


# The tooltip of each column and the paragraph of docs/metrics.md (a test holds them equal):
# definition, paper, and what was found for and against it.
METRIC_NOTES: dict[str, str] = {
    "Rényi efficiency": (
        "H_α(p) / log₂|V|, with p the share of each id among the tokens of the text and "
        "H_α(p) = 1/(1−α) · log₂ Σ p_i^α (α 2.5 unless set; |V| the declared vocabulary or the ids that occur, "
        "as stated beside it). Zouhar et al., 'Tokenization and the Noiseless Channel', ACL 2023: at α 2.5 it "
        "correlated with BLEU across tokenizers for machine translation better than compressed length did. "
        "Caveat: Cognetta et al. (2024, 'Two Counterexamples to Tokenization and the Noiseless Channel') built "
        "tokenizers that raise it while BLEU falls — it can be gamed, and it says nothing about sequence length."),
    "Shannon efficiency": (
        "H(p) / log₂|V| with H(p) = −Σ p_i log₂ p_i over the ids of the text (Rényi efficiency at α = 1). "
        "Zouhar et al. (ACL 2023) report it as the α = 1 case and found it a weaker predictor of BLEU than α 2.5. "
        "Caveat: a tokenizer that spreads its tokens evenly over a small vocabulary scores high whatever the "
        "sequence length; read it beside tokens and chars/token."),
    "single-token retention": (
        "Share of the text's whitespace-separated words (str.split(); every occurrence counted, where a word "
        "list would count each word once) that the "
        "tokenizer encodes, each word on its own, as exactly one token. Nayeem et al., 'Beyond Fertility: "
        "Analyzing STRR as a Metric for Multilingual Tokenization Evaluation' (2025) propose it to show which "
        "languages a vocabulary serves with whole words. Caveat: not yet tied to downstream quality; it rises "
        "with |V| alone, and for scripts written without spaces (Chinese, Japanese, Thai) a 'word' is a whole "
        "phrase, so it is near 0 there by definition; punctuation standing alone between spaces ('--', '%') "
        "counts as a word, usually kept whole."),
    "average token rank": (
        "Mean, over the tokens of the text, of each token's 1-based rank in the vocabulary's own order, "
        "counting only ordinary entries (no special tokens, no gaps): for BPE the position among base symbols "
        "then merges (what tiktoken calls a rank), for Unigram the score order. Low: the text is made of "
        "early, frequent entries; high: it reaches into the late merges. Caveat: a diagnostic of domain fit, "
        "not a quality score from a study; comparable only between tokenizers whose order means the same "
        "(not BPE against Unigram or WordPiece)."),
    "Gini (language cost)": (
        "Gini coefficient of one tokenizer's token cost over the languages of the files: Σ_i Σ_j |c_i − c_j| / "
        "(2 n² mean c), 0 when every language costs the same. The cost c is tokens when the files are "
        "translations of each other (the tokenization premium of Petrov et al., NeurIPS 2023), else tokens "
        "per character. Used to summarise cross-language parity in parity-aware BPE (Foroutan et al. 2025). "
        "Caveat: on non-parallel text it also measures how the texts differ; and it falls when every language "
        "gets equally expensive, so read it beside the tokens."),
}
