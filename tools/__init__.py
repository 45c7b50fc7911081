"""The tools, run from the repository root as ``python -m tools.<name>`` (not installed, like
``bench/`` and ``experiments/``): the report (``tools/report``: every generated block of
``results/*.md``, the README and ``docs/`` from committed JSON), the page makers that run
code (``readme_outputs``, ``layer_reference``), the checks of exported or served models
(``*_serving_check``, ``math_savedmodel_accuracy``, ``math_fit``), the papers' analyses
(``tools/analysis``), the reference-code fidelity checks (``tools/fidelity``) and the
checkpoint conversion (``tools/checkpoint_conversion``)."""
