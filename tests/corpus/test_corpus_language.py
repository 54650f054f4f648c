"""A file's language from its name (Compare's default label), and that a user's label wins."""

from __future__ import annotations

import pytest

from workbench.corpus.language import language_from_name


@pytest.mark.parametrize("path, expected", [
    ("corpora/en_shakespeare.txt", "en"), ("de-news.2019.txt", "de"), ("europarl.fr.txt", "fr"),
    ("news.commentary.ru", "ru"), ("zh/part-00001", "zh"), ("data/JA_wiki.jsonl", "ja"),
    ("notes.txt", None), ("my_notes.txt", None), ("to-do.txt", None), ("readme.md", None),
    ("xx_unknown.txt", None), ("report.final.txt", None), ("en/", None),
    ("main.cs", None), ("app.ts", None), ("script.pl", None), ("id_list.txt", None), ("europarl-v7.de-en.de", "de"),
])
def test_language_from_name(path: str, expected: str | None) -> None:
    assert language_from_name(path) == expected


def test_compare_labels_the_demo_files_by_name_and_a_given_label_wins(tmp_path) -> None:
    from workbench.corpus import open_source
    from workbench.tasks.compare import compare_corpus

    en = tmp_path / "en_a.txt"
    en.write_text("hello world\n", encoding="utf-8")
    plain = tmp_path / "plain.txt"
    plain.write_text("Привет мир\n", encoding="utf-8")
    result = compare_corpus([], [open_source(en), open_source(plain)], labels={str(en): "english"})
    assert result is not None
    assert [f.language for f in result.files] == ["english", "Cyrillic"]
    result = compare_corpus([], [open_source(en), open_source(plain)])
    assert result is not None and [f.language for f in result.files] == ["en", "Cyrillic"]
