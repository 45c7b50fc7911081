"""The command-line app: ``python -m train.<command>`` entry points (flags -> data ->
model -> training loop -> evaluation -> export) and what they share.

Everything that parses flags lives here, not in the library: :mod:`train.cli` (``--help``,
short errors, the preset flags), :mod:`train.flags` (the shared training flags),
:mod:`train.runner` and :mod:`train.tasks` (one task recipe per model family) and
:mod:`train.outputs` (what a run prints and hands on at its end). ``tpr_keras`` imports
none of it; ``serving`` neither.
"""
