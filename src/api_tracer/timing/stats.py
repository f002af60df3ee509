"""The statistics a comparison of two benchmark runs rests on, in the
standard library alone: Welch's t-test of two samples (the rounds' times,
in logs), the Student t distribution's tail through the regularized
incomplete beta function, and Benjamini and Hochberg's control of the
false discoveries among many configs tested at once."""

from __future__ import annotations

import math
from typing import List, Sequence, Tuple


def incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), by its continued
    fraction (modified Lentz), on the side of x where it converges fast."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = a * math.log(x) + b * math.log1p(-x) + math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _fraction(b, a, 1.0 - x) / b


TINY = 1e-300


def _fraction(a: float, b: float, x: float) -> float:
    def kept(v: float) -> float:
        return v if abs(v) >= TINY else TINY

    c, d = 1.0, 1.0 / kept(1.0 - (a + b) * x / (a + 1.0))
    h = d
    for m in range(1, 1000):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 / kept(1.0 + numerator * d)
            c = kept(1.0 + numerator / c)
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def t_two_sided(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with `df` degrees of freedom (the
    normal's where df is infinite; 1 where t is NaN: no evidence)."""
    if math.isnan(t):
        return 1.0
    if math.isinf(t):
        return 0.0
    if math.isinf(df):
        return math.erfc(abs(t) / math.sqrt(2.0))
    return incomplete_beta(df / 2.0, 0.5, df / (df + t * t))


def mean_var(xs: Sequence[float]) -> Tuple[float, float]:
    """The mean and the unbiased variance (0 for one value)."""
    m = sum(xs) / len(xs)
    return m, (sum((x - m) ** 2 for x in xs) / (len(xs) - 1) if len(xs) > 1 else 0.0)


def welch_terms(a: Sequence[float], b: Sequence[float]) -> Tuple[float, float, float]:
    """(mean(b) - mean(a), the variance of that difference, its degrees of
    freedom) as Welch's test has them (Welch-Satterthwaite); each sample
    needs two values at least (infinite degrees where neither varies)."""
    if len(a) < 2 or len(b) < 2:
        raise ValueError("Welch's test needs two values of each sample at least")
    (ma, va), (mb, vb) = mean_var(a), mean_var(b)
    sa, sb = va / len(a), vb / len(b)
    df = (sa + sb) ** 2 / (sa**2 / (len(a) - 1) + sb**2 / (len(b) - 1)) if sa + sb else math.inf
    return mb - ma, sa + sb, df


def welch(a: Sequence[float], b: Sequence[float]) -> Tuple[float, float]:
    """(mean(b) - mean(a), the two-sided p-value of Welch's t-test that
    the means are equal); where neither sample varies, 0 if they differ, else 1."""
    diff, variance, df = welch_terms(a, b)
    if variance == 0.0:
        return diff, 0.0 if diff != 0 else 1.0
    return diff, t_two_sided(diff / math.sqrt(variance), df)


def discoveries(p_values: Sequence[float], q: float) -> List[bool]:
    """Which of the hypotheses tested at once to reject, so that the
    expected share of false rejections among them is at most `q`
    (Benjamini-Hochberg): the k smallest p-values, k the largest with
    p_(k) <= k q / m."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    cut = 0
    for rank, i in enumerate(order, 1):
        if p_values[i] <= rank * q / m:
            cut = rank
    rejected = [False] * m
    for i in order[:cut]:
        rejected[i] = True
    return rejected


def median(xs: Sequence[float]) -> float:
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
