"""Timed comparisons (not tests): ``python -m benchmarks.NAME`` prints a table and writes JSON
under ``benchmarks/results/``."""
