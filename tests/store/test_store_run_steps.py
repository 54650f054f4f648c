"""Per-step rows (``run_steps``, schema 2): real Unigram and WordPiece runs on the demo corpus.

A Unigram run stores one row per EM round, pruning step and final cut — exactly the events its
trainer yields — and they land while it trains (batch by batch, not at the end). WordPiece with the
likelihood score keeps each merge's score there; BPE keeps nothing there (its steps are its merges).
"""

from __future__ import annotations

import math

import pytest

from workbench.corpus.demo import demo_corpus_files
from workbench.store import ProjectStore
from workbench.tasks import train
from workbench.tasks.spec import CorpusFile, RunSpec


def _spec(model: str, vocab_size: int, project, **options) -> RunSpec:
    files = tuple(CorpusFile(str(p), "text") for p in demo_corpus_files())
    pre = {"bpe": "gpt2", "wordpiece": "whitespace", "unigram": "metaspace"}[model]
    return RunSpec(files=files, model=model, vocab_size=vocab_size, units="chars" if model != "bpe" else "bytes",
                   pretokenizer=pre, project=str(project), options=options,
                   tie_break="first-seen" if model == "bpe" else "").validate()


def _trainer(spec: RunSpec):
    """The run's trainer, built from the same counts train_run uses."""
    counts, _sources = train.count_words(train.open_sources(spec.files),
                                         train.COUNTED_AS.get(spec.model, spec.pretokenizer), spec.normalizer,
                                         sequences=spec.sequences, cache=False)
    return train.TRAINERS[spec.model](counts, spec)


@pytest.fixture(scope="module")
def unigram_run(tmp_path_factory):
    project = tmp_path_factory.mktemp("steps") / "u.tokproj"
    spec = _spec("unigram", 1000, project)
    events = list(_trainer(spec).run())  # the oracle: the trainer's own events, run apart
    run_id, status = train.train_run(spec, count_cache=False)
    assert status == "finished"
    with ProjectStore.open(project, readonly=True) as store:
        rows = store.run_steps(run_id)
        info = store.run(run_id)
    return events, rows, info


def test_a_unigram_run_stores_one_row_per_event(unigram_run):
    events, rows, info = unigram_run
    assert len(rows) == len(events) > 4
    assert [(r.step, r.phase, r.vocab_size, r.token_count) for r in rows] == \
        [(e.step, e.phase, e.vocab_size, e.token_count) for e in events]
    for r, e in zip(rows, events):
        if math.isnan(e.log_likelihood):
            assert r.value is None  # a pruning step or the final cut has no likelihood: NULL
        else:
            assert r.value == pytest.approx(e.log_likelihood, rel=1e-12)
    assert info.merge_count == 0 and info.vocab_size == 1000


def test_unigram_rows_have_the_shape_of_the_algorithm(unigram_run):
    _events, rows, _info = unigram_run
    phases = [r.phase for r in rows]
    assert phases[-1] == "final" and phases.count("final") == 1
    assert "prune" in phases and phases[0] == "em"
    assert rows[-1].vocab_size == 1000
    # Pruning only shrinks; EM rounds keep the size or drop rare pieces, never grow it.
    sizes = [r.vocab_size for r in rows[:-1]]
    assert all(b <= a for a, b in zip(sizes, sizes[1:]))
    for a, b in zip(rows, rows[1:]):
        if b.phase == "prune":
            assert b.vocab_size < a.vocab_size
    # Every EM round has a finite, negative log-likelihood; fewer pieces explain the corpus less
    # well, so the first EM round (the most pieces) beats the last.
    em = [r.value for r in rows if r.phase == "em"]
    assert all(v is not None and math.isfinite(v) and v < 0 for v in em)
    assert em[0] > em[-1]


def test_unigram_rows_land_while_it_trains(tmp_path):
    """Driven the way train_run drives it: after each hand-over the new steps are committed."""
    project = tmp_path / "live.tokproj"
    trainer = _trainer(_spec("unigram", 1000, project))
    with ProjectStore.open(project, create=True) as store:
        run_id = store.create_run("u", {"model": "unigram"}, [], list(trainer.initial_vocab),
                                  list(trainer.initial_kinds))
        seen = []
        with store.run_writer(run_id) as writer:
            for event in trainer.run():
                writer.add_log(trainer.log)
                writer.flush()
                seen.append(len(store.run_steps(run_id)))
                assert store.run_steps(run_id, since_step=event.step - 1)[0].step == event.step
        assert seen == list(range(1, len(seen) + 1))
        assert writer.batches == len(seen)


def test_wordpiece_likelihood_keeps_each_merges_score_and_bpe_keeps_none(tmp_path):
    project = tmp_path / "wp.tokproj"
    spec = _spec("wordpiece", 2300, project, wordpiece_score="likelihood")
    trainer = _trainer(spec)
    for _event in trainer.run():
        pass
    wp_id, status = train.train_run(spec, count_cache=False)
    assert status == "finished"
    bpe_id, _ = train.train_run(_spec("bpe", 600, project), count_cache=False)
    freq_id, _ = train.train_run(_spec("wordpiece", 2300, project, wordpiece_score="frequency"),
                                 count_cache=False)
    with ProjectStore.open(project, readonly=True) as store:
        rows = store.run_steps(wp_id)
        merges = store.steps(wp_id)
        assert len(rows) == len(merges) == len(trainer.scores) > 100
        assert {r.phase for r in rows} == {"merge"}
        assert [r.value for r in rows] == trainer.scores
        assert [(r.step, r.vocab_size, r.token_count) for r in rows] == \
            [(m.step, m.vocab_size, m.token_count) for m in merges]
        assert store.run_steps(bpe_id) == [] and store.merge_count(bpe_id) == 600 - 256
        assert store.run_steps(freq_id) == []  # its score is the frequency the merges row holds
        store_ids = {r.id for r in store.runs()}
    # Deleting a run deletes its step rows.
    with ProjectStore.open(project) as store:
        store.delete_run(wp_id)
        assert store.run_steps(wp_id) == [] and {r.id for r in store.runs()} == store_ids - {wp_id}
