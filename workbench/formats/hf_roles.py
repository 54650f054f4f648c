"""A tokenizer's special-token roles and template in Hugging Face's terms.

One place for what ``tokenizer.json`` and the ``hf-folder`` files say about special tokens:

* :func:`post_processor_json` — the ``TemplateProcessing`` a ``tokenizer.json`` carries for the
  ``bert`` and ``llama`` templates (None for ``none``: a run without a template adds nothing, and
  its tokenizer.json stays as it was before roles existed);
* :func:`role_tokens` — ``{"bos_token": "<s>", …}``, the keys ``transformers`` reads from
  ``tokenizer_config.json`` and ``special_tokens_map.json``.

The pair template is the one ``transformers`` itself builds: BERT's ``[CLS] A [SEP] B [SEP]``
(second text type 1) and, for ``llama``, ``<s> A <s> B`` (its ``update_post_processor`` with
``add_bos_token``), so a loader that rebuilds the template from ``add_bos_token`` gets the same.
Left out: truncation, padding, ``add_eos_token`` templates (no preset asks for them yet).
"""

from __future__ import annotations

from workbench.core.model import Tokenizer
from workbench.core.special_roles import ROLES, TEMPLATES


def _item(kind: str, name: str, type_id: int) -> dict:
    return {kind: {"id": name, "type_id": type_id}}


def post_processor_json(tokenizer: Tokenizer) -> dict | None:
    """The ``post_processor`` of a tokenizer.json for ``tokenizer.template`` (None: none)."""
    if tokenizer.template == "none" or tokenizer.template not in TEMPLATES:
        return None
    before, after, _label = TEMPLATES[tokenizer.template]
    roles = tokenizer.special_roles
    heads = [roles[r] for r in before]
    tails = [roles[r] for r in after]
    single = [*(_item("SpecialToken", t, 0) for t in heads), _item("Sequence", "A", 0),
              *(_item("SpecialToken", t, 0) for t in tails)]
    if tokenizer.template == "bert":  # [CLS] A [SEP] B [SEP]: the second text's own heads are not repeated
        pair = [*single, _item("Sequence", "B", 1), *(_item("SpecialToken", t, 1) for t in tails)]
    else:
        pair = [*single, *(_item("SpecialToken", t, 1) for t in heads), _item("Sequence", "B", 1),
                *(_item("SpecialToken", t, 1) for t in tails)]
    used = dict.fromkeys([*heads, *tails])
    return {
        "type": "TemplateProcessing", "single": single, "pair": pair,
        "special_tokens": {t: {"id": t, "ids": [tokenizer.special_tokens[t]], "tokens": [t]} for t in used},
    }


#: Special tokens whose name says their role in every model family that uses them: a run without
#: roles set (the default) still tells model code its pad/unk/cls/sep/mask token by these. Names that
#: serve several roles by convention (GPT-2's ``<|endoftext|>``) are left out: say them with --special.
CONVENTIONAL_ROLES = {"[PAD]": "pad", "[UNK]": "unk", "[CLS]": "cls", "[SEP]": "sep", "[MASK]": "mask",
                      "<pad>": "pad", "<unk>": "unk", "<s>": "bos", "</s>": "eos", "<mask>": "mask"}


def roles_of(tokenizer: Tokenizer) -> dict[str, str]:
    """The roles set on the run, or — when none is — those its special tokens' conventional names
    say (plus its unknown token as ``unk``). Only names and ids: the template, which changes ids,
    is never inferred."""
    if tokenizer.special_roles:
        return dict(tokenizer.special_roles)
    roles = {CONVENTIONAL_ROLES[t]: t for t in tokenizer.special_tokens if t in CONVENTIONAL_ROLES}
    if tokenizer.unk_token and tokenizer.unk_token in tokenizer.special_tokens:
        roles["unk"] = tokenizer.unk_token
    return roles


def role_tokens(tokenizer: Tokenizer) -> dict[str, str]:
    """``{"bos_token": token, …}`` for each role of :func:`roles_of`, in :data:`ROLES` order."""
    roles = roles_of(tokenizer)
    return {f"{role}_token": roles[role] for role in ROLES if role in roles}
