"""A small multi-parallel text for the tests that need one: articles 1–5 of the Universal Declaration
of Human Rights (United Nations, 1948) in English, German, Russian and Chinese, one article per
line — the same content in each language, as parity-aware BPE's development set must be.

The shared corpora are not translations of each other, so they cannot serve here.
"""

from __future__ import annotations

from pathlib import Path

UDHR_1_TO_5: dict[str, tuple[str, ...]] = {
    "en": (
        "All human beings are born free and equal in dignity and rights. They are endowed with reason and "
        "conscience and should act towards one another in a spirit of brotherhood.",
        "Everyone is entitled to all the rights and freedoms set forth in this Declaration, without distinction "
        "of any kind, such as race, colour, sex, language, religion, political or other opinion, national or "
        "social origin, property, birth or other status.",
        "Everyone has the right to life, liberty and security of person.",
        "No one shall be held in slavery or servitude; slavery and the slave trade shall be prohibited in all "
        "their forms.",
        "No one shall be subjected to torture or to cruel, inhuman or degrading treatment or punishment.",
    ),
    "de": (
        "Alle Menschen sind frei und gleich an Würde und Rechten geboren. Sie sind mit Vernunft und Gewissen "
        "begabt und sollen einander im Geist der Brüderlichkeit begegnen.",
        "Jeder hat Anspruch auf alle in dieser Erklärung verkündeten Rechte und Freiheiten ohne irgendeinen "
        "Unterschied, etwa nach Rasse, Hautfarbe, Geschlecht, Sprache, Religion, politischer oder sonstiger "
        "Überzeugung, nationaler oder sozialer Herkunft, Vermögen, Geburt oder sonstigem Stand.",
        "Jeder hat das Recht auf Leben, Freiheit und Sicherheit der Person.",
        "Niemand darf in Sklaverei oder Leibeigenschaft gehalten werden; Sklaverei und Sklavenhandel sind in "
        "allen ihren Formen verboten.",
        "Niemand darf der Folter oder grausamer, unmenschlicher oder erniedrigender Behandlung oder Strafe "
        "unterworfen werden.",
    ),
    "ru": (
        "Все люди рождаются свободными и равными в своем достоинстве и правах. Они наделены разумом и совестью "
        "и должны поступать в отношении друг друга в духе братства.",
        "Каждый человек должен обладать всеми правами и всеми свободами, провозглашенными настоящей "
        "Декларацией, без какого бы то ни было различия, как-то в отношении расы, цвета кожи, пола, языка, "
        "религии, политических или иных убеждений, национального или социального происхождения, "
        "имущественного, сословного или иного положения.",
        "Каждый человек имеет право на жизнь, на свободу и на личную неприкосновенность.",
        "Никто не должен содержаться в рабстве или в подневольном состоянии; рабство и работорговля "
        "запрещаются во всех их видах.",
        "Никто не должен подвергаться пыткам или жестоким, бесчеловечным или унижающим его достоинство "
        "обращению и наказанию.",
    ),
    "zh": (
        "人人生而自由，在尊严和权利上一律平等。他们赋有理性和良心，并应以兄弟关系的精神相对待。",
        "人人有资格享有本宣言所载的一切权利和自由，不分种族、肤色、性别、语言、宗教、政治或其他见解、国籍或社会出身、"
        "财产、出生或其他身分等任何区别。",
        "人人有权享有生命、自由和人身安全。",
        "任何人不得使为奴隶或奴役；一切形式的奴隶制度和奴隶买卖，均应予以禁止。",
        "任何人不得加以酷刑，或施以残忍的、不人道的或侮辱性的待遇或刑罚。",
    ),
}


def write_parallel(folder: Path, languages: tuple[str, ...]) -> list[Path]:
    """``<lang>_dev.txt`` for each language in ``folder`` (one article a line); their paths, in order."""
    paths = []
    for lang in languages:
        path = folder / f"{lang}_dev.txt"
        path.write_text("\n".join(UDHR_1_TO_5[lang]) + "\n", encoding="utf-8")
        paths.append(path)
    return paths
