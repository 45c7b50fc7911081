"""Paper-grid drivers, preset training and other experiments, run from the repository root
as ``python -m experiments.<name>``; their committed results go to ``results/`` and
``python -m tools.report`` tabulates them. Not installed (like ``bench/`` and ``tools/``)."""
