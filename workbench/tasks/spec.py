"""What one training run is made of, as one typed value shared by the window and the CLI.

A :class:`RunSpec` holds the model settings and the corpus files, each file with its *own* reader
options (a ``.txt``, a ``.jsonl`` read by field and a cp1252 ``.csv`` can go into one run). The
CLI builds one from its flags, the window from its form and the Corpus tab; both hand it to
:func:`workbench.tasks.train.train_run`, and the window passes it to its child process as a JSON
file (``workbench train --spec RUN.json``). It is validated once, by :meth:`RunSpec.validate`,
which raises :class:`~workbench.errors.ConfigError` naming the field, so the CLI can name its
flag and the window its widget.

Each model family's defaults, the settings that apply to it and its own options (``options``) come
from its descriptor in :mod:`workbench.tasks.models`. A setting left unset here (``""`` or None)
gets the *family's* default in :meth:`RunSpec.validate` — a JSON spec for WordPiece that names no
pre-tokenizer gets BERT's, not BPE's — and a setting that does not apply to the family is refused
when given with another value than the family's own.

Left out: training itself (:mod:`workbench.tasks.train`) and how each front end lays out its
controls.
"""

from __future__ import annotations

import codecs
import json
from dataclasses import dataclass, field, fields, replace
from typing import Any, Mapping

from workbench.errors import ConfigError, WorkbenchError
from workbench.tasks.models import FAMILIES, ModelFamily, ModelOption, family

__all__ = ["MODELS", "MODEL_OPTIONS", "CorpusFile", "ModelOption", "RunSpec", "check_option_value"]

SPEC_VERSION = 1
MODELS: tuple[str, ...] = tuple(FAMILIES)
UNITS = ("bytes", "chars")
TIE_BREAKS = ("first-seen", "hf")
SEQUENCES = ("lines", "documents")  # = workbench.core.count.SEQUENCES
FILE_KINDS = ("text", "jsonl", "csv", "tsv", "parquet", "arrow", "wordcounts")  # = workbench.corpus.KINDS
_COLUMN_KINDS = ("csv", "tsv", "parquet", "arrow")
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


#: Each model's own settings, from its descriptor (:mod:`workbench.tasks.models`): the one place an
#: option is declared; the CLI makes a flag of each and the JSON form carries it.
MODEL_OPTIONS: dict[str, tuple[ModelOption, ...]] = {name: f.options for name, f in FAMILIES.items()}

_SETTING_NAMES = {
    "model": "the model", "vocab_size": "the vocabulary size", "merges": "the number of merges",
    "units": "the units", "end_of_word": "the end-of-word marker", "pretokenizer": "the pre-tokenizer",
    "normalizer": "the normalizer", "min_frequency": "the minimum frequency",
    "special_tokens": "a special token", "tie_break": "the tie-break rule", "name": "the run name",
    "sequences": "the sequences setting", "special_roles": "the special roles", "template": "the template",
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
    # "" / None: the model family's default (workbench.tasks.models), filled in by validate().
    units: str = ""
    end_of_word: str = ""
    pretokenizer: str = ""
    normalizer: tuple[str, ...] | None = None
    min_frequency: int | None = None
    special_tokens: tuple[str, ...] | None = None
    tie_break: str = ""
    # lines: each line (with its line break) is a sequence, as tokenizers' train(files) and
    # sentencepiece read text; documents: a whole file, JSONL record or CSV cell.
    sequences: str = ""
    # Train on N lines drawn evenly (seeded reservoir) from all files, as sentencepiece's
    # input_sentence_size; None: every line.
    sample_lines: int | None = None
    sample_seed: int = 0
    name: str = ""
    options: Mapping[str, Any] = field(default_factory=dict)
    project: str = ""
    # What special tokens are for (role → token: bos, eos, unk, pad, mask, cls, sep) and the
    # post-processor template ("" = none); see workbench.core.special_roles. A role's token that is
    # not yet a special token becomes one (appended after the others).
    special_roles: Mapping[str, str] = field(default_factory=dict)
    template: str = ""

    # ---- checking ----------------------------------------------------------------------------
    def validate(self) -> RunSpec:
        """Check every setting (and the reader options of every file, without reading it).

        Returns the spec in canonical form (pre-tokenizer preset names lower-cased, normalizer
        names resolved, model options completed with their defaults); raises ConfigError.
        What needs the corpus (the alphabet of a character-level run) is checked by the trainer.
        """

        fam = family(self.model)
        for name in ("vocab_size", "merges", "min_frequency"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise ConfigError(name, f"{_SETTING_NAMES[name]} must be a whole number, not {value!r}")
        self._refuse_what_does_not_apply(fam)
        defaults = fam.defaults
        resolved = replace(
            self, units=self.units or defaults["units"], pretokenizer=self.pretokenizer or defaults["pretokenizer"],
            normalizer=tuple(defaults["normalizer"]) if self.normalizer is None else tuple(self.normalizer),
            min_frequency=defaults["min_frequency"] if self.min_frequency is None else self.min_frequency,
            special_tokens=tuple(defaults["special_tokens"]) if self.special_tokens is None
            else tuple(self.special_tokens),
            tie_break=self.tie_break or defaults["tie_break"], sequences=self.sequences or defaults["sequences"],
            template=self.template or "none")
        return resolved._with_role_tokens(fam)._validate_resolved()

    def _with_role_tokens(self, fam: ModelFamily) -> RunSpec:
        """Roles checked against the family (an unk role names the model's own unknown token), and
        the tokens they name that are not special tokens yet appended to the special tokens."""
        from workbench.core.special_roles import check_roles

        roles = dict(self.special_roles)
        check_roles(roles, self.template)
        unk = roles.get("unk")
        if unk is not None and unk != fam.unk_token:
            raise ConfigError("special_roles", f"{fam.label} has no unknown token: leave the unk role out"
                              if not fam.unk_token else f"the unk role must be {fam.label}'s unknown token "
                              f"{fam.unk_token}, not {unk!r}")
        specials = list(self.special_tokens or ())
        for token in roles.values():
            if token not in specials and token not in fam.builtin_specials:
                specials.append(token)
        return replace(self, special_roles=roles, special_tokens=tuple(specials))

    def _refuse_what_does_not_apply(self, fam: ModelFamily) -> None:
        """A common setting the family does not use, given with another value than the family's own."""
        for name in ("merges", "units", "end_of_word", "tie_break", "min_frequency", "sequences"):
            value = getattr(self, name)
            if fam.uses(name) or value in (None, "") or value == fam.defaults.get(name):
                continue
            shown = f"{_SETTING_NAMES[name]} {value!r}" if name != "merges" else "a number of merges"
            raise ConfigError(name, f"{shown} does not apply to {fam.label}: {fam.why_not[name]}; leave it out")

    def _validate_resolved(self) -> RunSpec:
        from workbench.core.normalize import parse_normalizer
        from workbench.core.pretokenize import make_pretokenizer
        from workbench.core.train_checks import MAX_VOCAB_SIZE, check_special_tokens

        fam = family(self.model)
        if self.vocab_size is None and self.merges is None:
            raise ConfigError("vocab_size", "say how far to train: give a vocabulary size or a number of merges")
        for name in ("vocab_size", "merges"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ConfigError(name, f"{_SETTING_NAMES[name]} must be a positive number, not {value}")
        if self.units not in UNITS:
            raise ConfigError("units", f"unknown units {self.units!r}: use bytes or chars")
        if self.end_of_word and self.units != "chars":
            raise ConfigError("end_of_word", "an end-of-word marker needs character units "
                              "(byte-level BPE keeps spaces instead)")
        specials = tuple(self.special_tokens or ())
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
        self._check_sample()
        try:
            pretokenizer = make_pretokenizer(self.pretokenizer).spec()
        except WorkbenchError as exc:
            raise ConfigError("pretokenizer", str(exc)) from None
        try:
            normalizer = parse_normalizer(self.normalizer)
        except WorkbenchError as exc:
            raise ConfigError("normalizer", str(exc)) from None
        options = _checked_options(self.model, self.options)
        if not fam.uses("pretokenizer") and pretokenizer != fam.defaults["pretokenizer"]:
            raise ConfigError("pretokenizer", f"{fam.why_not['pretokenizer']}: use the "
                              f"{fam.defaults['pretokenizer']} pre-tokenizer")
        for f in self.files:
            _check_file(f)
        resolved = replace(self, pretokenizer=pretokenizer, normalizer=normalizer, options=options,
                           special_tokens=specials, files=tuple(self.files))
        if fam.check is not None:
            fam.check(resolved)
        return resolved

    def _check_sample(self) -> None:
        n, seed = self.sample_lines, self.sample_seed
        if n is None:
            return
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ConfigError("sample_lines", f"the number of sampled lines must be a whole number of at least 1, "
                              f"not {n!r}")
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ConfigError("sample_seed", f"the sampling seed must be a whole number of 0 or more, not {seed!r}")
        if self.sequences != "lines":
            raise ConfigError("sample_lines", "sampling draws lines: use --sequences lines, or train on every document")

    # ---- as data -----------------------------------------------------------------------------
    def settings(self) -> dict[str, Any]:
        """The model settings as the project file stores them with a run (no files, no project)."""
        return {
            "model": self.model,
            "units": self.units,
            "vocab_size": self.vocab_size,
            "merges": self.merges,
            "min_frequency": self.min_frequency,
            "special_tokens": list(self.special_tokens or ()),
            "end_of_word": self.end_of_word,
            "tie_break": self.tie_break,
            "sequences": self.sequences,
            "pretokenizer": self.pretokenizer,
            "normalizer": list(self.normalizer or ()),
            **dict(self.options),
            **({"sample_lines": self.sample_lines, "sample_seed": self.sample_seed} if self.sample_lines else {}),
            # only when given: the settings of runs without roles stay as they were
            **({"special_roles": dict(self.special_roles)} if self.special_roles else {}),
            **({"template": self.template} if self.template not in ("", "none") else {}),
        }

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"version": SPEC_VERSION}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "files":
                value = [cf.to_dict() for cf in value]
            elif isinstance(value, tuple):
                value = list(value)
            elif f.name in ("options", "special_roles"):
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
            if kwargs.get(name) is not None:  # None: the model family's default
                value = kwargs[name]
                if isinstance(value, str):
                    value = [value] if name == "special_tokens" else value.split(",")
                if not isinstance(value, list):
                    raise ConfigError(name, f"{_SETTING_NAMES[name]} setting must be a list")
                kwargs[name] = tuple(value)
        if "options" in kwargs and not isinstance(kwargs["options"], dict):
            raise ConfigError("options", "\"options\" must be an object of model settings")
        if "special_roles" in kwargs and not isinstance(kwargs["special_roles"], dict):
            raise ConfigError("special_roles", "\"special_roles\" must be an object of role → token")
        for name in ("units", "end_of_word", "pretokenizer", "tie_break", "sequences", "name", "model", "project",
                     "template"):
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
    declared = {o.name: o for o in family(model).options}
    out: dict[str, Any] = {}
    for name, value in dict(options).items():
        option = declared.get(name)
        if option is None:
            known = ", ".join(declared) or "none"
            raise ConfigError(f"options.{name}", f"{name.replace('_', ' ')} is not a setting of {model} "
                              f"(its settings: {known})")
        out[name] = check_option_value(option, value)
    for name, option in declared.items():
        out.setdefault(name, option.default)
    return out


def check_option_value(option: ModelOption, value: Any) -> Any:
    """``value`` as ``option`` takes it (an int for a whole-number option …); ConfigError naming
    ``options.NAME`` when it is of the wrong type or out of bounds."""
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
