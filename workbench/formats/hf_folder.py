"""A Hugging Face tokenizer folder: what ``AutoTokenizer.from_pretrained(DIR)`` loads.

Three files, no ``config.json`` needed:

* ``tokenizer.json`` — :func:`~workbench.formats.hf_json.render_hf_json`, with the run's
  post-processor template;
* ``tokenizer_config.json`` — ``tokenizer_class: PreTrainedTokenizerFast`` (the class that runs
  ``tokenizer.json`` as it is, whatever the model family), the special tokens by role
  (``bos_token`` …), ``model_max_length``, ``clean_up_tokenization_spaces: false`` (decoding must
  give the workbench's text, not one with " ," → ","), ``added_tokens_decoder`` (older loaders read
  the special tokens from it), ``add_bos_token``/``add_eos_token`` and an optional
  ``chat_template``;
* ``special_tokens_map.json`` — the roles again, as older loaders read them.

``add_bos_token`` is written for the ``none`` and ``llama`` templates only: ``transformers``
(5.x) rebuilds the post-processor from ``add_bos_token``/``add_eos_token`` whenever either is
given, which for ``llama`` is exactly the template in ``tokenizer.json`` (``<s> A``, ``<s> A <s> B``)
and for ``none`` adds nothing — but would replace BERT's ``[CLS] A [SEP]``; so a ``bert`` folder
leaves both out and the loader keeps ``tokenizer.json``'s template.

Left out: ``config.json`` (a model's, not a tokenizer's), slow-tokenizer files (``vocab.txt``,
``tokenizer.model``), padding side and truncation settings.
"""

from __future__ import annotations

import json

from workbench.core.model import Tokenizer
from workbench.errors import WorkbenchError
from workbench.formats.hf_json import render_hf_json
from workbench.formats.hf_roles import role_tokens

#: The files of the folder, in the order they are written and listed.
FOLDER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")
#: What transformers itself writes for "no known limit" (its VERY_LARGE_INTEGER, int(1e30)).
NO_MAX_LENGTH = int(1e30)


def _json_bytes(document: dict) -> bytes:
    return (json.dumps(document, ensure_ascii=False, indent=2) + "\n").encode("utf-8")


def tokenizer_config(tokenizer: Tokenizer, *, model_max_length: int | None = None,
                     chat_template: str | None = None) -> dict:
    """The ``tokenizer_config.json`` document for ``tokenizer`` (see the module docstring)."""
    if model_max_length is not None and model_max_length <= 0:
        raise WorkbenchError(f"the model's maximum length must be a positive number, not {model_max_length}")
    config: dict = {"tokenizer_class": "PreTrainedTokenizerFast",
                    "model_max_length": model_max_length or NO_MAX_LENGTH,
                    "clean_up_tokenization_spaces": False}
    config.update(role_tokens(tokenizer))
    if tokenizer.template in ("none", "llama"):
        config["add_bos_token"] = tokenizer.template == "llama"
        config["add_eos_token"] = False
    config["added_tokens_decoder"] = {
        str(token_id): {"content": text, "lstrip": False, "normalized": False, "rstrip": False,
                        "single_word": False, "special": True}
        for text, token_id in sorted(tokenizer.special_tokens.items(), key=lambda item: item[1])}
    if chat_template is not None:
        if not chat_template.strip():
            raise WorkbenchError("the chat template file is empty: give a Jinja template or leave --chat-template out")
        config["chat_template"] = chat_template
    return config


def render_hf_folder(tokenizer: Tokenizer, *, model_max_length: int | None = None,
                     chat_template: str | None = None, legacy_merges: bool = False) -> tuple[list[bytes], list[str]]:
    """The bytes of :data:`FOLDER_FILES`, in that order, and notes."""
    data, notes = render_hf_json(tokenizer, legacy_merges=legacy_merges)
    config = tokenizer_config(tokenizer, model_max_length=model_max_length, chat_template=chat_template)
    inferred = role_tokens(tokenizer)
    if not tokenizer.special_roles and inferred:
        notes.append("the run sets no special-token roles: taken from its tokens' conventional names ("
                     + ", ".join(f"{k.removesuffix('_token')} {v}" for k, v in inferred.items())
                     + "); train with --special ROLE=TOKEN to choose them")
    elif not tokenizer.special_roles:
        notes.append("the run has no special-token roles: model code finds no bos/eos/pad token "
                     "(train with --special ROLE=TOKEN to give them)")
    return [data, _json_bytes(config), _json_bytes(role_tokens(tokenizer))], notes
