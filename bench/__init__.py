"""Benchmarks and result reports: scripts run as ``python bench/<name>.py``; ``python -m
bench.report`` regenerates the tables of ``results/*.md``."""
