import pytest

from tpr_keras.data.babi import Vocabulary
from tpr_keras.data.mathematics import CharVocabulary
from tpr_keras.data.vocabulary import TokenTable


def test_both_vocabularies_share_the_table_and_its_file(tmp_path):
    words = Vocabulary.build(["garden", "mary", "garden"])
    chars = CharVocabulary.build(["a b", "ba"])
    assert isinstance(words, TokenTable) and isinstance(chars, TokenTable)
    assert words.tokens == ("<pad>", "<unk>", "garden", "mary")
    assert chars.tokens == ("<pad>", "<unk>", "<s>", "</s>", " ", "a", "b")
    for vocab in (words, chars):
        path = tmp_path / f"{type(vocab).__name__}.txt"
        vocab.save(path)
        assert path.read_bytes() == "".join(t + "\n" for t in vocab.tokens).encode()
        again = type(vocab).load(path)
        assert again == vocab and hash(again) == hash(vocab) and list(again) == list(vocab)
        assert "a" in chars and "zebra" not in vocab and len(again) == len(vocab.tokens)
    assert Vocabulary(["<pad>", "<unk>", "a"]) != CharVocabulary.build(["a"])


@pytest.mark.parametrize("cls, tokens, message", [
    (Vocabulary, ["<unk>", "<pad>"], "must start with"),
    (Vocabulary, ["<pad>", "<unk>", "a", "a"], "duplicate"),
    (Vocabulary, ["<pad>", "<unk>", "two\nlines"], "invalid vocabulary token"),
    (CharVocabulary, ["<pad>", "<unk>", "<s>", "</s>", "ab"], "invalid character symbol"),
    (CharVocabulary, ["<pad>", "<unk>", "<s>", "</s>", "a", "a"], "duplicate"),
])
def test_bad_tables_are_refused(cls, tokens, message):
    with pytest.raises(ValueError, match=message):
        cls(tokens)
