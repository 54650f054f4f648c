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


def role_tokens(tokenizer: Tokenizer) -> dict[str, str]:
    """``{"bos_token": token, …}`` for each role the tokenizer has, in :data:`ROLES` order."""
    return {f"{role}_token": tokenizer.special_roles[role] for role in ROLES if role in tokenizer.special_roles}
