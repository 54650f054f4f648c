"""The compute-optimal vocabulary size of Tao et al., "Scaling Laws with Vocabulary: Larger Models
Deserve Larger Vocabularies" (NeurIPS 2024), for a model with N_nv non-vocabulary parameters, and the
share of parameters its embedding would take.

Three predictions, with the coefficients the paper fitted (as published with its code):

* **IsoFLOPs power law** (approach 1): the compute-optimal budget of N_nv is C = (N_nv / e^−2.48465)²,
  and the optimal vocabulary parameters N_v = e^−1.58903 · C^0.416362; V = N_v / d.
* **Derivative-based** (approach 2): N_v = 3,145,728 · (N_nv / 33M)^0.835397; V = N_v / d.
* **Parametric loss fit** (approach 3), the only one that takes a training budget C other than the
  compute-optimal one: the V where dL/dV = 0 for
  L = E + A₁/N_nv^α₁ + A₂/(V·d)^α₂ + B/D^β with D = C / (6 (N_nv + V·d)) (N_nv in millions,
  d in thousands, C in 1e15 FLOPs), found by bisection on log V.

d is the paper's width for a model of that size (:func:`paper_width`) unless given. The paper's
worked example: its 3B model (N_nv 2.87B, d 3200) trained with 2.3e21 FLOPs deserves about 43K
(approach 3 gives 42.2K: within 3 %). Left out: the unigram-normalized loss itself, and any claim
beyond the range the paper trained (33M–3B non-vocabulary parameters).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

_WIDTHS = ((50e6, 512), (200e6, 768), (500e6, 1024), (1e9, 1536), (2e9, 2048), (5e9, 3200), (10e9, 4096),
           (20e9, 5120), (50e9, 6048), (100e9, 8192), (200e9, 12288), (500e9, 16384), (1e12, 20480))
_K_NNV, _K_NV, _E_NV = -2.4846510161625193, -1.589031299255507, 0.4163622634135234
_NV0, _NNV0, _GAMMA = 3_145_728, 33_000_000, 0.8353974035228025
_A2, _B = 0.19584238398665638, 2.1241123120064955
_ALPHA2, _BETA = 0.6707374679896795, 0.44660634152009615


def paper_width(nnv: float) -> int:
    """The embedding width d the paper pairs with N_nv non-vocabulary parameters."""
    for limit, d in _WIDTHS:
        if nnv <= limit:
            return d
    return 24576


def optimal_budget(nnv: float) -> float:
    """The compute-optimal training FLOPs for N_nv (approach 1's fit)."""
    return (nnv / math.exp(_K_NNV)) ** 2


def isoflops_vocab(nnv: float, d: int | None = None) -> float:
    return math.exp(_K_NV) * optimal_budget(nnv) ** _E_NV / (d or paper_width(nnv))


def derivative_vocab(nnv: float, d: int | None = None) -> float:
    return _NV0 * (nnv / _NNV0) ** _GAMMA / (d or paper_width(nnv))


def parametric_vocab(nnv: float, flops: float | None = None, d: int | None = None) -> float:
    """Approach 3: the V where the fitted loss stops falling, for a budget of ``flops`` (default:
    the compute-optimal budget of N_nv)."""
    width = (d or paper_width(nnv)) / 1e3
    n, c = nnv / 1e6, (flops if flops is not None else optimal_budget(nnv)) / 1e15

    def slope(v: float) -> float:  # dL/dV in the paper's units (V in thousands)
        params = n + v * width
        tokens = c / (6 * params)
        return (-_ALPHA2 * _A2 * width / (v * width) ** (_ALPHA2 + 1)
                + _BETA * _B * (c * width / (6 * params ** 2)) / tokens ** (_BETA + 1))

    lo, hi = 1e-4, 1e5
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if slope(mid) < 0 else (lo, mid)
    return lo * 1e3


@dataclass(frozen=True)
class Advice:
    """The three predictions for one model, and the embedding's share at each (V·d / (N_nv + V·d))."""

    nnv: float
    d: int
    flops: float
    isoflops: float
    derivative: float
    parametric: float

    def embedding_share(self, vocab: float) -> float:
        return vocab * self.d / (self.nnv + vocab * self.d)


def advise(nnv: float, flops: float | None = None, d: int | None = None) -> Advice:
    """Approaches 1 and 2 assume the compute-optimal budget; approach 3 uses ``flops`` when given."""
    if not (nnv > 0 and (flops is None or flops > 0) and (d is None or d > 0)):
        from workbench.errors import WorkbenchError

        raise WorkbenchError("vocabulary advisor: non-vocabulary parameters, FLOPs and d must be positive numbers")
    width = d or paper_width(nnv)
    budget = flops if flops is not None else optimal_budget(nnv)
    return Advice(nnv, width, budget, isoflops_vocab(nnv, width), derivative_vocab(nnv, width),
                  parametric_vocab(nnv, budget, width))


def describe(advice: Advice) -> str:
    """One paragraph for the sweep page: the three predictions and the embedding's share at each."""
    def one(name: str, v: float) -> str:
        return f"{name} {v:,.0f} ({100 * advice.embedding_share(v):.1f} % of parameters)"

    budget = f"{advice.flops:.2g} FLOPs"
    return (f"Compute-optimal |V| (Tao et al., NeurIPS 2024) for {advice.nnv / 1e9:g}B non-vocabulary parameters, "
            f"d {advice.d}, {budget}: {one('parametric fit', advice.parametric)}; "
            f"{one('IsoFLOPs', advice.isoflops)}; {one('derivative', advice.derivative)}. "
            "The embedding's share is V × d / (N_nv + V × d). Fitted on models of 33M–3B non-vocabulary "
            "parameters: larger models are extrapolation.")
