"""The pre-flight estimate, sampling by lines, and the estimate recorded beside what a run used —
on slices of the real shared corpora, through the real CLI and a real project file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.cli import run_cli
from workbench.corpus.counts import count_sources
from workbench.corpus.sampling import reservoir_lines
from workbench.store import ProjectStore
from workbench.tasks import calibration
from workbench.tasks.preflight import estimate, estimate_ratios, heaps_extrapolate
from workbench.tasks.spec import RunSpec
from workbench.tasks.train import open_sources, resolve_files

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def rates(tmp_path, monkeypatch) -> calibration.Rates:
    """The development machine's rates, cached as this machine's: no calibration run in tests."""
    path = tmp_path / "calibration.json"
    rates = calibration.DEFAULT_RATES
    path.write_text(json.dumps({"key": calibration.machine_key(), "rates": calibration._rates_dict(rates)}))
    monkeypatch.setenv(calibration.CALIBRATION_ENV, str(path))
    return rates


def _slice(corpora, tmp_path: Path, name: str, size: int) -> Path:
    src = next(p for p in corpora if p.name.startswith(name))
    out = tmp_path / f"{name}.txt"
    data = src.read_bytes()[:size]
    out.write_bytes(data[: data.rfind(b"\n") + 1])
    return out


def test_heaps_extrapolation_brackets_the_real_count(corpora, tmp_path):
    """From a 150 KB sample of 1 MB of Russian prose, the range holds the distinct pre-tokens counted."""
    path = _slice(corpora, tmp_path, "ru", 1 << 20)
    spec = RunSpec(files=resolve_files([str(path)]), vocab_size=1000)
    est = estimate(spec, budget=150_000)
    actual = len(count_sources(open_sources(spec.validate().files), pretokenizer="gpt2"))
    assert not est.exact and est.sample_bytes < 300_000
    assert est.distinct_low <= actual <= est.distinct_high, (est.distinct_low, actual, est.distinct_high)
    assert 0.7 < est.distinct / actual < 1.4
    assert abs(est.text_bytes - path.stat().st_size) < 0.02 * path.stat().st_size
    assert est.train_peak > est.count_peak > calibration.DEFAULT_RATES.base_rss


def test_whole_corpus_sample_is_exact(corpora, tmp_path):
    path = _slice(corpora, tmp_path, "de", 40_000)
    spec = RunSpec(files=resolve_files([str(path)]), vocab_size=400)
    est = estimate(spec)
    actual = count_sources(open_sources(spec.validate().files), pretokenizer="gpt2")
    assert est.exact and est.distinct == est.distinct_low == est.distinct_high == len(actual)
    assert est.lines == path.read_text(encoding="utf-8").count("\n")
    assert est.tokens == sum(actual.values())


def test_heaps_points_below_the_sample_are_read_off():
    points = [(100, 80), (1000, 500), (10_000, 3000)]
    est, low, high, _k, beta = heaps_extrapolate(points, 1000)
    assert est == 500 and low < est < high
    est, low, high, _k, beta = heaps_extrapolate(points, 100_000)
    assert 3000 < est < 100_000 and low < est < high and 0 < beta < 1


def test_dry_run_prints_the_estimate_and_stores_nothing(corpora, tmp_path, capsys):
    path = _slice(corpora, tmp_path, "en_shakespeare", 200_000)
    project = tmp_path / "p.tokproj"
    code = run_cli(["train", str(path), "--vocab-size", "600", "--project", str(project), "--dry-run", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and not project.exists()
    assert out["exact"] and out["lines"] > 1000 and out["distinct"] > 1000 and out["train_s"] > 0
    assert out["peak"] == out["train_peak"] and out["available"] > 0 and "Heaps" in out["method"]
    # the names PRODUCT.md's CLI block promises
    assert out["distinct_pretokens"] == out["distinct"] and out["peak_memory_bytes"] == out["peak"]
    assert out["bytes"] > 0 and out["seconds"] > 0
    code = run_cli(["train", str(path), "--vocab-size", "600", "--dry-run"])  # no project needed
    text = capsys.readouterr().out
    assert code == 0 and "distinct pre-tokens" in text and "peak memory" in text


def test_memory_warning_offers_both_remedies(corpora, tmp_path):
    from dataclasses import replace

    path = _slice(corpora, tmp_path, "en_shakespeare", 100_000)
    est = estimate(RunSpec(files=resolve_files([str(path)]), vocab_size=600))
    assert not est.memory_short and est.warning() == ""
    short = replace(est, available=est.train_peak_high // 2)
    warning = short.warning()
    assert short.memory_short and "--sample-lines" in warning and "examples/dask_count.py" in warning
    suggested = int(warning.split("--sample-lines ")[1].split(")")[0].replace(",", ""))
    assert 1000 <= suggested < est.lines


def test_reservoir_is_seeded_uniform_and_in_corpus_order(corpora, tmp_path):
    a = _slice(corpora, tmp_path, "de", 60_000)
    b = _slice(corpora, tmp_path, "ru", 60_000)
    sources = open_sources(resolve_files([str(a), str(b)]))
    lines, total = reservoir_lines(sources, 300, seed=7)
    again, _ = reservoir_lines(open_sources(resolve_files([str(a), str(b)])), 300, seed=7)
    other, _ = reservoir_lines(open_sources(resolve_files([str(a), str(b)])), 300, seed=8)
    everything = a.read_text(encoding="utf-8").splitlines(keepends=True) + \
        b.read_text(encoding="utf-8").splitlines(keepends=True)
    assert total == len(everything) and len(lines) == 300 and lines == again and lines != other
    walk = iter(everything)
    assert all(any(line == seen for seen in walk) for line in lines)  # a subsequence: corpus order
    # Both files are drawn from about in proportion to their lines.
    from_a = sum(1 for line in lines if line in set(a.read_text(encoding="utf-8").splitlines(keepends=True)))
    share_a = a.read_text(encoding="utf-8").count("\n") / total
    assert abs(from_a / 300 - share_a) < 0.15
    small, n = reservoir_lines(open_sources(resolve_files([str(a)])), 10**6)
    assert len(small) == n  # fewer lines than asked: all of them


def test_sampled_run_records_sample_estimate_and_overlap(corpora, tmp_path, monkeypatch, capsys):
    """A sampled and a full run: settings record the sample, the estimate and what was used; the
    run history shows the ratio and the sampled vocabulary's overlap with the full one."""
    path = _slice(corpora, tmp_path, "en_shakespeare", 150_000)
    project = tmp_path / "p.tokproj"
    base = ["train", str(path), "--vocab-size", "500", "--project", str(project), "--progress", "none", "--estimate"]
    assert run_cli([*base, "--sample-lines", "2000", "--seed", "3"]) == 0
    assert run_cli(base) == 0
    capsys.readouterr()
    with ProjectStore.open(project, readonly=True) as store:
        sampled, full = sorted(store.runs(), key=lambda r: r.id)
    assert sampled.settings["sample_lines"] == 2000 and sampled.settings["sample_seed"] == 3
    # the automatic name says it is a sample; the full run's does not
    assert sampled.name.endswith("· sample of 2,000 lines") and "sample" not in full.name
    assert sampled.settings["sampled_from_lines"] > 2000
    assert sampled.settings["distinct_pretokens"] < full.settings["distinct_pretokens"]
    for run in (sampled, full):
        assert run.settings["estimate"]["distinct"] > 0 and run.timings["peak_rss_mb"] > 0
        ratios = estimate_ratios(run.settings, run.timings)
        assert ratios is not None and ratios.memory and ratios.time
    assert estimate_ratios(full.settings, full.timings).distinct == 1.0  # the whole file was the sample
    assert 0.8 < estimate_ratios(sampled.settings, sampled.timings).distinct < 1.25
    assert run_cli(["runs", str(project)]) == 0
    text = capsys.readouterr().out
    assert "actual ÷ estimate: distinct ×1.00" in text
    assert f"sample of 2,000 of {sampled.settings['sampled_from_lines']:,} lines" in text
    assert f"of run {full.id}'s vocabulary" in text
    assert run_cli(["runs", str(project), "--json"]) == 0
    rows = {r["id"]: r for r in json.loads(capsys.readouterr().out)}
    overlap = rows[sampled.id]["sample_overlap"]
    assert overlap["full_run"] == full.id and 0.5 < overlap["share"] < 1.0
    assert overlap["shared"] + overlap["only_full"] == 500 - 256
    assert rows[full.id]["sample_overlap"] is None and rows[full.id]["estimate_ratio"]["distinct"] == 1.0


def test_sampling_refusals(corpora, tmp_path, capsys):
    path = _slice(corpora, tmp_path, "de", 20_000)
    project = str(tmp_path / "p.tokproj")
    assert run_cli(["train", str(path), "--vocab-size", "300", "--project", project, "--sample-lines", "0"]) == 2
    assert "--sample-lines" in capsys.readouterr().err
    assert run_cli(["train", str(path), "--vocab-size", "300", "--project", project, "--sample-lines", "10",
                    "--sequences", "documents"]) == 2
    assert "sampling draws lines" in capsys.readouterr().err


def test_damaged_estimate_is_named(tmp_path):
    from workbench.store.validate import DamagedValue, settings

    with pytest.raises(DamagedValue, match="estimate"):
        settings(json.dumps({"estimate": {"distinct": "many"}}), "run 1")


def test_calibration_child_measures_this_machine(tmp_path):
    """One family's calibration in a fresh child: memory and time rates that mean something."""
    rates = calibration.calibrate_here(("wordpiece",))
    wp = rates.trainers["wordpiece"]
    assert rates.measured and rates.base_rss > 5 << 20 and rates.count_factor >= 1.0
    assert wp.bytes_per_symbol > 0 and wp.symbols > 10_000 and wp.total_s > 0 and 0.3 <= wp.gamma <= 1.2
    assert wp.seconds(wp.symbols * 2, 1000) > wp.seconds(wp.symbols, 1000)


def test_cli_module_runs_dry_run_in_a_fresh_process(corpora, tmp_path):
    path = _slice(corpora, tmp_path, "zh", 30_000)
    out = subprocess.run([sys.executable, "-m", "workbench", "train", str(path), "--vocab-size", "500",
                          "--dry-run", "--json"], capture_output=True, text=True, cwd=ROOT, timeout=120,
                         env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["calibrated"] is True


def test_a_run_short_of_memory_is_warned_before_it_starts(corpora, tmp_path, monkeypatch, capsys):
    """The CLI says the warning (with both remedies) as a note before counting, then trains as asked."""
    from workbench.tasks import preflight

    monkeypatch.setattr(preflight, "available_memory", lambda: 1 << 20)
    path = _slice(corpora, tmp_path, "de", 30_000)
    assert run_cli(["train", str(path), "--vocab-size", "300", "--project", str(tmp_path / "p.tokproj"),
                    "--estimate", "--progress", "none"]) == 0
    err = capsys.readouterr().err
    assert "note: projected peak memory up to" in err and "exceeds the 1.0 MB free" in err
    assert "--sample-lines" in err and "examples/dask_count.py" in err
