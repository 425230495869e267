"""Validation of ``mmlab compare`` on SYNTHETIC data with known truth (never real results).

:mod:`.simulate` draws run-structured heavy-tailed latencies; ``python -m
analysis.stats.validation_compare`` writes results.md / results.json beside this file.
"""
