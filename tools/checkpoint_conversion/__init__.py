"""Converters of checkpoints trained with the authors' code into tpr-keras presets.

``convert_tp_transformer_checkpoints`` reads a ``torch.save`` file of the authors'
TP-Transformer (https://github.com/ischlag/TP-Transformer) and
``convert_tpr_rnn_checkpoints`` a ``tf.train.Saver`` checkpoint of the authors' TPR-RNN
(https://github.com/ischlag/TPR-RNN); each writes a preset folder (config, weights,
``assets/vocab.txt``, metadata) that ``from_preset``, ``python -m train.export`` and the
server read. Each module holds the one mapping of the authors' weight names to the
port's, which the fixture generators of ``tools/fidelity`` import. docs/fidelity.md,
"Checkpoint conversion", has the commands and what cannot be converted.
``convert_memn2n_checkpoints`` reads the ``.mat`` of a trained workspace of the authors'
MemN2N MATLAB code (its MemN2N section says how to save one).
"""


def assign_weights(model, weights):
    """Assigns ``weights`` (``{variable path: array}``) to ``model``'s trainable variables.

    Raises:
        ValueError: the paths differ from the model's (the message lists those on one
            side only).
    """
    variables = {v.path: v for v in model.trainable_variables}
    if set(variables) != set(weights):
        raise ValueError(f"the port's variables differ: {sorted(set(variables) ^ set(weights))}")
    for path, variable in variables.items():
        variable.assign(weights[path].astype(variable.dtype))
    return model
