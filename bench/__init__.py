"""Throughput and latency benchmarks, run from the repository root as
``python -m bench.<name>``. Paper-grid drivers and preset training are in ``experiments/``,
report and table generators and the served-model checks in ``tools/``."""
