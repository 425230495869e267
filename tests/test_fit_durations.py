"""Censored continuous-latency fits (analysis.stats.durations) against closed forms."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.errors import InputError
from analysis.stats.durations import fit_duration_models, fit_durations


def test_exponential_mle_is_total_time_over_events():
    # Censored exponential: the MLE of the mean is total exposure / completed samples, and
    # its SE is mean / sqrt(events) (observed information).
    rng = np.random.default_rng(8)
    t = rng.exponential(250.0, 400)
    limit = 500.0
    censored = t > limit
    t = np.minimum(t, limit)
    fit = fit_durations(t, censored, "exponential")
    events = int((~censored).sum())
    mle = t.sum() / events
    est = fit.params["scale_us"]
    assert est.estimate == pytest.approx(mle, rel=1e-4)
    assert (est.ci_high - est.ci_low) / (2 * 1.96) == pytest.approx(mle / np.sqrt(events), rel=0.02)
    assert fit.events == events and fit.n == 400


def test_aic_prefers_the_true_family_on_a_large_sample():
    rng = np.random.default_rng(3)
    t = rng.lognormal(np.log(300.0), 1.2, 4000)
    fits = fit_duration_models(t, np.zeros(t.size, bool), ["lognormal", "exponential", "weibull"])
    assert fits[0].model.startswith("lognormal")
    median = fits[0].quantiles[0.5]
    assert median.ci_low < 300.0 < median.ci_high


def test_bad_durations_say_why():
    with pytest.raises(InputError, match="every duration is censored"):
        fit_durations(np.array([1.0, 2.0, 3.0]), np.array([True] * 3), "weibull")
    with pytest.raises(InputError, match="> 0"):
        fit_durations(np.array([0.0, 2.0, 3.0, 4.0]), np.zeros(4, bool), "weibull")
