"""Coverage of ``mmlab fit``'s printed 95 % CIs on SYNTHETIC groups (known truth).

Each group is drawn from a known latent wait of :data:`analysis.stats.validation.simulate.TRUTHS`
through the kernel's observation model (tick phase, censoring at the timeout) and fitted
by :func:`analysis.stats.fit.fit_group` as ``mmlab fit`` calls it (every family ± zero
mass ± cure). The bootstrap is left out: it only tests the fit (G² p), and the printed
intervals are the same with or without it (``tests/test_fit_model.py``), so leaving it out
buys more simulations. Checked: P(k=0), P(timeout) and the mean wait to the timeout, for
the model's interval and the model-free one printed beside it.
"""

from __future__ import annotations

from analysis.stats.fit import JiffyData, bin_probabilities, fit_group
from analysis.stats.validation.simulate import TRUTHS, simulate_counts
from analysis.stats.validation_compare.simulate import rate

__all__ = ["CELLS", "CHECKED", "fit_coverage"]

# (truth label, HZ, sleeps per group): a short-wait group with many immediate wakes and
# a long-wait group with a share nothing wakes early.
CELLS = (("weibull+zero", 250, 2000), ("lognormal+cure", 250, 2000))
CHECKED = ("p_zero", "p_timeout", "restricted_mean_usec")


def _truth_values(wait, k_timeout: int, jiffy_us: float, timeout_us: float) -> dict:
    p = bin_probabilities(wait, k_timeout, jiffy_us)
    return {
        "p_zero": float(p[0]),
        "p_timeout": float(p[-1]),
        "restricted_mean_usec": wait.restricted_mean_us(timeout_us),
    }


def fit_coverage(rng, sims: int, cells=CELLS) -> list[dict]:
    """Per cell: coverage of each checked quantity by the fit's CI and by the model-free
    CI, and how often AIC's best model has the true family."""
    truths = {t.label: t for t in TRUTHS}
    out = []
    for label, hz, n in cells:
        truth = truths[label]
        wait = truth.wait()
        jiffy = 1e6 / hz
        k_timeout = round(truth.timeout_us / jiffy)
        true = _truth_values(wait, k_timeout, jiffy, float(truth.timeout_us))
        model = dict.fromkeys(CHECKED, 0)
        data_hits = dict.fromkeys(CHECKED, 0)
        aic = 0
        for _ in range(sims):
            counts = simulate_counts(wait, n, jiffy, k_timeout, rng)
            group = fit_group(JiffyData(counts, jiffy, float(truth.timeout_us)), cache=False)
            for name in CHECKED:
                est = group.observables[name]
                model[name] += est.ci_low <= true[name] <= est.ci_high
                emp = group.empirical.get(name)
                if emp is not None:
                    data_hits[name] += emp.ci_low <= true[name] <= emp.ci_high
            aic += group.best.family == truth.family
        out.append(
            {
                "truth": label,
                "hz": hz,
                "n": n,
                "sims": sims,
                "true": true,
                "aic_true": rate(aic, sims),
                "coverage": {
                    name: {"model": rate(model[name], sims), "data": rate(data_hits[name], sims)}
                    for name in CHECKED
                },
            }
        )
        print(f"fit {label}: done", flush=True)
    return out
