"""DeepMind Mathematics Dataset v1.0: discovery, parsing, character vocabulary, tf.data.

One module per concern: :mod:`.files` (the archive, discovery and download, the module
files and module filters), :mod:`.heldout` (validation questions held out of training),
:mod:`.parsing` (a module file's lines and their length limits), :mod:`.vocabulary`
(:class:`CharVocabulary`), :mod:`.encoding` (the ragged :class:`MathSplit`), :mod:`.loader`
(:func:`load_mathematics`), :mod:`.pipeline` (``tf.data``), :mod:`.batches` (numpy, for
JAX), :mod:`.templates` (which trained module a question's wording belongs to) and
:mod:`.expression_patterns` (the shape rules of modules worded anew in most questions);
the public names of all but the last are importable from here.

Layout (the official ``mathematics_dataset-v1.0.tar.gz``)::

    train-easy/<module>.txt  train-medium/<module>.txt  train-hard/<module>.txt
    interpolate/<module>.txt  extrapolate/<module>.txt

Each file alternates question and answer lines. Conventions (the TP-Transformer
authors' public code):

* Training data of a module = train-easy + train-medium + train-hard, merged.
  ``interpolate`` and ``extrapolate`` stay separate, one split per module.
* Extrapolation modules are named after a training module plus a suffix
  (``numbers__place_value_big``, ``comparison__sort_more``,
  ``arithmetic__mixed_longer``, ``probability__swr_p_level_set_more_samples``) or
  equal to one (``measurement__conversion``); selecting a training module selects
  its extrapolation modules too.
* Module filters are names or shell globs (``arithmetic__*``); ``"all"`` or ``"*"``
  selects everything.
* Characters are the symbols: :class:`CharVocabulary` = ``<pad>`` 0, ``<unk>`` 1,
  ``<s>`` 2 (start), ``</s>`` 3 (end), then the sorted characters of the training
  data (over all modules: 72 symbols, as in the paper). Whitespace is kept.
* Sequences (:func:`make_dataset`): ``source = <s> question </s>`` (the authors'
  code marks the source too), ``target_in = <s> answer``,
  ``target_out = answer </s>``. Questions have at most 160 characters and answers
  at most 30 (so sources are at most 162 symbols and targets 31); longer lines are a
  :class:`MathFormatError` naming the file and line.

Storage (:class:`MathSplit`) is ragged: all ids of a split in one flat array with row
offsets, padded only per batch inside ``tf.data``.

Data files: :func:`find_mathematics_dir` looks in ``data_dir``, then
``$TPR_KERAS_MATH_DIR``, then the Keras cache, then downloads the official archive
(2.3 GB, SHA-256 verified).
"""

from tpr_keras.data.mathematics.batches import MathBatches  # noqa: F401
from tpr_keras.data.mathematics.encoding import MathSplit, encode_texts  # noqa: F401
from tpr_keras.data.mathematics.files import (  # noqa: F401
    EXTRAPOLATE_SUFFIXES,
    MATH_ARCHIVE_NAME,
    MATH_ARCHIVE_SHA256,
    MATH_DIR_ENV,
    MATH_SOURCE,
    MATH_URL,
    REGIMES,
    TRAIN_DIFFICULTIES,
    find_mathematics_dir,
    list_modules,
    select_modules,
)
from tpr_keras.data.mathematics.heldout import (  # noqa: F401
    MAX_HELD_OUT_FRACTION,
    HeldOut,
    hold_out,
    load_sample_split,
)
from tpr_keras.data.mathematics.loader import MathData, load_mathematics  # noqa: F401
from tpr_keras.data.mathematics.parsing import (  # noqa: F401
    MAX_ANSWER_LENGTH,
    MAX_QUESTION_LENGTH,
    MathFormatError,
    parse_mathematics_file,
)
from tpr_keras.data.mathematics.pipeline import (  # noqa: F401
    DEFAULT_BUCKET_BOUNDARIES,
    GRID_ANSWER_BOUNDARIES,
    GRID_BUCKET_BOUNDARIES,
    balanced_indices,
    make_dataset,
)
from tpr_keras.data.mathematics.templates import (  # noqa: F401
    MAX_TEMPLATES_PER_MODULE,
    NUMBER_PATTERN,
    TEMPLATES_ASSET,
    ModuleTemplates,
    module_templates,
    question_template,
    templates_asset,
)
from tpr_keras.data.mathematics.vocabulary import CharVocabulary  # noqa: F401

__all__ = [
    "CharVocabulary",
    "DEFAULT_BUCKET_BOUNDARIES",
    "GRID_ANSWER_BOUNDARIES",
    "GRID_BUCKET_BOUNDARIES",
    "EXTRAPOLATE_SUFFIXES",
    "HeldOut",
    "MATH_ARCHIVE_NAME",
    "MATH_ARCHIVE_SHA256",
    "MATH_DIR_ENV",
    "MATH_SOURCE",
    "MATH_URL",
    "MAX_ANSWER_LENGTH",
    "MAX_HELD_OUT_FRACTION",
    "MAX_QUESTION_LENGTH",
    "MAX_TEMPLATES_PER_MODULE",
    "MathBatches",
    "MathData",
    "MathFormatError",
    "MathSplit",
    "ModuleTemplates",
    "NUMBER_PATTERN",
    "REGIMES",
    "TEMPLATES_ASSET",
    "TRAIN_DIFFICULTIES",
    "balanced_indices",
    "encode_texts",
    "find_mathematics_dir",
    "hold_out",
    "list_modules",
    "load_mathematics",
    "load_sample_split",
    "make_dataset",
    "module_templates",
    "parse_mathematics_file",
    "question_template",
    "select_modules",
    "templates_asset",
]
