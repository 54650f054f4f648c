"""Special-token roles and the post-processor template: what a special token *is for*.

A run's special tokens are only reserved ids until something says which one begins a text, which
ends it, pads a batch or stands for an unknown word. Model code asks exactly that
(``tokenizer.bos_token``, ``cls_token`` …) and a ``tokenizer.json`` post-processor adds some of
them around every encoded text. This module holds the vocabulary of those facts, once:

* :data:`ROLES` — ``bos eos unk pad mask cls sep``, the names ``transformers`` uses (``bos_token`` …);
* :data:`TEMPLATES` — what the post-processor adds around one text (and a pair): ``none``, ``bert``
  (``[CLS] A [SEP]`` / ``[CLS] A [SEP] B [SEP]``) and ``llama`` (``<s> A`` / ``<s> A <s> B``, the
  template ``transformers`` builds from ``add_bos_token``);
* :func:`check_roles`, the one rule set (a role names a special token; a template has the roles it
  places), and :func:`with_template`, the ids a post-processor gives for one text.

Left out: how a run gets its roles (``RunSpec``), how formats write them (``formats/``), pairs of
texts in :func:`with_template` (the workbench encodes one text at a time), and truncation/padding.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from workbench.errors import ConfigError

#: The roles, in the order files list them (transformers' SPECIAL_TOKENS_ATTRIBUTES order).
ROLES: tuple[str, ...] = ("bos", "eos", "unk", "sep", "pad", "cls", "mask")

#: template → (roles it places around one text: before, after), and a line for people.
TEMPLATES: dict[str, tuple[tuple[str, ...], tuple[str, ...], str]] = {
    "none": ((), (), "no special tokens added"),
    "bert": (("cls",), ("sep",), "[CLS] text [SEP] (BERT)"),
    "llama": (("bos",), (), "<s> text (Llama)"),
}


def parse_role(item: str) -> tuple[str, str] | None:
    """``"cls=[CLS]"`` → ``("cls", "[CLS]")``; None when ``item`` does not start with a role name
    and ``=`` (then it is a plain special token)."""
    role, sep, token = item.partition("=")
    if sep and role.strip().lower() in ROLES:
        return role.strip().lower(), token
    return None


def check_roles(roles: Mapping[str, str], template: str, specials: Sequence[str] | None = None,
                field: str = "special_roles") -> None:
    """Raise :class:`ConfigError` unless every role is known and names a token, ``template`` is
    one of :data:`TEMPLATES` with the roles it places, and (when ``specials`` is given) every
    role's token is one of them."""
    if not isinstance(roles, Mapping):
        raise ConfigError(field, "special roles must be an object of role → token")
    for role, token in roles.items():
        if role not in ROLES:
            raise ConfigError(field, f"{role!r} is not a special-token role: use one of {', '.join(ROLES)}")
        if not isinstance(token, str) or not token:
            raise ConfigError(field, f"the {role} role needs a token, e.g. {role}={_EXAMPLE[role]}")
        if specials is not None and token not in specials:
            raise ConfigError(field, f"the {role} role names {token!r}, which is not a special token of this "
                              "tokenizer: add it to the special tokens")
    if template not in TEMPLATES:
        raise ConfigError("template", f"unknown post-processor template {template!r}: use one of "
                          f"{', '.join(TEMPLATES)}")
    before, after, _label = TEMPLATES[template]
    missing = [role for role in (*before, *after) if role not in roles]
    if missing:
        raise ConfigError("template", f"the {template} template places {' and '.join(missing)}: give "
                          + " ".join(f"{role}=TOKEN" for role in missing) + " as special roles")


_EXAMPLE = {"bos": "<s>", "eos": "</s>", "unk": "<unk>", "pad": "<pad>", "mask": "[MASK]", "cls": "[CLS]",
            "sep": "[SEP]"}


def template_ids(roles: Mapping[str, str], template: str,
                 special_tokens: Mapping[str, int]) -> tuple[list[int], list[int]]:
    """(ids before, ids after) one text under ``template``."""
    before, after, _label = TEMPLATES.get(template, TEMPLATES["none"])
    return ([special_tokens[roles[r]] for r in before], [special_tokens[roles[r]] for r in after])


def with_template(ids: Sequence[int], roles: Mapping[str, str], template: str,
                  special_tokens: Mapping[str, int]) -> list[int]:
    """One text's ids as a post-processor with ``template`` gives them (``add_special_tokens=True``)."""
    before, after = template_ids(roles, template, special_tokens)
    return [*before, *ids, *after]
