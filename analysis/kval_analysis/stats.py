"""stats.py - the statistics behind the verdicts and the studies: the distribution-free
confidence interval of a median (order statistics of the binomial), the relative standard
error of a recorded median time (from its p10/p90 spread and repetitions), the per-case
comparison state SAME / FAST / SLOW / AMBIGUOUS (as nvbench's compare marks it: a difference
within the combined noise is SAME), robust z-scores, and least-squares growth exponents in
log-log space with per-stratum intercepts and a Student-t 95 % interval."""
import math

import numpy as np
from scipy import stats as sps

Z95 = 1.959963984540054     # two-sided 95 % normal quantile
P10_P90_SIGMAS = 2.5631031  # p90 - p10 of a normal distribution, in standard deviations
MEDIAN_SE = 1.2533141       # standard error of a sample median / (sigma / sqrt(n)) for normal data
MAD_SIGMA = 1.4826022       # sigma / MAD for normal data
MAD_TO_Z = 0.6745           # robust z = 0.6745 (x - median) / MAD
STATES = ("SAME", "FAST", "SLOW", "AMBIGUOUS")


def median_ci(values, level=0.95):
    """(median, low, high) of finite values; the interval is the pair of order statistics
    x_(k), x_(n-k+1) with the largest k whose binomial coverage is >= level (for n < 6 no
    such pair exists and the interval is [min, max]). NaNs when there is no value."""
    v = np.sort(np.asarray(values, dtype=float))
    v = v[np.isfinite(v)]
    n = len(v)
    if n == 0:
        return math.nan, math.nan, math.nan
    med = float(np.median(v))
    ks = np.arange(1, n // 2 + 1)
    ok = ks[1 - 2 * sps.binom.cdf(ks - 1, n, 0.5) >= level]  # coverage of [x_(k), x_(n-k+1)]
    k = int(ok.max()) if len(ok) else 0
    if k < 1:
        return med, float(v[0]), float(v[-1])
    return med, float(v[k - 1]), float(v[n - k])


def median_time_se(t, p10, p90, stddev, reps):
    """Relative standard error of recorded median times (arrays): sigma from (p90 - p10)
    (else stddev) over the median, times 1.2533 / sqrt(reps). NaN where not known."""
    t, p10, p90, sd, reps = (np.asarray(a, dtype=float) for a in (t, p10, p90, stddev, reps))
    with np.errstate(invalid="ignore", divide="ignore"):
        sigma = np.where(np.isfinite(p90 - p10) & (p90 >= p10), (p90 - p10) / P10_P90_SIGMAS, sd) / t
        se = MEDIAN_SE * sigma / np.sqrt(reps)
    return np.where((t > 0) & (reps >= 2) & np.isfinite(se), se, np.nan)


def compare_state(ratio, halfwidth, noise_limit):
    """Per-case state of time ratios (arrays): SAME within the 95 % half-width of the
    combined noise, AMBIGUOUS when that noise exceeds noise_limit (or is unknown), else SLOW
    (ratio > 1) or FAST."""
    ratio, w = np.asarray(ratio, dtype=float), np.asarray(halfwidth, dtype=float)
    out = np.where(ratio > 1, "SLOW", "FAST").astype(object)
    out[~np.isfinite(w) | (w > noise_limit)] = "AMBIGUOUS"
    out[np.abs(ratio - 1) <= w] = "SAME"
    return out


def robust_z(values, floor):
    """0.6745 (x - median) / max(MAD, floor) of each value; NaNs for fewer than 3 values."""
    v = np.asarray(values, dtype=float)
    if np.isfinite(v).sum() < 3:
        return np.full(v.shape, np.nan)
    med = np.nanmedian(v)
    mad = max(float(np.nanmedian(np.abs(v - med))), floor)
    return MAD_TO_Z * (v - med) / mad


def growth_fit(x, y, strata=None, level=0.95):
    """Least-squares exponent b of y ~ a_s * x^b (log-log, one intercept a_s per stratum s):
    dict(exponent, low, high, points, strata, dof, r2) with the Student-t interval of b, or
    None when fewer than 3 points or no spread of x within a stratum leaves a degree of freedom.
    Points with non-positive or non-finite x or y are left out by the caller."""
    x, y = np.log(np.asarray(x, dtype=float)), np.log(np.asarray(y, dtype=float))
    strata = np.zeros(len(x), dtype=int) if strata is None else np.unique(np.asarray(strata, dtype=str),
                                                                          return_inverse=True)[1]
    n_s = int(strata.max()) + 1 if len(strata) else 0
    design = np.column_stack([x] + [(strata == s).astype(float) for s in range(n_s)])
    dof = len(x) - design.shape[1]
    if len(x) < 3 or dof < 1:
        return None
    xc = x - np.array([x[strata == s].mean() for s in range(n_s)])[strata]
    sxx = float(np.sum(xc ** 2))
    if sxx <= 0:
        return None
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    resid = y - design @ coef
    s2 = float(resid @ resid) / dof
    se = math.sqrt(s2 / sxx)
    t = float(sps.t.ppf(0.5 + level / 2, dof))
    yc = y - np.array([y[strata == s].mean() for s in range(n_s)])[strata]
    ss = float(yc @ yc)
    return {"exponent": float(coef[0]), "low": float(coef[0] - t * se), "high": float(coef[0] + t * se),
            "points": int(len(x)), "strata": n_s, "dof": int(dof), "r2": 1 - float(resid @ resid) / ss if ss > 0 else 1.0}
