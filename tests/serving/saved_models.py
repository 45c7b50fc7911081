"""Helpers of the export tests: a SavedModel run the way TF Serving's C++ server runs it."""


def tf1_session_outputs(path, output, **inputs):
    """``output`` of a SavedModel's ``serving_default`` run as the C++ server runs it: a
    TF1 Session fed through the SignatureDef's tensor names."""
    import tensorflow as tf

    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        meta = tf.compat.v1.saved_model.loader.load(session, ["serve"], str(path))
        signature = meta.signature_def["serving_default"]
        return session.run(signature.outputs[output].name, {
            signature.inputs[name].name: value for name, value in inputs.items()})
