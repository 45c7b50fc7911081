"""The command-line app: ``python -m train.<command>`` entry points (flags -> data ->
model -> training loop -> evaluation -> export) and what they share.

Everything that parses flags lives here, not in the library: :mod:`train.cli` (``--help``,
short errors, the preset flags), :mod:`train.flags` (the shared training flags),
:mod:`train.runner` and :mod:`train.tasks` (one task recipe per model family),
:mod:`train.finish` (what a run leaves, in order), :mod:`train.machine` (the machine a run
records), :mod:`train.tensorflow_export` (a JAX run's SavedModel, written by a TensorFlow
process) and :mod:`train.preset_writing` (what the preset commands add to the library's
preset writer). ``tpr_keras`` imports
none of it; ``serving`` neither.
"""
