"""The report: the generated blocks of ``results/*.md``, ``results/studies/*.md``, the README
and ``docs/`` made from committed JSON, and the figures those pages show. It reads the files
the experiments, benchmarks and checks wrote; it runs no model. ``python -m tools.report``
regenerates the blocks (:mod:`tools.report.pages`); :mod:`tools.report.blocks` names every
block and figure.
"""
