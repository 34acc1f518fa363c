"""Where one original run ranks among its replayed seeds, and the exact rank p-value.

If the original is a run of the same distribution as the n replays, the n + 1 values are
exchangeable: each rank is equally likely, so the original is the lowest of n + 1 with
probability 1 / (n + 1), whatever the distribution. That is the whole evidence one original
run gives, and it is exact. With n = 5 replays the original is the lowest of 6 one time in six
and at either end one time in three: never evidence against it at 5%. The two-sided p-value
reaches α only from n = 2/α − 1 replays (39 at α = 0.05).

Ties are counted against extremeness (a tie could have fallen either way), so the p-values are
conservative.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from ._common import JsonMixin, as_sample, check_probability

__all__ = ["ExactRank", "exact_rank", "replays_for_rank_test"]


@dataclass(frozen=True)
class ExactRank(JsonMixin):
    """``p_lower``: the chance that an exchangeable original ranks this low or lower (one-sided,
    lower tail); ``p_upper`` the same from above; ``p_two_sided`` = min(1, 2 · the smaller).
    The ``*_text`` fields are the same p-values as exact fractions (``"1/6"``)."""

    n: int  # values ranked: the original and the replays
    below: int  # replays strictly below the original
    tied: int  # replays equal to it
    above: int  # replays strictly above it
    position: str  # "lowest of 6", "highest of 6", "rank 3 of 6 from the lowest"
    tail: str  # "lower" or "upper": the tail the original is in (its smaller one-sided p)
    p_lower: float
    p_upper: float
    p_two_sided: float
    p_lower_text: str
    p_upper_text: str
    p_two_sided_text: str
    alpha: float
    significant: bool  # p_two_sided <= alpha
    replays_needed: int  # replays from which an original at an end is significant at alpha

    @property
    def p_one_sided(self) -> float:
        return self.p_lower if self.tail == "lower" else self.p_upper

    @property
    def p_one_sided_text(self) -> str:
        return self.p_lower_text if self.tail == "lower" else self.p_upper_text

    def describe(self) -> str:
        """``lowest of 6: exact rank p = 1/6 one-sided (lower tail), 1/3 two-sided``."""
        return (
            f"{self.position}: exact rank p = {self.p_one_sided_text} one-sided ({self.tail} "
            f"tail), {self.p_two_sided_text} two-sided"
        )


def _text(p: Fraction) -> str:
    return "1" if p == 1 else f"{p.numerator}/{p.denominator}"


def _significant(p_two_sided: Fraction, alpha: float) -> bool:
    """The one comparison with alpha, as a user reads it: the p-value's float against alpha's
    (2/40 is significant at 0.05, and 3/10 at 0.3, though the float 0.3 is below 3/10)."""
    return float(p_two_sided) <= alpha


def replays_for_rank_test(alpha: float = 0.05) -> int:
    """The fewest replays n for which an original at either end is significant at alpha
    (2 / (n + 1) <= alpha, compared as ``exact_rank`` compares it), found by bisection: no
    replay is never enough (p = 1), and 4 / alpha replays always are (p < alpha / 2)."""
    alpha = check_probability(alpha, "alpha")
    lo, hi = 0, math.ceil(Fraction(4) / Fraction(alpha))
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _significant(Fraction(2, mid + 1), alpha):
            hi = mid
        else:
            lo = mid
    return hi


def exact_rank(
    original: float, replay: Sequence[float] | npt.ArrayLike, *, alpha: float = 0.05
) -> ExactRank:
    """Rank ``original`` among ``replay`` and give the exact, distribution-free p-values."""
    alpha = check_probability(alpha, "alpha")
    value = float(original)
    if not math.isfinite(value):
        raise ValueError(f"original must be finite, got {original!r}")
    b = as_sample(replay, "replay", min_n=1)
    below, tied = int(np.sum(b < value)), int(np.sum(b == value))
    above = int(b.size) - below - tied
    n = int(b.size) + 1
    lower = Fraction(1 + below + tied, n)
    upper = Fraction(1 + above + tied, n)
    two = min(Fraction(1), 2 * min(lower, upper))
    if below == 0 and tied == 0:
        position = f"lowest of {n}"
    elif above == 0 and tied == 0:
        position = f"highest of {n}"
    elif tied == n - 1:
        position = f"equal to all {n - 1} replays"
    else:
        position = f"rank {below + 1} of {n} from the lowest" + (
            f", tied with {tied} replay{'s' if tied != 1 else ''}" if tied else ""
        )
    return ExactRank(
        n=n,
        below=below,
        tied=tied,
        above=above,
        position=position,
        tail="lower" if lower <= upper else "upper",
        p_lower=float(lower),
        p_upper=float(upper),
        p_two_sided=float(two),
        p_lower_text=_text(lower),
        p_upper_text=_text(upper),
        p_two_sided_text=_text(two),
        alpha=alpha,
        significant=_significant(two, alpha),
        replays_needed=replays_for_rank_test(alpha),
    )
