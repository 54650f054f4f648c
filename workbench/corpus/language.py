"""A corpus file's language from its name, the way parallel corpora name their files.

``en_wiki.txt``, ``de-news.txt``, ``europarl.de.txt``, ``news.en`` and ``zh/part-0001`` are the common
patterns (a language code as a name prefix, as a dotted infix or suffix, or as the folder name), so
Compare can label the demo corpus and most downloaded parallel sets without asking. Only ISO 639-1
codes count, and only in those positions; a prefix counts only when followed by ``_`` or ``-``, and
not for codes that are also English words people start file names with (``my_notes.txt`` is not
Burmese, ``to-do.txt`` not Tongan, ``id_list.txt`` not Indonesian), and a bare last suffix only in
a name with another dot before it (``main.cs`` is C#, not Czech). A label the user gives always wins.
Left out: language identification from the text itself
(the dominant script is the fallback, see ``CorpusStats.dominant_script``).
"""

from __future__ import annotations

import re
from pathlib import Path

#: ISO 639-1 codes (two letters), the ones corpora use in file names.
ISO_639_1 = frozenset("""
aa ab af ak am an ar as av ay az ba be bg bh bi bm bn bo br bs ca ce ch co cr cs cu cv cy da de dv dz ee el
en eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr ht hu hy hz ia id ie ig ii ik io is it
iu ja jv ka kg ki kj kk kl km kn ko kr ks ku kv kw ky la lb lg li ln lo lt lu lv mg mh mi mk ml mn mr ms mt
my na nb nd ne ng nl nn no nr nv ny oc oj om or os pa pi pl ps pt qu rm rn ro ru rw sa sc sd se sg si sk sl
sm sn so sq sr ss st su sv sw ta te tg th ti tk tl tn to tr ts tt tw ty ug uk ur uz ve vi vo wa wo xh yi yo
za zh zu""".split())

_WORDS = frozenset({"my", "to", "an", "as", "be", "or", "so", "no", "is", "am", "in", "on", "at", "it", "id", "ch"}
                   & ISO_639_1)
_PREFIX = re.compile(r"^([a-z]{2})[_-]", re.IGNORECASE)
_INFIX = re.compile(r"\.([a-z]{2})(?:\.|$)", re.IGNORECASE)
# A bare last suffix is a language only in names with another dot before it (``news.commentary.ru``,
# ``europarl-v7.de-en.de``): alone it is a file type far more often (``main.cs``, ``app.ts``, ``x.pl``).


def language_from_name(path: str | Path) -> str | None:
    """The ISO 639-1 code a file's name or folder gives, or None.

    >>> language_from_name("corpora/en_shakespeare.txt"), language_from_name("europarl.de.txt")
    ('en', 'de')
    >>> language_from_name("zh/part-0001"), language_from_name("notes.txt"), language_from_name("my_notes.txt")
    ('zh', None, None)
    """
    path = Path(path)
    name = path.name
    for pattern in (_PREFIX, _INFIX):
        for match in pattern.finditer(name):
            if pattern is _INFIX and match.end() == len(name) and name.count(".") < 2:
                continue
            code = match.group(1).lower()
            if code in ISO_639_1 and not (pattern is _PREFIX and code in _WORDS):
                return code
    folder = path.parent.name.lower()
    return folder if folder in ISO_639_1 else None
