"""The bAbI text specification: how a sentence becomes tokens.

One specification, two implementations built from it: :func:`tokenize` (Python, the
data loader) and the in-graph tokenizer of :mod:`tpr_keras.models.babi` (exports),
which turns the same constants into ``tf.strings`` regular expressions; a test
checks that both give the same tokens.

* Lower-case.
* Each of :data:`PUNCTUATION` (``. ? ! , ; :``) is a token of its own.
* Tokens are split on whitespace (Python's ``str.split()`` whitespace,
  :data:`PY_WHITESPACE_EXCEPT_NEWLINE` plus ``\\n``).
* In a story text, :data:`SENTENCE_ENDS` (``. ? !``) and newlines end a sentence
  (:func:`split_story`).
* Optionally (``keep_sentence_ends=False``) the sentence-end marks ``. ? !`` are then
  dropped, as the MemN2N authors' parser does (MemN2N-babi-matlab ``parseBabiTask.m``
  strips each line's final ``.`` or ``?``); the other punctuation stays a token.
"""

from __future__ import annotations

#: Characters that are tokens of their own.
PUNCTUATION = ".?!,;:"
#: Characters that end a sentence of a story text (as newlines do).
SENTENCE_ENDS = ".?!"
#: Every character Python's ``str.split()`` treats as whitespace, except ``\n`` (which
#: separates sentences), as an RE2 class. ``tests/serving`` checks it against
#: ``str.isspace`` over all of Unicode.
PY_WHITESPACE_EXCEPT_NEWLINE = (
    r"[\t\x0b\x0c\r\x1c-\x1f\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}"
    r"\x{202f}\x{205f}\x{3000}]"
)

# Same result as re.sub(r"([.?!,;:])", r" \1 ", text), in one C-level pass.
_PUNCT_TABLE = str.maketrans({c: f" {c} " for c in PUNCTUATION})


def regex_group(chars: str) -> str:
    """An RE2 capturing group matching any one of ``chars``: ``"([\\.\\?])"``."""
    return "([" + "".join("\\" + c for c in chars) + "])"


def tokenize(text: str, keep_sentence_ends: bool = True) -> list[str]:
    """Splits a bAbI sentence or question into tokens.

    Lower-cases, puts spaces around each of ``. ? ! , ; :`` and splits on whitespace.
    In-graph equivalent: ``tf.strings.split(tf.strings.regex_replace(
    tf.strings.lower(x), regex_group(PUNCTUATION), r" \\1 "))``.

    Args:
        text: Raw sentence text (without the leading line number).
        keep_sentence_ends: False drops the tokens ``. ? !`` (:data:`SENTENCE_ENDS`).

    Returns:
        The tokens, e.g. ``["where", "is", "mary", "?"]`` (``["where", "is", "mary"]``
        without sentence ends).
    """
    tokens = text.lower().translate(_PUNCT_TABLE).split()
    return tokens if keep_sentence_ends else [t for t in tokens if t not in SENTENCE_ENDS]


def normalize(text: str) -> str:
    """A story or question as the in-graph tokenizer reads it: NUL becomes U+FFFD (an
    ordinary unknown character, where TensorFlow's lower-casing would drop it)."""
    return text.replace("\x00", "\ufffd")


def split_story(text: str, keep_sentence_ends: bool = True) -> list[list[str]]:
    """Splits a story text into tokenized sentences, as the exported models do.

    A sentence ends at a newline and after each of :data:`SENTENCE_ENDS`; each
    sentence is :func:`tokenize`-d; empty sentences are dropped. The in-graph
    tokenizer (``tpr_keras.models.babi.BabiTokenizer``) implements the same rules.

    Args:
        text: The story, e.g. ``"Mary went to the kitchen. John moved to the garden."``.
        keep_sentence_ends: False drops the marks ``. ? !`` once they have split the
            sentences (a sentence left empty is dropped too).

    Returns:
        The sentences' tokens, e.g. ``[["mary", "went", "to", "the", "kitchen", "."],
        ["john", "moved", "to", "the", "garden", "."]]``.
    """
    sentences = []
    for line in normalize(text).split("\n"):
        current: list[str] = []
        for token in tokenize(line):
            current.append(token)
            if token in SENTENCE_ENDS:
                sentences.append(current)
                current = []
        if current:
            sentences.append(current)
    if keep_sentence_ends:
        return sentences
    sentences = [[t for t in s if t not in SENTENCE_ENDS] for s in sentences]
    return [s for s in sentences if s]
