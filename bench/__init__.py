"""Benchmarks and result reports, run from the repository root as ``python -m bench.<name>``;
``python -m bench.report`` regenerates the tables of ``results/*.md``."""
