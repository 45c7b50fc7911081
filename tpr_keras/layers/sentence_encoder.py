"""Sentence encoder of TPR-RNN: word embeddings weighted by learned position vectors."""

import keras
import tensorflow as tf


@keras.saving.register_keras_serializable(package="tpr_keras")
class SentenceEncoder(keras.layers.Layer):
    """Encodes a padded sentence of word ids into one vector, eq. 5.

    Schlag & Schmidhuber (2018), eq. 5: ``s = Σ_i d_i ⊙ p_i``, where ``d_i`` is
    the embedding of word ``i`` and ``p_i`` a learned position vector shared by
    all sentences. Following Appendix A, embeddings start U(-0.01, 0.01) and
    position vectors start at ``1/k`` (``k`` = number of word slots).

    Word id 0 is padding and contributes nothing: its embedding is masked out
    (the authors' code let the pad embedding leak into ``s``).

    Implementation: only the real (non-pad) words are gathered, multiplied by
    their position vectors and summed per sentence (a segment sum), so padded
    word slots and padded sentences cost nothing, forward or backward.

    Args:
        vocabulary_size: number of word ids, including pad (0) and unknown.
        symbol_dim: width of ``V_Symbol`` (the paper uses the vocabulary size).
        embeddings_initializer: initializer of the word embeddings.

    Input: int ids ``[..., k]``. Output: ``[..., symbol_dim]``.

    Example:
    >>> encoder = SentenceEncoder(vocabulary_size=30, symbol_dim=30)
    >>> encoder(np.array([[4, 7, 2, 0, 0]])).shape
    TensorShape([1, 30])
    """

    def __init__(
        self,
        vocabulary_size,
        symbol_dim,
        embeddings_initializer=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocabulary_size = int(vocabulary_size)
        self.symbol_dim = int(symbol_dim)
        self.embeddings_initializer = keras.initializers.get(
            embeddings_initializer
            or keras.initializers.RandomUniform(-0.01, 0.01)
        )

    def build(self, input_shape):
        num_positions = input_shape[-1]
        if num_positions is None:
            raise ValueError(
                "SentenceEncoder needs a static number of word slots (last "
                f"input axis); got input shape {input_shape}."
            )
        self.embedding = keras.layers.Embedding(
            self.vocabulary_size,
            self.symbol_dim,
            embeddings_initializer=self.embeddings_initializer,
            name="word_embedding",
        )
        self.embedding.build((None,))
        self.positions = self.add_weight(
            name="positions",
            shape=(num_positions, self.symbol_dim),
            initializer=keras.initializers.Constant(1.0 / num_positions),
        )
        self.built = True

    def call(self, word_ids):
        word_ids = tf.cast(word_ids, "int32")
        slots = tf.shape(word_ids)[-1]
        # Only real words are gathered: pad words (id 0) contribute nothing.
        sentences = tf.reshape(word_ids, [-1, slots])
        where = tf.where(sentences > 0)  # [words, 2]: (sentence, slot), int64
        words = tf.gather(self.embedding.embeddings, tf.gather_nd(sentences, where))
        positions = tf.gather(self.positions, where[:, 1])
        summed = tf.math.unsorted_segment_sum(
            words * positions, where[:, 0], tf.shape(sentences, out_type="int64")[0]
        )
        return tf.reshape(
            summed, tf.concat([tf.shape(word_ids)[:-1], [self.symbol_dim]], axis=0)
        )

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.symbol_dim,)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "symbol_dim": self.symbol_dim,
                "embeddings_initializer": keras.initializers.serialize(
                    self.embeddings_initializer
                ),
            }
        )
        return config
