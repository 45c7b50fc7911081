"""Converters of checkpoints trained with the authors' code into tpr-keras presets.

``convert_tp_transformer_checkpoints`` reads a ``torch.save`` file of the authors'
TP-Transformer (https://github.com/ischlag/TP-Transformer) and
``convert_tpr_rnn_checkpoints`` a ``tf.train.Saver`` checkpoint of the authors' TPR-RNN
(https://github.com/ischlag/TPR-RNN); each writes a preset folder (config, weights,
``assets/vocab.txt``, metadata) that ``from_preset``, ``python -m train.export`` and the
server read. Each module holds the one mapping of the authors' weight names to the
port's, which the fixture generators of ``tools/fidelity`` import. docs/checkpoint_conversion.md
has the commands and what cannot be converted.
``convert_memn2n_checkpoints`` reads the ``.mat`` of a trained workspace of the authors'
MemN2N MATLAB code (its MemN2N section says how to save one).
"""

from tpr_keras.presets import preset_writer


def add_preset_arguments(parser):
    """The converters' shared flags: ``--output``, ``--model_name``, ``--description``,
    ``--overwrite`` (what :func:`write_preset` reads)."""
    parser.add_argument("--output", required=True, help="the preset folder to write")
    parser.add_argument("--model_name", default=None, help="served model name (default: "
                                                           "the task's)")
    parser.add_argument("--description", default="")
    parser.add_argument("--overwrite", action="store_true")
    return parser


def write_preset(model, vocab, args, *, task, model_kind, source, conversion,
                 serving_options=None):
    """Saves a converted ``model`` with its ``vocab`` as the preset ``args.output``.

    The metadata names the task, the served model name (``args.model_name``), a
    description (``args.description``, or "``model_kind`` trained with the authors' code
    (``conversion["authors_repository"]``), converted"), that it was converted from
    ``source`` and not evaluated here, the time, the ``serving_options`` if any and the
    ``conversion`` record. Returns the preset's path.
    """
    path = preset_writer.write_preset(
        model, args.output, task=task, model_name=args.model_name or task,
        description=args.description or (
            f"{model_kind} trained with the authors' code "
            f"({conversion['authors_repository']}), converted"),
        headline=f"converted from the authors' {source}; not evaluated here",
        assets={"vocab.txt": vocab.save}, overwrite=args.overwrite,
        **({"serving_options": serving_options} if serving_options else {}),
        conversion=conversion)
    print(f"Preset: {path} ({len(vocab)} tokens, {model.count_params()} parameters)")
    return path


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
