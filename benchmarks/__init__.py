"""Benchmarks (`make bench`); results are committed in this folder."""
