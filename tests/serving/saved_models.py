"""Helpers of the export tests: a SavedModel run the way TF Serving's C++ server runs it,
and one loaded once per process."""

import functools


@functools.lru_cache(maxsize=None)
def load(path):
    """``tf.saved_model.load(path)``, once per test process and path: loading a decoder's
    SavedModel takes seconds, and the tests only call its signatures, which keep no state
    between calls."""
    import tensorflow as tf

    return tf.saved_model.load(str(path))


def tf1_session_outputs(path, output, **inputs):
    """``output`` of a SavedModel's ``serving_default`` run as the C++ server runs it: a
    TF1 Session fed through the SignatureDef's tensor names."""
    import tensorflow as tf

    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        meta = tf.compat.v1.saved_model.loader.load(session, ["serve"], str(path))
        signature = meta.signature_def["serving_default"]
        return session.run(signature.outputs[output].name, {
            signature.inputs[name].name: value for name, value in inputs.items()})
