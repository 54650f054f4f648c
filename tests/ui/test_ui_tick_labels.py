"""Tick labels of every plot (issue 19): never repeated, never wrong, small log values shown.

Each case is an axis range a real run produced (the corpus-token axis of a WordPiece run read
``5.1M`` seven times, a flat compression curve ``1.25`` four times, WordPiece's log score axis ``0``
for 0.001) and goes through the real pyqtgraph ``AxisItem`` subclass: its ``tickValues`` and
``tickStrings``, as ``generateDrawSpecs`` calls them. A hypothesis test then tries any range.
"""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from workbench.ui.plot_labels import TickAxis, linear_labels, log_labels

_SUFFIX = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9}


def parse(label: str) -> float:
    """The number a label stands for: 5,000 · 20k · 1.25M · 0.001 · 1e-4 · -14M."""
    match = re.fullmatch(r"(-?[\d,]*\.?\d+(?:e-?\d+)?)([kMG]?)", label)
    assert match, f"not a number label: {label!r}"
    return float(match.group(1).replace(",", "")) * _SUFFIX[match.group(2)]


def axis_ticks(qapp, low: float, high: float, *, log: bool = False, size: float = 200.0):
    """(tick value, label) of every labelled tick the axis draws for this range, all levels."""
    axis = TickAxis("left")
    axis.setLogMode(False, log) if _takes_two(axis) else axis.setLogMode(log)
    axis.setRange(low, high)
    out = []
    for spacing, values in axis.tickValues(low, high, size):
        strings = axis.tickStrings(values, axis.autoSIPrefixScale * axis.scale, spacing)
        assert len(strings) == len(values)
        out += [(10 ** v if log else v, s) for v, s in zip(values, strings) if s and low <= v <= high]
    return out


def _takes_two(axis: TickAxis) -> bool:
    import inspect

    return len(inspect.signature(axis.setLogMode).parameters) >= 2


def assert_readable(ticks, *, relative: float = 1e-3) -> None:
    labels = [s for _v, s in ticks]
    assert len(ticks) >= 2, ticks
    assert len(set(labels)) == len(labels), f"repeated labels: {labels}"
    for value, label in ticks:
        assert math.isclose(parse(label), value, rel_tol=relative, abs_tol=1e-12), (value, label, labels)


@pytest.mark.parametrize(("low", "high"), [
    (5_122_900, 5_129_700),    # WordPiece's corpus tokens: 5.1M ×7 before
    (3_000_000, 3_150_000),    # a bigger corpus: 3M 3M 3M before
    (-18_300_000, -13_900_000),  # Unigram's log-likelihood per EM round
    (0, 8_700_000),
    (-400, 10_400),
    (6_200, 8_050),            # |V| of a WordPiece run: plain numbers with separators
])
def test_large_linear_ranges_read_distinct_labels_with_one_suffix(qapp, low, high) -> None:
    ticks = axis_ticks(qapp, low, high)
    assert_readable(ticks)
    suffixes = {re.sub(r"[-\d.,]", "", s) for _v, s in ticks if s != "0"}
    assert len(suffixes) == 1, ticks  # one SI suffix on the whole axis, not 950 · 1k · 1.5k
    if max(abs(low), abs(high)) < 1e4:
        assert suffixes == {""} and any("," in s for _v, s in ticks)


def test_corpus_tokens_that_differ_by_thousands_are_told_apart(qapp) -> None:
    labels = [s for _v, s in axis_ticks(qapp, 5_122_900, 5_129_700)]
    assert "5.1M" not in labels and any(s.startswith("5.12") and s.endswith("M") for s in labels), labels


@pytest.mark.parametrize(("low", "high"), [(1.2428, 1.2446), (1.249, 1.2512), (0.998, 1.002), (2.9, 3.55)])
def test_a_flat_compression_curve_gets_as_many_decimals_as_it_needs(qapp, low, high) -> None:
    assert_readable(axis_ticks(qapp, low, high))


def test_log_axis_shows_small_scores_as_they_are(qapp) -> None:
    # WordPiece likelihood scores from 0.0009 to 1.2: before, 0.001 read "0".
    ticks = axis_ticks(qapp, math.log10(0.0009), math.log10(1.2), log=True)
    assert_readable(ticks)
    assert [s for _v, s in ticks] == ["0.001", "0.01", "0.1", "1"]
    deeper = axis_ticks(qapp, math.log10(3e-5), math.log10(0.002), log=True)
    assert_readable(deeper)
    assert {"1e-4", "0.001"} <= {s for _v, s in deeper}
    assert "0" not in {s for _v, s in deeper}


def test_log_axis_of_counts_labels_the_decades_with_suffixes(qapp) -> None:
    ticks = axis_ticks(qapp, math.log10(180), math.log10(210_000), log=True)
    assert [s for _v, s in ticks] == ["1,000", "10k", "100k"]
    assert_readable(ticks)


@pytest.mark.parametrize(("low", "high"), [(2.9e-5, 3.2e-5), (4.1e-4, 4.9e-4), (140, 190), (0.21, 0.26)])
def test_less_than_a_decade_on_a_log_axis_still_gets_several_true_labels(qapp, low, high) -> None:
    ticks = axis_ticks(qapp, math.log10(low), math.log10(high), log=True)
    assert len(ticks) >= 3, ticks
    assert_readable(ticks)


def test_the_formatter_functions_agree_with_the_axis() -> None:
    assert linear_labels([5_123_000, 5_124_000, 5_125_000], 1000, 5_129_700) == ["5.123M", "5.124M", "5.125M"]
    assert linear_labels([0, 2500, 5000, 7500], 2500, 8000) == ["0", "2,500", "5,000", "7,500"]
    assert log_labels([-4, -3, math.log10(2.5e-5)]) == ["1e-4", "0.001", "2.5e-5"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(centre=st.floats(-1e9, 1e9), span_exp=st.floats(-4, 9), size=st.floats(80, 900))
def test_any_linear_range_reads_distinct_true_labels(qapp, centre, span_exp, size) -> None:
    span = 10 ** span_exp
    if span < abs(centre) * 1e-7:  # beyond double precision of a plotted value: not a real axis
        return
    ticks = axis_ticks(qapp, centre - span / 2, centre + span / 2, size=size)
    if len(ticks) >= 2:
        assert_readable(ticks, relative=1e-6 + span / max(abs(centre), span) * 1e-3)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(low=st.floats(-8, 8), decades=st.floats(0.02, 10), size=st.floats(80, 900))
@example(low=8.0, decades=7.0, size=80.0)  # 10^15 once read "1e+06G"
def test_any_log_range_reads_distinct_true_labels(qapp, low, decades, size) -> None:
    ticks = axis_ticks(qapp, low, low + decades, log=True, size=size)
    if len(ticks) >= 2:
        assert_readable(ticks)


def test_the_labelled_levels_of_one_axis_write_as_many_decimals(qapp) -> None:
    # Unigram's log-likelihood: -1.40M beside -1.45M, not -1.4M beside -1.45M.
    axis = TickAxis("left")
    axis.setRange(-1.6e6, -1.33e6)
    levels = axis.tickValues(-1.6e6, -1.33e6, 170)
    labels = [s for spacing, values in levels[:2] for s in axis.tickStrings(values, 1.0, spacing)]
    assert {"-1.40M", "-1.45M"} <= set(labels), labels
    assert len({len(s.split(".")[1]) for s in labels}) == 1, labels
