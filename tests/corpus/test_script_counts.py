"""The fast script count (one Counter pass, each distinct character classified once) gives exactly
what the run-by-run regex count gives, on every shared corpus and on mixed edge cases."""

from __future__ import annotations

from workbench.corpus.stats import count_scripts, count_scripts_by_runs


def test_fast_script_count_equals_the_run_count_on_real_text(corpora):
    for path in sorted(corpora.glob("*.txt")):
        text = path.read_text(encoding="utf-8")[:400_000]
        assert count_scripts(text) == count_scripts_by_runs(text), path.name


def test_edge_characters_and_weights():
    text = "Ab\u3000Ж\t\x1b[0m 漢字かなカナ한글 देव ١٢ é\u0301 \U0001F600 \u2028x"
    assert count_scripts(text) == count_scripts_by_runs(text)
    assert count_scripts("ab", {"Latin": 1}, weight=3) == {"Latin": 7}


def test_scan_in_worker_processes_equals_the_scan_in_thread(corpora):
    """The Corpus tab's second core: same statistics, split by the same GPT-2 pattern."""
    from functools import partial

    from workbench.core.pretokenize import make_pretokenizer
    from workbench.corpus import file_stats, open_source
    from workbench.corpus.scan_pool import POOL_MIN_BYTES, ScanPool

    src = open_source(corpora / "ru_fortunes.txt")
    assert src.size >= POOL_MIN_BYTES
    split = partial(make_pretokenizer("gpt2").compiled().findall)
    pool = ScanPool("gpt2", workers=2)
    try:
        pooled = file_stats(src, pool=pool)
        assert pool._pool is not None  # it really went through the workers
    finally:
        pool.close()
    assert pooled == file_stats(src, split=split)
