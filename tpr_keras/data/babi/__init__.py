"""bAbI question answering tasks (v1.2): parsing, vocabulary, splits and tf.data input.

One module per concern: :mod:`.text` (the tokenizer specification), :mod:`.parsing`,
:mod:`.vocabulary`, :mod:`.splits`, :mod:`.truncation`, :mod:`.encoding`,
:mod:`.pipeline` (``tf.data``), :mod:`.files` (discovery and download) and
:mod:`.loader` (:func:`load_babi`); their public names are importable from here.
:mod:`.systematic` builds the systematic-generalisation data of TPR-RNN §7 from the
bAbI files (``python -m tools.analysis.systematic_data``).

Conventions (those of the TPR-RNN authors' published code):

* Tokens: lower-cased words, with each of ``. ? ! , ; :`` as a token of its own
  (:func:`tokenize`). Answers are *not* tokenized: the lower-cased answer field is a
  single symbol (task 8 ``apple,football`` and task 19 ``n,w`` stay one symbol).
* Each question becomes one sample whose story holds all earlier *statements* of its
  story; question lines are never memories.
* Splits follow ``en-valid-10k``: the training file is split 90/10 into train and
  valid at a story boundary (:func:`split_point`); the test file is the test split.
  Setting ``"1k"`` first keeps only the first 1,000 questions of the training file
  (that prefix is the official ``en`` 1k training set), then splits the same way.
* Stories are truncated to their last ``N`` statements: 70 by default, 130 for
  task 3 (:data:`DEFAULT_MAX_STORY_SENTENCES`).
* One vocabulary over story words, question words and answer symbols of every
  loaded split of every loaded task: id 0 ``<pad>``, id 1 ``<unk>``, then all other
  tokens in sorted order.

Storage (:class:`EncodedSplit`) keeps every story's statements once, in one
``int32[total_sentences, W]`` array; a sample is a window
``sentences[offset : offset + length]`` of its story (the last ``length`` statements
before the question), so samples of one story share rows. Stories are padded only
per batch, inside the ``tf.data`` pipeline (:func:`make_dataset`).

Data files: ``find_babi_dir`` looks in ``data_dir``, then ``$TPR_KERAS_BABI_DIR``,
then the Keras cache, then downloads the official archive (checksum-verified).

A training file that holds fewer questions than its setting expects (10,000 for
``"10k"``, e.g. a copy of task 3 cut to the first 1,000 official questions) is still
loaded and split the same way; :func:`load_babi` warns and records it in
``stats["notes"]``.
"""

from tpr_keras.data.babi.batches import NumpyBatches  # noqa: F401
from tpr_keras.data.babi.encoding import EncodedSplit, encode_samples  # noqa: F401
from tpr_keras.data.babi.files import (  # noqa: F401
    BABI_ARCHIVE_NAME,
    BABI_ARCHIVE_SHA256,
    BABI_DIR_ENV,
    BABI_SOURCE,
    BABI_TASK_NAMES,
    BABI_URLS,
    find_babi_dir,
    task_files,
)
from tpr_keras.data.babi.loader import BabiData, load_babi  # noqa: F401
from tpr_keras.data.babi.parsing import BabiFormatError, Sample, parse_babi_file  # noqa: F401
from tpr_keras.data.babi.pipeline import make_dataset  # noqa: F401
from tpr_keras.data.babi.splits import split_point, split_train_valid  # noqa: F401
from tpr_keras.data.babi.text import tokenize  # noqa: F401
from tpr_keras.data.babi.truncation import (  # noqa: F401
    DEFAULT_MAX_STORY_SENTENCES,
    resolve_limits,
)
from tpr_keras.data.babi.vocabulary import Vocabulary  # noqa: F401

__all__ = [
    "BABI_ARCHIVE_NAME",
    "BABI_ARCHIVE_SHA256",
    "BABI_DIR_ENV",
    "BABI_SOURCE",
    "BABI_TASK_NAMES",
    "BABI_URLS",
    "BabiData",
    "BabiFormatError",
    "DEFAULT_MAX_STORY_SENTENCES",
    "EncodedSplit",
    "NumpyBatches",
    "Sample",
    "Vocabulary",
    "encode_samples",
    "find_babi_dir",
    "load_babi",
    "make_dataset",
    "parse_babi_file",
    "resolve_limits",
    "split_point",
    "split_train_valid",
    "task_files",
    "tokenize",
]
