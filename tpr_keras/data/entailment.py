"""DeepMind logical entailment dataset (Evans et al., ICLR 2018).

Files: `train.txt, validate.txt, test_easy.txt, test_hard.txt, test_big.txt,
test_massive.txt, test_exam.txt`; one example per line, `A,B,E,H1,H2,H3`:
propositions A and B over variables `a`–`z`, connectives `~ & | >` and
parentheses; `E` = 1 iff A entails B; `H1`–`H3` are 0/1 heuristic flags.

- `load_entailment_file` / `load_entailment_split` parse and validate a file
  into `EntailmentData` (lists of strings + NumPy arrays).
- The text specification (one, for the Python tokenizer here and the in-graph one
  of `tpr_keras.models.entailment`, tested to give the same ids): the fixed
  character `VOCABULARY` (one id per character; any other character is `<unk>`)
  and `IGNORED_CHARACTERS` (whitespace, dropped). `tokenize` applies it to raw
  text; `encode` / `decode` map validated propositions (no whitespace) to ids and
  back; `save_vocabulary` / `load_vocabulary`.
- `permute_variables`: in-graph symbolic vocabulary permutation (a true
  bijection on a–z, shared by A and B of a pair).
- `make_dataset`: a `tf.data.Dataset` of padded batches
  `({"a": int32[batch, La], "b": int32[batch, Lb]}, float32[batch, 1])`.
"""

import dataclasses
import os

import numpy as np

from tpr_keras.data.errors import DataFormatError
from tpr_keras.data.sources import DataSource, find_data_dir

SPLITS = (
    "train",
    "validate",
    "test_easy",
    "test_hard",
    "test_big",
    "test_massive",
    "test_exam",
)
#: The splits a model is scored on (every one but train), in the paper's column order.
EVALUATION_SPLITS = SPLITS[1:]

#: Environment variable naming a directory that holds the split files.
ENV_VAR = "TPR_KERAS_ENTAILMENT_DIR"
#: Keras cache sub-directory (under `$KERAS_HOME` or `~/.keras`).
CACHE_SUBDIR = os.path.join("datasets", "logical_entailment_dataset", "data")
#: Official location: plain text files in the repository's `data/` folder
#: (no archive). The repository publishes no checksums.
OFFICIAL_URL = "https://github.com/google-deepmind/logical-entailment-dataset"
#: Where the dataset may be (any existing folder is taken; the split files are checked
#: when read). No URLs: nothing is downloaded, see :func:`find_entailment_dir`.
ENTAILMENT_SOURCE = DataSource(
    name="entailment",
    label="Logical entailment data",
    env_var=ENV_VAR,
    instructions=(
        "Download the files of the data/ "
        f"folder of {OFFICIAL_URL} and pass data_dir=<that folder>, set "
        f"{ENV_VAR}=<that folder>, or put them in {{cache}}."
    ),
    cache_subdir=CACHE_SUBDIR,
)

PAD, UNK = "<pad>", "<unk>"
CONNECTIVES = ("~", "&", "|", ">")
PARENTHESES = ("(", ")")
VARIABLES = tuple("abcdefghijklmnopqrstuvwxyz")
#: Fixed vocabulary: pad=0, unk=1, `~ & | >` = 2..5, `( )` = 6, 7,
#: `a`..`z` = 8..33.
VOCABULARY = (PAD, UNK) + CONNECTIVES + PARENTHESES + VARIABLES
PAD_ID = 0
UNK_ID = 1
FIRST_VARIABLE_ID = VOCABULARY.index("a")
NUM_VARIABLES = len(VARIABLES)
VOCAB_SIZE = len(VOCABULARY)

#: Characters dropped from raw text before encoding: the whitespace of RE2's ``\s``
#: (space, tab, newline, carriage return, form feed). Any other character not in
#: `VOCABULARY` (including the vertical tab and non-ASCII spaces) is `<unk>`.
IGNORED_CHARACTERS = " \t\n\r\f"
_DROP_IGNORED = str.maketrans("", "", IGNORED_CHARACTERS)

# Byte -> id lookup; unknown bytes map to UNK.
_LOOKUP = np.full(256, UNK_ID, dtype=np.int32)
for _i, _tok in enumerate(VOCABULARY[2:], start=2):
    _LOOKUP[ord(_tok)] = _i


class EntailmentFormatError(DataFormatError):
    """A malformed line; the message starts with `"{path}:{lineno}: "`."""


@dataclasses.dataclass(frozen=True)
class EntailmentData:
    """Parsed examples of one file.

    Attributes:
        a: list of premise strings.
        b: list of hypothesis strings.
        labels: `int32[n]`, 1 iff `a[i]` entails `b[i]`.
        heuristics: `int8[n, 3]`, the H1–H3 columns.
    """

    a: list
    b: list
    labels: np.ndarray
    heuristics: np.ndarray

    def __len__(self):
        return len(self.labels)


def encode(text):
    """Encodes one proposition into `int32[len(text)]` ids (unknown -> 1)."""
    return _LOOKUP[np.frombuffer(text.encode("latin-1", "replace"), np.uint8)]


def tokenize(text):
    """Raw text -> `int32[n]` ids, as an exported model reads its inputs.

    Drops `IGNORED_CHARACTERS`, then one id per remaining character (`encode`):
    `tokenize("( a | Q )")` is `encode("(a|Q)")`, `[6, 8, 4, 1, 7]`.
    """
    return encode(text.translate(_DROP_IGNORED))


def decode(ids):
    """Decodes ids back into a string, dropping padding."""
    return "".join(VOCABULARY[int(i)] for i in ids if int(i) != PAD_ID)


def encode_many(texts):
    """Encodes strings into flat ids and row splits (a ragged layout).

    Returns:
        `(ids int32[total], row_splits int64[len(texts) + 1])`.
    """
    lengths = np.fromiter((len(t) for t in texts), np.int64, len(texts))
    splits = np.zeros(len(texts) + 1, np.int64)
    np.cumsum(lengths, out=splits[1:])
    return encode("".join(texts)), splits


def save_vocabulary(path, vocabulary=VOCABULARY):
    """Writes the vocabulary, one token per line (line number = id)."""
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(tok + "\n" for tok in vocabulary))


def load_vocabulary(path):
    """Reads a vocabulary written by `save_vocabulary`."""
    with open(path, encoding="utf-8") as f:
        return tuple(line.rstrip("\n") for line in f)


def _row_problems(texts):
    """Per-row flags (unknown character, unbalanced parentheses) of non-empty
    strings, vectorised over all rows."""
    ids, splits = encode_many(texts)
    n = len(texts)
    unknown = np.zeros(n, bool)
    if n == 0:
        return unknown, np.zeros(0, bool)
    seg = np.repeat(np.arange(n), np.diff(splits))
    unknown[seg[ids == UNK_ID]] = True
    delta = (ids == VOCABULARY.index("(")).astype(np.int64) - (
        ids == VOCABULARY.index(")")
    )
    depth = np.cumsum(delta)
    before = np.concatenate([[0], depth])[splits[:-1]]  # depth before each row
    rel = depth - before[seg]  # nesting depth within the row
    # Unbalanced: the depth dips below zero or does not end at zero.
    unbalanced = (np.minimum.reduceat(rel, splits[:-1]) < 0) | (rel[splits[1:] - 1] != 0)
    return unknown, unbalanced


def parse_entailment_lines(lines, path="<lines>"):
    """Parses `A,B,E,H1,H2,H3` lines (without newlines) into `EntailmentData`.

    Raises:
        EntailmentFormatError: on the first malformed line (wrong field
            count, empty proposition, label or flag not 0/1, unknown
            character, unbalanced parentheses), message `"{path}:{lineno}: ..."`.
    """
    a, b, labels, heur = [], [], [], []
    for lineno, line in enumerate(lines, start=1):
        parts = line.rstrip("\r").split(",")
        if len(parts) != 6:
            raise EntailmentFormatError(
                path, lineno, f"expected 6 comma-separated fields, got {len(parts)}: {line!r}"
            )
        if not parts[0] or not parts[1]:
            raise EntailmentFormatError(path, lineno, "empty proposition")
        for k in range(2, 6):
            if parts[k] not in ("0", "1"):
                what = "label" if k == 2 else f"heuristic H{k - 2}"
                raise EntailmentFormatError(
                    path, lineno, f"{what} must be 0 or 1, got {parts[k]!r}"
                )
        a.append(parts[0])
        b.append(parts[1])
        labels.append(parts[2] == "1")
        heur.append((parts[3] == "1", parts[4] == "1", parts[5] == "1"))
    (unk_a, unbal_a), (unk_b, unbal_b) = _row_problems(a), _row_problems(b)
    bad = np.flatnonzero(unk_a | unbal_a | unk_b | unbal_b)
    if len(bad):
        i = int(bad[0])
        side, text = ("A", a[i]) if unk_a[i] or unbal_a[i] else ("B", b[i])
        unknown = unk_a[i] if side == "A" else unk_b[i]
        reason = "unknown character" if unknown else "unbalanced parentheses"
        raise EntailmentFormatError(path, i + 1, f"{reason} in {side}: {text!r}")
    return EntailmentData(
        a=a,
        b=b,
        labels=np.asarray(labels, np.int32).reshape(-1),
        heuristics=np.asarray(heur, np.int8).reshape(-1, 3),
    )


def load_entailment_file(path):
    """Parses one dataset file (see `parse_entailment_lines`)."""
    path = os.fspath(path)
    with open(path, encoding="utf-8", newline="") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # final newline
    return parse_entailment_lines(lines, path=path)


def find_entailment_dir(data_dir=None):
    """Returns the directory holding the dataset's `<split>.txt` files.

    Looks, in order, at `data_dir`, the environment variable
    `TPR_KERAS_ENTAILMENT_DIR`, and the Keras cache folder
    `~/.keras/datasets/logical_entailment_dataset/data` (`$KERAS_HOME` replaces
    `~/.keras`, as in `keras.utils.get_file`).

    Nothing is downloaded: the official files are published only as plain
    files in the `data/` folder of the GitHub repository (see `OFFICIAL_URL`),
    with no archive and no published checksum, and this project refuses
    unverified downloads (see `tpr_keras.data.download.fetch_archive`).

    Raises:
        FileNotFoundError: `data_dir` or the environment variable names a
            missing directory, or none of the places holds the data; the
            message says what to pass.
    """
    return find_data_dir(ENTAILMENT_SOURCE, data_dir, download=False)


def load_entailment_split(split, data_dir=None):
    """Loads one split (`"train"`, `"validate"`, `"test_easy"`, ...)."""
    if split not in SPLITS:
        raise ValueError(f"Unknown split {split!r}; expected one of {SPLITS}")
    directory = find_entailment_dir(data_dir)
    return load_entailment_file(os.path.join(directory, f"{split}.txt"))


def permute_variables(a, b, seed=None):
    """Symbolic vocabulary permutation, in-graph (Evans et al., 2018).

    Draws one uniformly random permutation of the 26 variables per example
    (a bijection, unlike the authors' code, whose random map can merge
    variables and so change labels) and applies it to A and B alike; pad,
    unk, connectives and parentheses are unchanged.

    Args:
        a, b: integer id tensors `[batch, time]` (or `[time]` for one pair).
        seed: None (stateful RNG) or a shape-`[2]` integer tensor for
            `tf.random.stateless_uniform`.

    Returns:
        `(a', b')` with the same shapes and dtypes.
    """
    import tensorflow as tf

    a = tf.convert_to_tensor(a)
    b = tf.convert_to_tensor(b)
    single = a.shape.rank == 1
    if single:
        a, b = a[None], b[None]
    shape = tf.stack([tf.shape(a)[0], NUM_VARIABLES])
    if seed is None:
        noise = tf.random.uniform(shape)
    else:
        noise = tf.random.stateless_uniform(shape, seed=seed)
    perm = tf.argsort(noise, axis=-1, stable=True) + FIRST_VARIABLE_ID
    fixed = tf.broadcast_to(
        tf.range(FIRST_VARIABLE_ID, dtype=perm.dtype), [shape[0], FIRST_VARIABLE_ID]
    )
    table = tf.concat([fixed, perm], axis=-1)  # [batch, VOCAB_SIZE]
    out_a = tf.cast(tf.gather(table, tf.cast(a, tf.int32), batch_dims=1), a.dtype)
    out_b = tf.cast(tf.gather(table, tf.cast(b, tf.int32), batch_dims=1), b.dtype)
    if single:
        out_a, out_b = out_a[0], out_b[0]
    return out_a, out_b


def make_dataset(
    data,
    batch_size=64,
    shuffle=False,
    augment=False,
    seed=None,
    shuffle_buffer=None,
    drop_remainder=False,
    pad_to=None,
    prefetch=True,
):
    """Builds a `tf.data.Dataset` of padded batches.

    Args:
        data: `EntailmentData`.
        batch_size: examples per batch.
        shuffle: shuffle examples (re-shuffled every epoch).
        augment: apply `permute_variables` to every batch (a fresh random
            permutation per example and epoch).
        seed: int or None; makes shuffling and augmentation reproducible.
        shuffle_buffer: shuffle buffer size (default: the whole data).
        drop_remainder: drop the last partial batch.
        pad_to: None pads each batch to its longest proposition; an int pads
            A and B of every batch to exactly that length (fixed shapes; a
            longer proposition raises `ValueError`); ``"longest"`` pads to the
            longest proposition of ``data`` (one shape for every batch, which is
            what an XLA-compiled step wants: each new shape is a new
            compilation).
        prefetch: add `prefetch(tf.data.AUTOTUNE)`.

    Returns:
        Dataset of `({"a": int32[batch, La], "b": int32[batch, Lb]},
        float32[batch, 1])`, 0 = padding.
    """
    import tensorflow as tf

    a_ids, a_splits = encode_many(data.a)
    b_ids, b_splits = encode_many(data.b)
    a = tf.RaggedTensor.from_row_splits(a_ids, a_splits, validate=False)
    b = tf.RaggedTensor.from_row_splits(b_ids, b_splits, validate=False)
    labels = data.labels.astype(np.float32).reshape(-1, 1)
    ds = tf.data.Dataset.from_tensor_slices(({"a": a, "b": b}, labels))
    if shuffle:
        ds = ds.shuffle(
            shuffle_buffer or max(len(data), 1), seed=seed,
            reshuffle_each_iteration=True,
        )
    shape = [None, _padded_length(pad_to, a_splits, b_splits)]

    def _pad(x, y):
        return {k: x[k].to_tensor(PAD_ID, shape=shape) for k in ("a", "b")}, y

    ds = ds.ragged_batch(batch_size, drop_remainder=drop_remainder).map(
        _pad, num_parallel_calls=tf.data.AUTOTUNE
    )
    if augment:
        ds = _augmented(ds, seed)
    if prefetch:
        ds = ds.prefetch(tf.data.AUTOTUNE)
    return ds


def _padded_length(pad_to, a_splits, b_splits):
    """:func:`make_dataset`'s ``pad_to`` as a length (``"longest"``: the longest
    proposition); None stays None. Raises ValueError when a proposition is longer."""
    if pad_to is None:
        return None
    longest = int(max(np.diff(a_splits).max(initial=0), np.diff(b_splits).max(initial=0)))
    if pad_to == "longest":
        pad_to = longest
    if longest > pad_to:
        raise ValueError(f"pad_to={pad_to} < longest proposition ({longest})")
    return pad_to


def _augmented(ds, seed):
    """``ds`` with :func:`permute_variables` applied to every batch: a fresh permutation
    per example and epoch, reproducible from ``seed`` when given."""
    import tensorflow as tf

    if seed is None:
        def _augment(x, y):
            pa, pb = permute_variables(x["a"], x["b"])
            return {"a": pa, "b": pb}, y
        return ds.map(_augment, num_parallel_calls=tf.data.AUTOTUNE)
    seeds = tf.data.Dataset.random(
        seed=seed, rerandomize_each_iteration=True
    ).batch(2)

    def _augment_seeded(batch, s):
        x, y = batch
        pa, pb = permute_variables(x["a"], x["b"], seed=s)
        return {"a": pa, "b": pb}, y

    return tf.data.Dataset.zip((ds, seeds)).map(
        _augment_seeded, num_parallel_calls=tf.data.AUTOTUNE
    )
