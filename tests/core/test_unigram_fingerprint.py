"""The Unigram trainer pinned: every event (EM round, pruning step, final cut: sizes, token counts,
log-likelihood to the last digit) and every final piece with its float32 score, on fixed inputs.

The comparison with ``sentencepiece`` tolerates a few per cent (the two trainers are not identical),
so a wrong M step (``log`` for digamma) or pruning one piece short passed it; this pin does not.
Any change to training results shows here: if it is intended (a fix, a new default), say so in the
commit and refresh the pin with ``WORKBENCH_REFRESH_PINS=1 pytest tests/core/test_unigram_fingerprint.py``.
Speed work must leave it unchanged (as ``bench/unigram_fingerprint.py`` does for the large cases).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from workbench.core.unigram import UnigramConfig, UnigramTrainer, count_spm_words
from workbench.corpus.demo import demo_corpus_files

PIN = Path(__file__).parent / "data" / "unigram_fingerprint.json"
CASES = {
    "demo_1000": UnigramConfig(vocab_size=1000),
    "demo_1200_plain_em_bytes_coverage": UnigramConfig(vocab_size=1200, bayesian=False, byte_fallback=True,
                                                       character_coverage=0.995),
}


def demo_lines() -> list[str]:
    return [line for path in sorted(demo_corpus_files())
            for line in path.read_text(encoding="utf-8").split("\n") if line]


def fingerprint(config: UnigramConfig) -> dict[str, list]:
    trainer = UnigramTrainer(count_spm_words(demo_lines()), config)
    events = [[e.step, e.phase, e.vocab_size, e.token_count, repr(e.log_likelihood)] for e in trainer.run()]
    tok = trainer.tokenizer()
    pieces = [[p.decode("utf-8", "backslashreplace"), repr(s)] for p, s in zip(tok.vocab, tok.scores)]
    return {"events": events, "pieces": pieces}


@pytest.mark.parametrize("case", sorted(CASES))
def test_training_results_are_unchanged(case):
    got = fingerprint(CASES[case])
    if os.environ.get("WORKBENCH_REFRESH_PINS"):
        pinned = json.loads(PIN.read_text(encoding="utf-8")) if PIN.exists() else {}
        pinned[case] = got
        PIN.write_text(json.dumps(pinned, ensure_ascii=False, indent=0, sort_keys=True), encoding="utf-8")
    want = json.loads(PIN.read_text(encoding="utf-8"))[case]
    assert len(got["events"]) == len(want["events"]) and len(got["pieces"]) == len(want["pieces"])
    for kind in ("events", "pieces"):
        for index, (a, b) in enumerate(zip(got[kind], want[kind])):
            assert a == b, f"{case}: {kind} {index} is {a}, was {b}"
