"""One descriptor per model family: what the CLI, the Train form, ``RunSpec`` and training all read.

A :class:`ModelFamily` says, for BPE, WordPiece and Unigram: the defaults a run gets when the user
does not say (``RunSpec`` fills them in :meth:`~workbench.tasks.spec.RunSpec.validate`, so a JSON
spec gets its own family's defaults, not BPE's), which of the common settings apply (the others are
refused when given with a value other than the family's own, and hidden in the form), the model's
own options with their bounds (:class:`ModelOption`: the CLI makes a flag of each, the form a
control), how its trainer is made (:attr:`ModelFamily.trainer`), what one training step counts and
how progress and the ETA are told (:class:`ProgressRule`), and — filled by the export layer — the
formats its runs export to.

Adding a model family is one :class:`ModelFamily` here, one trainer in ``core`` (the
:class:`~workbench.core.trainer.Trainer` interface) and its inference in ``core/encoder.py``.

Left out: validation of values (:meth:`RunSpec.validate`), how each front end lays out controls.
"""

from __future__ import annotations

import math
from collections import Counter
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Literal, Mapping, Sequence

from workbench.core import special_roles as _special_roles
from workbench.errors import ConfigError, WorkbenchError

if TYPE_CHECKING:
    from workbench.core.trainer import Trainer
    from workbench.tasks.spec import RunSpec

#: The settings every RunSpec has that a family may or may not use (the rest — vocabulary size,
#: normalizer, special tokens, name — apply to every family).
#: Special-token roles and post-processor templates (workbench.core.special_roles), for the front ends.
ROLES = _special_roles.ROLES
TEMPLATES = _special_roles.TEMPLATES

COMMON_SETTINGS = ("units", "end_of_word", "merges", "tie_break", "min_frequency", "sequences", "pretokenizer")


@dataclass(frozen=True)
class ModelOption:
    """One model-specific setting: its type, default, allowed values and a line of help.

    ``config`` names the field of the core trainer's config it sets (default: the same name), so a
    new option is this one entry plus that field: the CLI flag, the form control, the JSON spec and
    the trainer all follow from it.
    """

    name: str
    type: type  # bool, int, float or str
    default: Any
    help: str
    choices: tuple[Any, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    config: str = ""
    title: str = ""  # the form's label, when the name does not read well capitalised

    @property
    def label(self) -> str:
        return self.title or self.name.replace("_", " ").capitalize()

    @property
    def config_field(self) -> str:
        return self.config or self.name


@dataclass(frozen=True)
class ProgressRule:
    """What one training step counts, and how progress is told (CLI line, progress bar, ETA).

    ``measure="merges"``: a step is a merge; the target (merges to make) is known when training
    starts; the bar is step / target and the ETA follows the merges (:class:`EtaEstimator`).
    ``measure="vocabulary"``: a step is an EM round or a pruning step and their number is not known
    in advance; what advances is the vocabulary size, falling from the seed size to the target.
    Each pruning step removes about the same share, so the bar is the share of the way on a log
    scale, and the ETA is estimated on that share (per mille) instead of on steps.
    """

    measure: Literal["merges", "vocabulary"]
    phase: str  # what training is doing, for a person: "merging", "EM rounds and pruning"
    preparing: str  # what building the trainer does (before the first step)

    def fraction(self, step: int, target: int, vocab: int, first_vocab: int, goal: int) -> float | None:
        """How far the run is, 0…1 (None when nothing says yet)."""
        if self.measure == "merges":
            return min(step, target) / target if target > 0 else None
        if goal and first_vocab > goal and vocab:
            share = math.log(first_vocab / max(vocab, goal)) / math.log(first_vocab / goal)
            return min(max(share, 0.0), 1.0)
        return None

    def eta_position(self, step: int, target: int, vocab: int, first_vocab: int, goal: int) -> tuple[int, int]:
        """(position, end) for the ETA estimator: merges of the target, or per mille of the way."""
        if self.measure == "merges":
            return step, target
        share = self.fraction(step, target, vocab, first_vocab, goal)
        return (round(1000 * share) if share is not None else 0), 1000

    def started_line(self, run_id: int, target: int, vocab: int, goal: int) -> str:
        if self.measure == "merges":
            return f"run {run_id}: training {target:,} merges"
        return f"run {run_id}: {self.phase} from {vocab:,} seed pieces down to {goal:,}"

    def step_line(self, step: int, target: int, vocab: int, goal: int, rate: float, eta: str) -> str:
        if self.measure == "merges":
            return f"merge {step:,}/{target:,}  vocab {vocab:,}  {rate:,.0f} merges/s{eta}"
        return f"{self.phase}: step {step:,}  vocab {vocab:,} → {goal:,}{eta}"

    def bar_text(self, step: int, target: int, vocab: int, goal: int) -> str:
        if self.measure == "merges":
            return f"{step:,} / {target:,} merges"
        return f"step {step:,} · |V| {vocab:,}" + (f" → {goal:,}" if goal else "")


MERGES = ProgressRule("merges", "merging", "counting pairs")
PRUNING = ProgressRule("vocabulary", "EM rounds and pruning", "seeding pieces from frequent substrings")

# (counts, spec, should_stop): should_stop is looked at while a long preparation runs (Unigram) and
# raises TrainingCancelled; the merging trainers prepare quickly and stop in run().
TrainerFactory = Callable[[Mapping[str, int], "RunSpec", "Callable[[], bool] | None"], "Trainer"]
#: Whether a trainer's own counting pass (SuperBPE's stage-2 split) may use the count cache: the
#: run's ``count_cache`` (``--no-count-cache``), which :func:`~workbench.tasks.train.train_run` sets
#: while it builds the trainer (a factory's arguments are the same for every family).
COUNT_CACHE: ContextVar[bool] = ContextVar("count_cache", default=True)


@dataclass(frozen=True)
class ModelFamily:
    """Everything that differs between model families, in one place (see the module docstring)."""

    name: str
    label: str  # "BPE"
    title: str  # the Train form's model list
    summary: str  # one line on how it trains
    defaults: Mapping[str, Any]  # RunSpec fields: units, pretokenizer, normalizer, tie_break, …, vocab_size
    applies: frozenset[str]  # the COMMON_SETTINGS this family uses
    why_not: Mapping[str, str]  # setting → why it does not apply (the refusal says it)
    options: tuple[ModelOption, ...]
    trainer: TrainerFactory
    progress: ProgressRule
    step_value: Callable[[Mapping[str, Any]], str]  # "frequency" | "score" | "log_likelihood"
    counted_as: str = ""  # the pre-tokenizer the counting pass uses when it is not the run's own
    # Special-token roles (workbench.core.special_roles). ``unk_token``: the model's own unknown
    # token (an ``unk`` role must name it; "" = the model has none, so no unk role); ``builtin_specials``:
    # tokens the trainer always reserves (a role may name them without adding them);
    # ``proposed_roles``/``proposed_template``: what the family's usual models use, offered by the form
    # (a run gets roles only when they are given: a default run exports none).
    unk_token: str = ""
    builtin_specials: tuple[str, ...] = ()
    proposed_roles: Mapping[str, str] = field(default_factory=dict)
    proposed_template: str = "none"
    # Checks of a resolved spec beyond the common ones (a setting this family cannot train with),
    # run by RunSpec.validate before the corpus is read; raises ConfigError naming the setting.
    check: Callable[[RunSpec], None] | None = None

    def export_formats(self, settings: Mapping[str, Any] | None = None) -> tuple[str, ...]:
        """The formats whose real library reproduces this family's ids (a run's ``settings``
        narrow it to that run); the rules and the reasons for the rest live with the writers,
        in :func:`workbench.formats.export.formats_for` / ``why_not``."""
        from workbench.formats.export import formats_for

        return formats_for(self.name, settings)

    def uses(self, setting: str) -> bool:
        return setting not in COMMON_SETTINGS or setting in self.applies

    def option(self, name: str) -> ModelOption | None:
        return next((o for o in self.options if o.name == name), None)

    def summary_of(self, settings: Mapping[str, Any]) -> str:
        """A stored run's settings in a line, naming only what applies to this family."""
        parts = [self.label]
        if self.uses("units"):
            parts.append(str(settings.get("units", "?")))
        if settings.get("end_of_word") and self.uses("end_of_word"):
            parts.append(f"end-of-word {settings['end_of_word']}")
        # SuperBPE records the split it was given (stage 1) beside the one its tokenizer runs.
        pre = str(settings.get("stage1_pretokenizer") or settings.get("pretokenizer", "?"))
        parts.append(pre if len(pre) <= 40 else pre[:39] + "…")  # a custom pattern can be a megabyte
        norm = ",".join(settings.get("normalizer") or []) or "none"
        if norm != "none":
            parts.append(f"normalizer {norm}")
        if self.uses("tie_break"):
            parts.append(f"tie-break {settings.get('tie_break', '?')}")
        if self.uses("min_frequency") and (settings.get("min_frequency") or 1) > 1:
            parts.append(f"min frequency {settings['min_frequency']}")
        if settings.get("template", "none") != "none":
            parts.append(f"template {settings['template']}")
        for option in self.options:
            if option.name in settings and settings[option.name] != option.default:
                parts.append(f"{option.name.replace('_', ' ')} {settings[option.name]}")
        if isinstance(settings.get("vocab_in_use"), int) and isinstance(settings.get("picky_removals"), int):
            # PickyBPE: its ids outnumber the vocabulary in use by the tokens it removed
            parts.append(f"{settings['vocab_in_use']:,} in use after {settings['picky_removals']:,} removals")
        return ", ".join(parts)


# ---- trainers ------------------------------------------------------------------------------------
def _option_config(family: ModelFamily, spec: RunSpec) -> dict[str, Any]:
    """The family's options as keyword arguments of its core config."""
    return {o.config_field: spec.options.get(o.name, o.default) for o in family.options}


def _bpe_trainer(counts: Mapping[str, int], spec: RunSpec, should_stop: Callable[[], bool] | None = None) -> Trainer:
    from workbench.core.bpe import BpeTrainer, TrainConfig

    return BpeTrainer(counts, TrainConfig(
        units=spec.units, vocab_size=spec.vocab_size, merges=spec.merges,  # type: ignore[arg-type]
        min_frequency=spec.min_frequency or 1, special_tokens=tuple(spec.special_tokens or ()),
        end_of_word=spec.end_of_word, tie_break=spec.tie_break,  # type: ignore[arg-type]
        pretokenizer=spec.pretokenizer, normalizer=tuple(spec.normalizer or ()), **_option_config(BPE, spec)))


def _wordpiece_trainer(counts: Mapping[str, int], spec: RunSpec,
                       should_stop: Callable[[], bool] | None = None) -> Trainer:
    from workbench.core.wordpiece import WordPieceConfig, WordPieceTrainer

    return WordPieceTrainer(counts, WordPieceConfig(
        vocab_size=spec.vocab_size, min_frequency=spec.min_frequency or 0,
        special_tokens=tuple(spec.special_tokens or ()), tie_break=spec.tie_break, pretokenizer=spec.pretokenizer,
        normalizer=tuple(spec.normalizer or ()), **_option_config(WORDPIECE, spec)))


def unigram_words(line: str, normalize: Callable[[str], str] | None = None) -> list[str]:
    """One counted line as the Unigram trainer cuts it: SentencePiece's words — a dummy ▁ before the
    line, spaces as ▁, a new word at every ▁ (what ``sentencepiece`` trains on). ``normalize`` runs
    on the line without its line break, as sentencepiece normalizes the lines it reads (the NMT
    rules would make the break a space, a trailing ▁ on every line)."""
    from workbench.core.unigram import spm_words

    line = line.rstrip("\r\n")
    return spm_words(normalize(line) if normalize is not None else line)


def _unigram_trainer(counts: Mapping[str, int], spec: RunSpec,
                     should_stop: Callable[[], bool] | None = None) -> Trainer:
    """Lines (counted whole and not normalized: ``counted_as`` = ``none``) become :func:`unigram_words`;
    cancellable throughout (normalizing millions of lines takes seconds)."""
    from workbench.core.normalize import make_normalizer
    from workbench.core.trainer import stop_checker
    from workbench.core.unigram import UnigramConfig, UnigramTrainer

    normalize = make_normalizer(tuple(spec.normalizer)) if spec.normalizer else None
    check = stop_checker(should_stop)
    words: Counter[str] = Counter()
    once: list[str] = []  # words of lines seen once, counted in C (in order: first-seen order is kept)
    for i, (line, count) in enumerate(counts.items()):
        check(i)
        if count == 1:
            once.extend(unigram_words(line, normalize))
            if len(once) >= 1 << 16:  # a bounded list: the corpus' words never all wait here at once
                words.update(once)
                once.clear()
            continue
        words.update(once)
        once.clear()
        for word in unigram_words(line, normalize):
            words[word] += count
    words.update(once)
    return UnigramTrainer(words, should_stop=should_stop, config=UnigramConfig(
        vocab_size=spec.vocab_size or 8000, special_tokens=tuple(spec.special_tokens or ()),
        pretokenizer=spec.pretokenizer, normalizer=tuple(spec.normalizer or ()), **_option_config(UNIGRAM, spec)))


def _superbpe_config(spec: RunSpec):
    from workbench.core.bpe import TrainConfig
    from workbench.core.superbpe import SuperBpeConfig

    return SuperBpeConfig(TrainConfig(
        units=spec.units, vocab_size=spec.vocab_size, merges=spec.merges,  # type: ignore[arg-type]
        min_frequency=spec.min_frequency or 1, special_tokens=tuple(spec.special_tokens or ()),
        tie_break=spec.tie_break, pretokenizer=spec.pretokenizer,  # type: ignore[arg-type]
        normalizer=tuple(spec.normalizer or ())), **_option_config(SUPERBPE, spec))


def _check_superbpe(spec: RunSpec) -> None:
    """Refuse what SuperBPE cannot train with before the corpus is read (the trainer's own checks)."""
    from workbench.core.superbpe import SuperBpeTrainer

    SuperBpeTrainer({}, {}, _superbpe_config(spec))


def _superbpe_trainer(counts: Mapping[str, int], spec: RunSpec,
                      should_stop: Callable[[], bool] | None = None) -> Trainer:
    """Stage 1 trains on ``counts`` (the run's own split); stage 2's pieces are the same files counted
    again with the paper's stage-2 split (from the count cache after the first run, unless the run
    counts without it: :data:`COUNT_CACHE`)."""
    from workbench.core.superbpe import STAGE2_PATTERN, SuperBpeTrainer
    from workbench.core.trainer import TrainingCancelled
    from workbench.tasks.train import count_words, open_sources

    config = _superbpe_config(spec)
    stop = should_stop or (lambda: False)
    try:
        stage2, _sources = count_words(open_sources(spec.files), STAGE2_PATTERN, spec.normalizer or (),
                                       sequences=spec.sequences, cache=COUNT_CACHE.get(), should_stop=stop,
                                       sample=(spec.sample_lines, spec.sample_seed) if spec.sample_lines else None)
    except WorkbenchError:
        if stop():  # stopped while reading: a partial read says nothing
            raise TrainingCancelled from None
        raise
    if stop():
        raise TrainingCancelled
    return SuperBpeTrainer(counts, stage2, config)


def _pickybpe_trainer(counts: Mapping[str, int], spec: RunSpec,
                      should_stop: Callable[[], bool] | None = None) -> Trainer:
    from workbench.core.bpe import TrainConfig
    from workbench.core.pickybpe import PickyBpeTrainer

    return PickyBpeTrainer(counts, TrainConfig(
        units=spec.units, vocab_size=spec.vocab_size, merges=spec.merges,  # type: ignore[arg-type]
        min_frequency=spec.min_frequency or 1, special_tokens=tuple(spec.special_tokens or ()),
        end_of_word=spec.end_of_word, tie_break=spec.tie_break,  # type: ignore[arg-type]
        pretokenizer=spec.pretokenizer, normalizer=tuple(spec.normalizer or ())),
        threshold=spec.options.get("picky_threshold", PICKYBPE.options[0].default))


def _parity_trainer(counts: Mapping[str, int], spec: RunSpec,
                    should_stop: Callable[[], bool] | None = None) -> Trainer:
    """The run's files and the development files grouped by the language their names give
    (``en_…``, ``….de.txt``: :func:`~workbench.corpus.language.language_from_name`, as Compare labels
    them) and counted per language; ``counts`` (all languages together) is not used."""
    from workbench.core.bpe import TrainConfig
    from workbench.core.parity_bpe import ParityBpeTrainer
    from workbench.corpus.language import language_from_name
    from workbench.tasks.spec import CorpusFile
    from workbench.tasks.train import count_words, open_sources

    dev_paths = [p.strip() for p in str(spec.options.get("parity_dev") or "").split(",") if p.strip()]
    if not dev_paths:
        raise ConfigError("options.parity_dev", "give the parallel development files, one per language, "
                          "comma-separated (named by language: en_dev.txt, dev.de.txt …)")

    def by_language(files, where: str) -> dict[str, dict[str, int]]:
        groups: dict[str, list] = {}
        for f in files:
            lang = language_from_name(f.path)
            if lang is None:
                raise ConfigError(where, f"{f.path}: its name says no language (en_…, ….de.txt, de/…): "
                                  "name each file by its language")
            groups.setdefault(lang, []).append(f)
        return {lang: dict(count_words(open_sources(group), spec.pretokenizer, spec.normalizer or (),
                                       sequences=spec.sequences, should_stop=should_stop)[0])
                for lang, group in groups.items()}

    train = by_language(spec.files, "files")
    dev_files = [CorpusFile(p) for p in dev_paths]
    dev = by_language(dev_files, "options.parity_dev")
    missing = sorted(set(train) - set(dev))
    if missing:
        raise ConfigError("options.parity_dev", f"no development file for {', '.join(missing)}: give one per "
                          "language of the training files")
    _check_parallel(dev_files, set(train), should_stop)
    return ParityBpeTrainer(train, {lang: dev[lang] for lang in train}, TrainConfig(
        units=spec.units, vocab_size=spec.vocab_size, merges=spec.merges,  # type: ignore[arg-type]
        min_frequency=spec.min_frequency or 1, special_tokens=tuple(spec.special_tokens or ()),
        end_of_word=spec.end_of_word, tie_break="hf", pretokenizer=spec.pretokenizer,
        normalizer=tuple(spec.normalizer or ())), global_merges=spec.options.get("parity_global_merges", 0))


def _check_parallel(dev_files: Sequence, languages: set[str], should_stop: Callable[[], bool] | None) -> None:
    """Refuse a development set that is not line-aligned: parity compares the tokens each language needs
    for the same content, so every language must hold as many non-empty lines (its translations).

    What is left out: whether the lines really translate each other (no tool can tell cheaply)."""
    from workbench.corpus.language import language_from_name
    from workbench.corpus.readers import iter_text
    from workbench.tasks.train import open_sources

    lines: dict[str, int] = {}
    for f, src in zip(dev_files, open_sources(dev_files)):
        lang = language_from_name(f.path)
        if lang in languages:
            n = sum(1 for chunk in iter_text(src, should_stop=should_stop) for line in chunk.split("\n")
                    if line.strip())
            lines[lang] = lines.get(lang, 0) + n
    if len(set(lines.values())) > 1:
        counts = ", ".join(f"{lang} {n:,}" for lang, n in sorted(lines.items()))
        raise ConfigError("options.parity_dev", "the development set must be parallel (the same sentences in "
                          f"each language, one per line), but its languages have different numbers of lines: "
                          f"{counts}; give each language the translation of the same lines")


def _wordpiece_step_value(settings: Mapping[str, Any]) -> str:
    # Runs stored before the score had a default in the settings were trained on the likelihood score.
    return "score" if settings.get("wordpiece_score", "likelihood") == "likelihood" else "frequency"


# ---- the families --------------------------------------------------------------------------------
BPE = ModelFamily(
    name="bpe", label="BPE", title="BPE (byte-pair encoding)",
    summary="merges the most frequent pair",
    defaults={"units": "bytes", "end_of_word": "", "pretokenizer": "gpt2", "normalizer": (), "tie_break": "first-seen",
              "special_tokens": (), "min_frequency": 1, "sequences": "lines", "vocab_size": 1000},
    applies=frozenset(COMMON_SETTINGS), why_not={}, options=(), trainer=_bpe_trainer, progress=MERGES,
    step_value=lambda _settings: "frequency",
    # GPT-2's convention: one <|endoftext|> begins and ends documents, no post-processor.
    proposed_roles={"bos": "<|endoftext|>", "eos": "<|endoftext|>"},
)

WORDPIECE = ModelFamily(
    name="wordpiece", label="WordPiece", title="WordPiece (BERT, ## continuations)",
    summary="merges the pair with the best score (the most frequent, as tokenizers' WordPieceTrainer, by default)",
    # The frequency score by default: on held-out text the likelihood score at minimum frequency 1
    # gives ~1.2-1.6 characters per token against ~2.2-3.6 (bench/bench_wordpiece_defaults.py).
    defaults={"units": "chars", "end_of_word": "", "pretokenizer": "bert", "normalizer": ("bert-lower",),
              "tie_break": "hf", "special_tokens": ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"),
              "min_frequency": 1, "sequences": "lines", "vocab_size": 2000},
    applies=frozenset({"min_frequency", "sequences", "pretokenizer"}),
    why_not={"units": "WordPiece works on characters", "end_of_word": "WordPiece marks word pieces with ## itself",
             "merges": "give WordPiece a vocabulary size",
             "tie_break": "WordPiece breaks ties by the Hugging Face rule only"},
    options=(
        ModelOption("wordpiece_score", str, "frequency", "pair score: the pair frequency (tokenizers' "
                    "WordPieceTrainer) or freq(xy)/(freq(x)·freq(y)), which favours rare pairs: give it a "
                    "minimum frequency", choices=("frequency", "likelihood"), config="score", title="Score"),
    ),
    trainer=_wordpiece_trainer, progress=MERGES, step_value=_wordpiece_step_value,
    unk_token="[UNK]", builtin_specials=("[UNK]",),
    proposed_roles={"unk": "[UNK]", "sep": "[SEP]", "pad": "[PAD]", "cls": "[CLS]", "mask": "[MASK]"},
    proposed_template="bert",
)

UNIGRAM = ModelFamily(
    name="unigram", label="Unigram", title="Unigram (SentencePiece, ▁ for spaces)",
    summary="starts large and prunes the pieces that cost least likelihood (EM)",
    # SentencePiece's own clean-up, which its .model and a tokenizer.json both express exactly:
    # control characters removed, invisible spaces read as spaces (NMT rules, without NFKC), no
    # leading/trailing spaces and a run of spaces as one (remove_extra_whitespaces).
    defaults={"units": "chars", "end_of_word": "", "pretokenizer": "metaspace", "normalizer": ("nmt", "spm-whitespace"),
              "tie_break": "hf", "special_tokens": (), "min_frequency": 1, "sequences": "lines", "vocab_size": 2000},
    applies=frozenset(),
    why_not={"units": "Unigram works on characters", "end_of_word": "Unigram marks spaces with ▁ itself",
             "merges": "Unigram prunes instead of merging: give it a vocabulary size",
             "tie_break": "Unigram has no ties to break (it keeps the likelier pieces)",
             "min_frequency": "Unigram keeps pieces by EM and pruning, not by a minimum frequency",
             "sequences": "Unigram trains on lines, as SentencePiece reads text",
             "pretokenizer": "Unigram splits text as SentencePiece does (▁ for spaces, a dummy ▁ per line)"},
    options=(
        ModelOption("character_coverage", float, 1.0, "share of characters the alphabet must cover "
                    "(0.9995 suits CJK)", minimum=0.0, maximum=1.0),
        ModelOption("byte_fallback", bool, False, "spell unknown characters as <0xNN> byte pieces"),
        ModelOption("max_piece_length", int, 16, "longest piece, in characters", minimum=1),
    ),
    trainer=_unigram_trainer, progress=PRUNING, step_value=lambda _settings: "log_likelihood", counted_as="none",
    # SentencePiece reserves <unk> <s> </s> (ids 0-2); Llama adds <s> before each text.
    unk_token="<unk>", builtin_specials=("<unk>", "<s>", "</s>"),
    proposed_roles={"bos": "<s>", "eos": "</s>", "unk": "<unk>"}, proposed_template="llama",
)

SUPERBPE = ModelFamily(
    name="superbpe", label="SuperBPE", title="SuperBPE (BPE, then superwords across spaces)",
    summary="merges the most frequent pair; after the transition point also across spaces (Liu et al. 2025)",
    defaults={**BPE.defaults, "vocab_size": 1000},
    applies=frozenset(COMMON_SETTINGS) - {"units", "end_of_word"},
    why_not={"units": "SuperBPE is byte-level, as in the paper", "end_of_word": "SuperBPE is byte-level: it keeps "
             "spaces instead of an end-of-word marker"},
    options=(
        ModelOption("transition", float, 0.9, "where stage 2 (merges across spaces) starts: below 1 a share of the "
                    "vocabulary size, from 1 on a vocabulary size (the paper: 180k of 200k = 0.9)", minimum=0.0,
                    title="Transition t"),
        ModelOption("max_words", int, 4, "most words one superword may hold (the paper: 4)", minimum=1,
                    title="Words per superword"),
    ),
    trainer=_superbpe_trainer,
    progress=ProgressRule("merges", "merging", "counting the corpus again for stage 2 (no split at spaces)"),
    step_value=lambda _settings: "frequency",
    proposed_roles={"bos": "<|endoftext|>", "eos": "<|endoftext|>"}, check=_check_superbpe,
)


# PickyBPE (Chizhov et al., EMNLP 2024): BPE's settings, plus the IoS threshold of its removals.
PICKYBPE = ModelFamily(
    name="pickybpe", label="PickyBPE", title="PickyBPE (BPE, drops used-up tokens)",
    summary="merges the most frequent pair, then removes a parent the merge used up (IoS above the threshold)",
    defaults=BPE.defaults, applies=BPE.applies, why_not={},
    options=(
        ModelOption("picky_threshold", float, 0.9, "remove a merged pair's parent when the share of its "
                    "occurrences the merge took (Intersection over Self) is above this; 1: plain BPE",
                    minimum=0.1, maximum=1.0, title="IoS threshold τ"),
    ),
    trainer=_pickybpe_trainer, progress=MERGES, step_value=lambda _settings: "frequency",
    proposed_roles=BPE.proposed_roles,
)

# Parity-aware BPE (Foroutan et al., 2025): language-labelled files and a parallel development set.
PARITY_BPE = ModelFamily(
    name="parity-bpe", label="Parity-aware BPE", title="Parity-aware BPE (serves the worst-compressed language)",
    summary="merges the most frequent pair of the language its development text compresses worst",
    defaults={**BPE.defaults, "tie_break": "hf"}, applies=BPE.applies - {"tie_break"},
    why_not={"tie_break": "parity-aware BPE breaks ties by the Hugging Face rule only (first-seen has no "
                          "single order over several languages)"},
    options=(
        ModelOption("parity_dev", str, "", "the parallel development files, one per language, comma-separated "
                    "(each named by its language, as the training files)", title="Development files"),
        ModelOption("parity_global_merges", int, 0, "merges made by plain BPE's rule (over all languages) "
                    "before the parity-driven ones: the paper's hybrid", minimum=0, title="Global merges first"),
    ),
    trainer=_parity_trainer, progress=MERGES, step_value=lambda _settings: "frequency",
    proposed_roles=BPE.proposed_roles,
)

#: Every family, in the order the form and the CLI list them.
FAMILIES: dict[str, ModelFamily] = {f.name: f for f in (BPE, WORDPIECE, UNIGRAM, SUPERBPE, PICKYBPE, PARITY_BPE)}


def family(name: str) -> ModelFamily:
    """The family called ``name``; ConfigError naming the model setting when there is none."""
    found = FAMILIES.get(name)
    if found is None:
        raise ConfigError("model", f"unknown model {name!r}: use one of {', '.join(FAMILIES)}")
    return found


def family_of(settings: Mapping[str, Any]) -> ModelFamily:
    """The family of a stored run (runs stored before the model was recorded are BPE)."""
    return FAMILIES.get(str(settings.get("model", "bpe")), BPE)
