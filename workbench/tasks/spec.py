"""What one training run is made of, as one typed value shared by the window and the CLI.

A :class:`RunSpec` holds the model settings and the corpus files, each file with its *own* reader
options (a ``.txt``, a ``.jsonl`` read by field and a cp1252 ``.csv`` can go into one run). The
CLI builds one from its flags, the window from its form and the Corpus tab; both hand it to
:func:`workbench.tasks.train.train_run`, and the window passes it to its child process as a JSON
file (``workbench train --spec RUN.json``). It is validated once, by :meth:`RunSpec.validate`,
which raises :class:`~workbench.errors.ConfigError` naming the field, so the CLI can name its
flag and the window its widget.

Model-specific settings live in ``options``, declared per model in :data:`MODEL_OPTIONS`: a new
model's option is one :class:`ModelOption` entry there; the CLI makes a flag of it and the JSON
form carries it, with no other plumbing.

Left out: training itself (:mod:`workbench.tasks.train`) and how each front end lays out its
controls.
"""

from __future__ import annotations

import codecs
import json
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal, Mapping, get_args

from workbench.errors import ConfigError, WorkbenchError

SPEC_VERSION = 1
ModelName = Literal["bpe", "wordpiece", "unigram"]
MODELS: tuple[str, ...] = get_args(ModelName)
UNITS = ("bytes", "chars")
TIE_BREAKS = ("first-seen", "hf")
SEQUENCES = ("lines", "documents")  # = workbench.core.count.SEQUENCES
FILE_KINDS = ("text", "jsonl", "csv", "tsv", "parquet", "wordcounts")  # = workbench.corpus.KINDS
_COLUMN_KINDS = ("csv", "tsv", "parquet")
ON_BAD_RECORD = ("fail", "skip")  # = workbench.corpus.bad_records.POLICIES


@dataclass(frozen=True)
class CorpusFile:
    """A corpus file with the reader options it was validated with.

    ``kind`` is the reader (``text``, ``jsonl``, ``csv`` …), ``field`` the JSONL field, ``column``
    the CSV/TSV/Parquet column (name or 0-based index), ``encoding`` the text encoding (None =
    UTF-8). A file whose kind and field/column are given is read as said, without sniffing again;
    ``kind=""`` (and a JSONL file without a field, a CSV file without a column) leaves it to the
    reader to decide from the file, as when the file is first added. ``on_bad_record`` is ``fail``
    (a bad record stops the run, naming file:line) or ``skip`` (bad records are left out, counted
    and reported with their positions).
    """

    path: str
    kind: str = "text"
    field: str | None = None
    column: str | int | None = None
    encoding: str | None = None
    on_bad_record: str = "fail"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "kind": self.kind, "field": self.field, "column": self.column,
                               "encoding": self.encoding}
        if self.on_bad_record != "fail":  # written only when chosen: specs of older versions stay readable
            out["on_bad_record"] = self.on_bad_record
        return out

    @classmethod
    def from_dict(cls, data: Any, where: str = "files") -> CorpusFile:
        if isinstance(data, str):
            data = {"path": data}
        if not isinstance(data, dict):
            raise ConfigError("files", f"{where}: a corpus file is a path or an object with a \"path\"")
        _refuse_unknown(data, {f.name for f in fields(cls)}, where, "files")
        if not isinstance(data.get("path"), str) or not data["path"]:
            raise ConfigError("files", f"{where}: \"path\" must name a corpus file")
        for name, types in (("kind", (str,)), ("field", (str,)), ("column", (str, int)), ("encoding", (str,)),
                            ("on_bad_record", (str,))):
            value = data.get(name)
            if value is not None and (not isinstance(value, types) or isinstance(value, bool)):
                raise ConfigError(f"files.{name}", f"{where}: \"{name}\" must be a "
                                  f"{'name or a number' if name == 'column' else 'string'}, not {value!r}")
        return cls(data["path"], data.get("kind") or "", data.get("field"), data.get("column"), data.get("encoding"),
                   data.get("on_bad_record") or "fail")


@dataclass(frozen=True)
class ModelOption:
    """One model-specific setting: its type, default, allowed values and a line of help."""

    name: str
    type: type  # bool, int, float or str
    default: Any
    help: str
    choices: tuple[Any, ...] = ()
    minimum: float | None = None
    maximum: float | None = None


#: Each model's own settings. Adding a model's option here is all the CLI (a flag per option,
#: ``--character-coverage``) and the JSON form need.
MODEL_OPTIONS: dict[str, tuple[ModelOption, ...]] = {
    "bpe": (),
    "wordpiece": (
        ModelOption("wordpiece_score", str, "likelihood", "pair score: freq(xy)/(freq(x)·freq(y)) or "
                    "the pair frequency (tokenizers' WordPieceTrainer)", choices=("likelihood", "frequency")),
    ),
    "unigram": (
        ModelOption("character_coverage", float, 1.0, "share of characters the alphabet must cover "
                    "(0.9995 suits CJK)",
                    minimum=0.0, maximum=1.0),
        ModelOption("byte_fallback", bool, False, "spell unknown characters as <0xNN> byte pieces"),
        ModelOption("max_piece_length", int, 16, "longest piece, in characters", minimum=1),
    ),
}

#: What each model trains with when the user does not say: the CLI fills flags that were not given
#: from here, and the window sets its form from here when the model changes. One place, so both
#: front ends agree (WordPiece as BERT does it; Unigram as SentencePiece does it).
MODEL_DEFAULTS: dict[str, dict[str, Any]] = {
    "bpe": {"units": "bytes", "pretokenizer": "gpt2", "normalizer": (), "tie_break": "first-seen",
            "special_tokens": ()},
    "wordpiece": {"units": "chars", "pretokenizer": "bert", "normalizer": ("bert",), "tie_break": "hf",
                  "special_tokens": ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")},
    # SentencePiece's own clean-up, which its .model and a tokenizer.json both express exactly:
    # control characters removed, invisible spaces read as spaces (NMT rules, without NFKC), no
    # leading/trailing spaces and a run of spaces as one (remove_extra_whitespaces).
    "unigram": {"units": "chars", "pretokenizer": "metaspace", "normalizer": ("nmt", "spm-whitespace"),
                "tie_break": "hf", "special_tokens": ()},
}

_SETTING_NAMES = {
    "model": "the model", "vocab_size": "the vocabulary size", "merges": "the number of merges",
    "units": "the units", "end_of_word": "the end-of-word marker", "pretokenizer": "the pre-tokenizer",
    "normalizer": "the normalizer", "min_frequency": "the minimum frequency",
    "special_tokens": "a special token", "tie_break": "the tie-break rule", "name": "the run name",
    "sequences": "the sequences setting",
}


@dataclass(frozen=True)
class RunSpec:
    """Everything one training run needs; build with keywords, check with :meth:`validate`.

    ``vocab_size`` is the target |V| (initial symbols + specials + merges), ``merges`` a number of
    merges (BPE); at least one is needed, both may be given (the first reached ends the run).
    ``project`` is where the run is stored; a front end may supply it instead (``--project``).
    Relative paths (files, project) are taken from the current folder, as on a command line.
    """

    files: tuple[CorpusFile, ...] = ()
    model: str = "bpe"
    vocab_size: int | None = None
    merges: int | None = None
    units: str = "bytes"
    end_of_word: str = ""
    pretokenizer: str = "gpt2"
    normalizer: tuple[str, ...] = ()
    min_frequency: int = 1
    special_tokens: tuple[str, ...] = ()
    tie_break: str = "first-seen"
    # lines: each line (with its line break) is a sequence, as tokenizers' train(files) and
    # sentencepiece read text; documents: a whole file, JSONL record or CSV cell.
    sequences: str = "lines"
    name: str = ""
    options: Mapping[str, Any] = field(default_factory=dict)
    project: str = ""

    # ---- checking ----------------------------------------------------------------------------
    def validate(self) -> RunSpec:
        """Check every setting (and the reader options of every file, without reading it).

        Returns the spec in canonical form (pre-tokenizer preset names lower-cased, normalizer
        names resolved, model options completed with their defaults); raises ConfigError.
        What needs the corpus (the alphabet of a character-level run) is checked by the trainer.
        """
        from workbench.core.normalize import parse_normalizer
        from workbench.core.pretokenize import make_pretokenizer
        from workbench.core.train_checks import MAX_VOCAB_SIZE, check_special_tokens

        if self.model not in MODELS:
            raise ConfigError("model", f"unknown model {self.model!r}: use one of {', '.join(MODELS)}")
        for name in ("vocab_size", "merges", "min_frequency"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise ConfigError(name, f"{_SETTING_NAMES[name]} must be a whole number, not {value!r}")
        if self.vocab_size is None and self.merges is None:
            raise ConfigError("vocab_size", "say how far to train: give a vocabulary size or a number of merges")
        for name in ("vocab_size", "merges"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ConfigError(name, f"{_SETTING_NAMES[name]} must be a positive number, not {value}")
        if self.merges is not None and self.model != "bpe":
            raise ConfigError("merges", f"a number of merges applies to BPE only; give {self.model} a vocabulary size")
        if self.units not in UNITS:
            raise ConfigError("units", f"unknown units {self.units!r}: use bytes or chars")
        if self.model != "bpe" and self.end_of_word:
            raise ConfigError("end_of_word", f"an end-of-word marker is a BPE setting; {self.model} marks "
                              "word pieces itself")
        if self.end_of_word and self.units != "chars":
            raise ConfigError("end_of_word", "an end-of-word marker needs character units "
                              "(byte-level BPE keeps spaces instead)")
        specials = tuple(self.special_tokens)
        if any(not isinstance(token, str) for token in specials):
            raise ConfigError("special_tokens", "special tokens must be text")
        check_special_tokens(specials)
        if self.end_of_word and self.end_of_word in specials:
            raise ConfigError("end_of_word", f"the end-of-word marker {self.end_of_word!r} is also a special token: "
                              "choose another marker")
        for name in ("vocab_size", "merges"):
            value = getattr(self, name)
            if value is not None and value > MAX_VOCAB_SIZE:
                raise ConfigError(name, f"{_SETTING_NAMES[name]} {value} is beyond what the trainer supports "
                                  f"(at most {MAX_VOCAB_SIZE}): choose a smaller one")
        minimum = 256 + len(set(specials))
        if self.units == "bytes" and self.vocab_size is not None and self.vocab_size < minimum:
            raise ConfigError("vocab_size", f"the vocabulary size {self.vocab_size} is below the initial "
                              f"vocabulary of {minimum} (256 bytes{' + specials' if specials else ''}): "
                              f"choose at least {minimum}")
        if self.min_frequency is not None and self.min_frequency < 0:
            raise ConfigError("min_frequency", f"the minimum frequency must be 0 or more, not {self.min_frequency}")
        if self.tie_break not in TIE_BREAKS:
            raise ConfigError("tie_break", f"unknown tie-break {self.tie_break!r}: use first-seen or hf")
        if self.sequences not in SEQUENCES:
            raise ConfigError("sequences", f"unknown sequences {self.sequences!r}: use lines or documents")
        try:
            pretokenizer = make_pretokenizer(self.pretokenizer).spec()
        except WorkbenchError as exc:
            raise ConfigError("pretokenizer", str(exc)) from None
        try:
            normalizer = parse_normalizer(self.normalizer)
        except WorkbenchError as exc:
            raise ConfigError("normalizer", str(exc)) from None
        options = _checked_options(self.model, self.options)
        if self.model == "unigram" and pretokenizer != "metaspace":
            raise ConfigError("pretokenizer", "Unigram splits text as SentencePiece does (▁ for spaces, a dummy ▁ "
                              "per line): use the metaspace pre-tokenizer")
        if self.model == "unigram" and self.sequences != "lines":
            raise ConfigError("sequences", "Unigram trains on lines, as SentencePiece reads text: use lines")
        if self.model == "unigram" and self.min_frequency not in (None, 1):
            raise ConfigError("min_frequency", "Unigram keeps pieces by EM and pruning, not by a minimum frequency: "
                              "leave the minimum frequency out")
        if self.model == "wordpiece" and self.tie_break != "hf":
            raise ConfigError("tie_break", "WordPiece breaks ties by the Hugging Face rule only: use hf")
        for f in self.files:
            _check_file(f)
        # Units are a BPE setting: WordPiece and Unigram always work on characters. Unigram has no
        # tie-break rule (it keeps the likelier pieces): stored as the model's default, never used.
        units = self.units if self.model == "bpe" else "chars"
        tie_break = "hf" if self.model == "unigram" else self.tie_break
        return replace(self, units=units, tie_break=tie_break, pretokenizer=pretokenizer, normalizer=normalizer,
                       options=options,
                       special_tokens=specials, files=tuple(self.files))

    # ---- as data -----------------------------------------------------------------------------
    def settings(self) -> dict[str, Any]:
        """The model settings as the project file stores them with a run (no files, no project)."""
        return {
            "model": self.model,
            "units": self.units,
            "vocab_size": self.vocab_size,
            "merges": self.merges,
            "min_frequency": self.min_frequency,
            "special_tokens": list(self.special_tokens),
            "end_of_word": self.end_of_word,
            "tie_break": self.tie_break,
            "sequences": self.sequences,
            "pretokenizer": self.pretokenizer,
            "normalizer": list(self.normalizer),
            **dict(self.options),
        }

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"version": SPEC_VERSION}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "files":
                value = [cf.to_dict() for cf in value]
            elif isinstance(value, tuple):
                value = list(value)
            elif f.name == "options":
                value = dict(value)
            out[f.name] = value
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=2)

    @classmethod
    def from_dict(cls, data: Any) -> RunSpec:
        """Read a spec written by :meth:`to_dict`; unknown keys and newer versions are refused."""
        if not isinstance(data, dict):
            raise ConfigError("spec", "a run spec is a JSON object")
        version = data.get("version", SPEC_VERSION)
        if not isinstance(version, int) or version > SPEC_VERSION or version < 1:
            raise ConfigError("version", f"run spec version {version!r} is not supported (this workbench reads "
                              f"up to version {SPEC_VERSION}): update the workbench or rewrite the spec")
        known = {f.name for f in fields(cls)}
        _refuse_unknown(data, known | {"version"}, "the run spec", "spec")
        files = data.get("files", [])
        if not isinstance(files, list):
            raise ConfigError("files", "\"files\" must be a list of corpus files")
        kwargs: dict[str, Any] = {k: v for k, v in data.items() if k in known}
        kwargs["files"] = tuple(CorpusFile.from_dict(f, f"files[{i}]") for i, f in enumerate(files))
        for name in ("special_tokens", "normalizer"):
            if name in kwargs:
                value = kwargs[name]
                if isinstance(value, str):
                    value = [value] if name == "special_tokens" else value.split(",")
                if not isinstance(value, list):
                    raise ConfigError(name, f"{_SETTING_NAMES[name]} setting must be a list")
                kwargs[name] = tuple(value)
        if "options" in kwargs and not isinstance(kwargs["options"], dict):
            raise ConfigError("options", "\"options\" must be an object of model settings")
        for name in ("units", "end_of_word", "pretokenizer", "tie_break", "sequences", "name", "model", "project"):
            if name in kwargs and not isinstance(kwargs[name], str):
                raise ConfigError(name, f"\"{name}\" must be a string, not {kwargs[name]!r}")
        return cls(**kwargs)

    @classmethod
    def from_json(cls, text: str, where: str = "the run spec") -> RunSpec:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError("spec", f"{where} is not valid JSON (line {exc.lineno}: {exc.msg})") from None
        return cls.from_dict(data)


def _refuse_unknown(data: Mapping[str, Any], known: set[str], where: str, field_name: str) -> None:
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(field_name, f"{where} has unknown key{'s' if len(unknown) > 1 else ''} "
                          f"{', '.join(map(repr, unknown))}: known keys are {', '.join(sorted(known))}")


def _checked_options(model: str, options: Mapping[str, Any]) -> dict[str, Any]:
    declared = {o.name: o for o in MODEL_OPTIONS.get(model, ())}
    out: dict[str, Any] = {}
    for name, value in dict(options).items():
        option = declared.get(name)
        if option is None:
            known = ", ".join(declared) or "none"
            raise ConfigError(f"options.{name}", f"{name.replace('_', ' ')} is not a setting of {model} "
                              f"(its settings: {known})")
        out[name] = _checked_value(option, value)
    for name, option in declared.items():
        out.setdefault(name, option.default)
    return out


def _checked_value(option: ModelOption, value: Any) -> Any:
    where, label = f"options.{option.name}", option.name.replace("_", " ")
    if option.type is bool:
        if not isinstance(value, bool):
            raise ConfigError(where, f"{label} is true or false, not {value!r}")
        return value
    if option.type in (int, float):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if option.type is int and ok and float(value) != int(value):
            ok = False
        if not ok:
            raise ConfigError(where, f"{label} must be a {'whole ' if option.type is int else ''}number, not {value!r}")
        value = option.type(value)
        if option.minimum is not None and value < option.minimum or option.maximum is not None and value > option.maximum:
            bounds = f"between {option.minimum} and {option.maximum}" if option.maximum is not None \
                else f"at least {option.minimum}"
            raise ConfigError(where, f"{label} must be {bounds}, not {value}")
        return value
    if not isinstance(value, str) or option.choices and value not in option.choices:
        raise ConfigError(where, f"{label} must be one of {', '.join(map(str, option.choices))}, not {value!r}")
    return value


def _check_file(f: CorpusFile) -> None:
    """Reader options that cannot go together, found without opening the file."""
    if f.kind and f.kind not in FILE_KINDS:
        raise ConfigError("files.kind", f"{f.path}: unknown kind {f.kind!r}: use one of {', '.join(FILE_KINDS)}")
    if f.field is not None and f.kind not in ("jsonl", ""):
        raise ConfigError("files.field", f"{f.path}: a JSONL field does not apply to a {f.kind} file: "
                          "train files that need different options separately, or give each file its own")
    if f.column is not None and f.kind not in (*_COLUMN_KINDS, ""):
        raise ConfigError("files.column", f"{f.path}: a column does not apply to a {f.kind} file: "
                          "give the column only for CSV, TSV or Parquet files")
    if f.on_bad_record not in ON_BAD_RECORD:
        raise ConfigError("files.on_bad_record", f"{f.path}: unknown bad-record policy {f.on_bad_record!r}: "
                          "use fail (stop at the first bad record) or skip (leave bad records out and report them)")
    if f.encoding is not None:
        try:
            codecs.lookup(f.encoding)
        except LookupError:
            raise ConfigError("files.encoding", f"{f.path}: unknown text encoding {f.encoding!r}: "
                              "use a name such as utf-8, cp1252 or latin-1") from None


def refuse_bpe_only(model: str, given: Mapping[str, Any]) -> None:
    """Refuse BPE-only settings the user *gave* for another model (``given``: field → value, None
    when not given), instead of ignoring them. ``RunSpec.validate`` cannot tell a value the user
    chose from the dataclass default (units default to bytes), so the front end that knows says
    which were given; the rule itself lives here."""
    if model == "bpe":
        return
    defaults = MODEL_DEFAULTS[model]
    why = "breaks ties by the Hugging Face rule" if model == "wordpiece" else "has no ties to break"
    for name, value in given.items():
        if value and value != defaults.get(name, ""):
            raise ConfigError(name, f"{value!r} does not apply to {model} (it works on characters and {why}): "
                              "leave it out")
