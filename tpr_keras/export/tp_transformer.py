"""The TP-Transformer exporter: a :class:`MathAnswerer` as a string-in/string-out SavedModel.

It reads the task model's backbone and its preprocessor's vocabulary and question length,
so the served model and ``MathAnswerer.predict`` are built from one object.

Signature ``serving_default``: ``question`` (``tf.string[batch]``) -> ``answer``
(``tf.string[batch]``, greedy-decoded in-graph with the key/value cache inside one
``tf.while_loop``), ``log_prob`` (``float32[batch]``, the log-probability of the decoded
answer), ``unknown_characters`` (``int32[batch]``: characters of the question outside the
vocabulary), ``unknown_tokens`` (``tf.string[batch]``: those characters, distinct,
space-separated), ``question_characters`` (``int32[batch]``: 0 for an empty question,
answered all the same), ``dropped_characters`` (``int32[batch]``: characters past the
``max_length`` the model reads, not read) and, when the preprocessor has its trained
modules' templates, ``module`` (``tf.string[batch]``: the trained module whose wording the
question has, or ``""``: a question the model was not trained on, answered all the same;
the rule, expression patterns included: :mod:`tpr_keras.data.mathematics.templates`); for
an answerer with ``claims`` (the modules its preset claims,
:mod:`tpr_keras.presets.module_claims`), ``claimed`` (``bool[batch]``: whether the
question's module is one of them; False for ``""``). ``beam`` does the same with beam
search. Signature ``coverage`` (with claims only): no inputs -> one ``float64`` scalar
per claimed module, named after it: its exact match % on the fresh generator sample the
claim was measured on, and ``threshold_percent``, the score a module needed; so
``GetModelMetadata`` lists the claimed modules and one ``Predict`` returns their scores
(two outputs at least: TF Serving's REST API names the outputs of a signature only when
there are several).
A routed backbone (``RoutedTPTransformer``) answers each question by its module's
decoder: the batch is partitioned by route, each part decoded by its decoder, and the
answers stitched back in order. Characters are encoded and decoded in the graph
(:class:`MathTokenizer`, the ids of ``CharVocabulary.encode_question``): unknown
characters map to ``<unk>``, questions are cut at the preprocessor's ``max_length`` (160
characters), answers at 30. :func:`export_math_answerer` (what ``MathAnswerer.export``
calls) puts the SavedModel into TF Serving's layout
(:mod:`tpr_keras.export.versions`) with a warm-up request, so that the first real
request does not pay for building the decoding loop's kernels; :func:`export_math_model`
does the same for a bare model and its vocabulary, through their task model.
"""

import functools

import tensorflow as tf

from tpr_keras.backend.tensorflow.shared_traces import shared_traces
from tpr_keras.data.mathematics import MAX_ANSWER_LENGTH, CharVocabulary
from tpr_keras.data.mathematics.templates import NUMBER_MARK, NUMBER_PATTERN
from tpr_keras.export.tp_transformer_tokenizer import MathTokenizer
from tpr_keras.export.unknown_tokens import join_distinct_rows
from tpr_keras.export.versions import (
    SIGNATURE_KEY,
    export_version,
    save_servable,
    traced_once,
)
from tpr_keras.models.tp_transformer.tp_transformer_answerer import MathAnswerer, is_routed
from tpr_keras.models.tp_transformer.tp_transformer_preprocessor import MathPreprocessor

BEAM_SIGNATURE_KEY = "beam"
COVERAGE_SIGNATURE_KEY = "coverage"
#: The ``coverage`` output beside the claimed modules: the exact match % they needed.
THRESHOLD_OUTPUT = "threshold_percent"
#: The outputs of ``serving_default`` and ``beam`` beside the answer that say what the
#: model did not take in, with their dtypes (each ``[batch]``; and ``module``, with
#: templates).
REPORT_OUTPUTS = {"unknown_characters": "int32", "unknown_tokens": "string",
                  "question_characters": "int32", "dropped_characters": "int32"}
#: One request a fresh version answers before it serves (TF Serving's warm-up).
WARMUP_INPUTS = {"question": ["What is the tens digit of 2934?"]}


def module_in_graph(question, modules, patterns):
    """``ModuleTemplates.module_of`` in the graph: the module of each question's template
    (``modules``, a ``StaticHashTable`` of template -> module, ``""`` if none), else the
    first module (sorted) whose pattern (``{module: RE2 pattern}``) the template matches,
    else ``""``."""
    template = tf.strings.regex_replace(question, NUMBER_PATTERN, NUMBER_MARK)
    module = modules.lookup(template)
    for name, pattern in patterns.items():
        module = tf.where(tf.equal(module, "") & tf.strings.regex_full_match(template, pattern),
                          name, module)
    return module


class MathServingModule(tf.Module):
    """String-in/string-out wrapper of a :class:`MathAnswerer`.

    The Keras model is only closed over, never tracked: the module tracks the
    variables its traced functions read, so the TF1 loader (TF Serving's path)
    restores exactly the variables the graph uses.

    Args:
        answerer: the task model: its backbone (a :class:`TPTransformer`) and its
            preprocessor's :class:`~tpr_keras.data.mathematics.CharVocabulary` and
            ``max_length``.
        beam_size: hypotheses of the ``beam`` signature.
    """

    def __init__(self, answerer, beam_size=4):
        super().__init__(name="math_serving")
        model, preprocessor = answerer.backbone, answerer.preprocessor
        self.chars = MathTokenizer(preprocessor.vocabulary)
        self.beam_size = int(beam_size)
        chars, beam_size, max_length = self.chars, self.beam_size, MAX_ANSWER_LENGTH + 1
        question_length = preprocessor.max_length
        spec = [tf.TensorSpec([None], tf.string, name="question")]
        self.modules = None
        if preprocessor.templates is not None:
            lookup = preprocessor.templates.lookup
            self.modules = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(tf.constant(list(lookup), tf.string),
                                                    tf.constant(list(lookup.values()),
                                                                tf.string)),
                default_value="")
        modules = self.modules
        claimed = self._claims(answerer.claims, answerer.claim_threshold)
        routed = is_routed(model)
        decoders = model.decoders() if routed else [model]
        if routed:
            self.routes = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(
                    tf.constant(list(model.expert_modules), tf.string),
                    tf.constant([model.module_routes[m] for m in model.expert_modules],
                                tf.int32)), default_value=0)
        routes = getattr(self, "routes", None)

        module_of = functools.partial(
            module_in_graph, modules=modules,
            patterns={} if modules is None else preprocessor.templates.patterns)

        def decode(question, ids, decode_one):
            """``decode_one(decoder, ids)`` by the model, or, routed, by each question's
            module's decoder on its rows (partitioned, decoded, stitched back; decoders
            of one architecture share one trace:
            :mod:`tpr_keras.backend.tensorflow.shared_traces`)."""
            if not routed:
                return decode_one(model, ids)
            route = routes.lookup(module_of(question))
            rows = tf.dynamic_partition(tf.range(tf.shape(ids)[0]), route, len(decoders))
            parts = tf.dynamic_partition(ids, route, len(decoders))
            calls = shared_traces(decoders, decode_one)
            outs = [call(part) for call, part in zip(calls, parts)]
            return tuple(tf.dynamic_stitch(rows, [o[i] for o in outs]) for i in range(2))

        def answered(question, ids, out, log_prob):
            length = chars.question_characters(question)
            result = {"answer": chars.decode(out), "log_prob": log_prob,
                      "unknown_characters": tf.reduce_sum(tf.cast(
                          tf.equal(ids, CharVocabulary.UNK_ID), tf.int32), axis=1),
                      "unknown_tokens": join_distinct_rows(
                          chars.unknown_characters(question, question_length)),
                      "question_characters": length,
                      "dropped_characters": tf.maximum(length - question_length, 0)}
            if modules is not None:
                result["module"] = module_of(question)
                if claimed is not None:
                    result["claimed"] = claimed.lookup(result["module"])
            return result

        def serve(question):
            ids = chars.encode(question, question_length)
            out, log_prob = decode(question, ids, lambda decoder, part: decoder.greedy_decode(
                part, max_length=max_length))
            return answered(question, ids, out, log_prob)

        def beam(question):
            ids = chars.encode(question, question_length)
            out, log_prob = decode(question, ids, lambda decoder, part: decoder.beam_search(
                part, beam_size, max_length))
            return answered(question, ids, out, log_prob)

        # The decoders' loops are keras.ops.while_loop already: no autograph.
        self.serve = traced_once(serve, spec, autograph=False)
        self.beam = traced_once(beam, spec, autograph=False)
        captured = {id(v): v for f in (self.serve, self.beam) for v in f.variables}
        self.captured_variables = list(captured.values())

    def _claims(self, claims, threshold):
        """The ``module -> claimed`` table and the ``coverage`` function of ``claims``
        (``{module: exact match %}``, each at least ``threshold``), or None for an answerer
        without claims."""
        self.claimed, self.coverage = None, None
        if claims is None:
            return None
        names = sorted(claims)
        self.claimed = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
            tf.constant(names or [""], tf.string),
            tf.constant([True] * len(names) or [False], tf.bool)), default_value=False)
        if not names:  # claims nothing: every answer's ``claimed`` is False, no coverage
            return self.claimed
        scores = {m: float(claims[m]) for m in names} | {THRESHOLD_OUTPUT: float(threshold)}
        self.coverage = traced_once(
            lambda: {m: tf.constant(score, tf.float64) for m, score in scores.items()}, [],
            autograph=False)
        return self.claimed

    def signatures(self):
        """The SavedModel's signatures: ``serving_default``, ``beam`` and, with claims,
        ``coverage``."""
        signatures = {SIGNATURE_KEY: self.serve, BEAM_SIGNATURE_KEY: self.beam}
        if self.coverage is not None:
            signatures[COVERAGE_SIGNATURE_KEY] = self.coverage
        return signatures


def save_math_servable(answerer, path, beam_size=4):
    """Saves ``answerer`` (a :class:`MathAnswerer`) as a string-in/string-out SavedModel at
    ``path``; returns its description (for ``export_info.json``)."""
    module = MathServingModule(answerer, beam_size)
    save_servable(module, path, module.signatures())
    preprocessor = answerer.preprocessor
    claims = answerer.claims
    with_module = {} if preprocessor.templates is None else {"module": "string[batch]"}
    if claims is not None:
        with_module["claimed"] = "bool[batch]"
    coverage = {} if not claims else {COVERAGE_SIGNATURE_KEY: {
        "inputs": {}, "outputs": {m: "float64[]" for m in [*sorted(claims), THRESHOLD_OUTPUT]}}}
    return {"format": "tpr-keras/math-serving/1",
            "model_class": type(answerer.backbone).__name__,
            "routed_modules": list(getattr(answerer.backbone, "expert_modules", [])),
            "modules": None if preprocessor.templates is None else
            preprocessor.templates.modules,
            "vocabulary_size": len(preprocessor.vocabulary),
            "max_question_length": preprocessor.max_length,
            "signatures": {key: {"inputs": {"question": "string[batch]"}, "outputs": {
                "answer": "string[batch]", "log_prob": "float32[batch]",
                **{name: f"{kind}[batch]" for name, kind in REPORT_OUTPUTS.items()},
                **with_module}} for key in (SIGNATURE_KEY, BEAM_SIGNATURE_KEY)} | coverage,
            "claims": claims, "claim_threshold_percent": answerer.claim_threshold,
            "max_answer_length": MAX_ANSWER_LENGTH, "beam_size": beam_size}


def export_math_answerer(answerer, export_dir, model_name="math", *, version=None,
                         beam_size=4):
    """Writes ``<export_dir>/<model_name>/<version>/`` (TF Serving layout) of ``answerer``;
    returns it (``MathAnswerer.export`` calls this).

    ``version`` defaults to one more than the largest existing version.

    Raises:
        FileExistsError: ``version`` is given and already exists.
    """
    return export_version(export_dir, model_name, version,
                          lambda tmp: save_math_servable(answerer, tmp, beam_size),
                          WARMUP_INPUTS)


def export_math_model(model, vocab, export_dir, model_name="math", version=None, beam_size=4):
    """Writes ``<export_dir>/<model_name>/<version>/`` (TF Serving layout) of a bare
    TP-Transformer and its ``CharVocabulary``, through their task model
    (``MathAnswerer(model, MathPreprocessor(vocab))``); returns it.

    ``version`` defaults to one more than the largest existing version.

    Raises:
        FileExistsError: ``version`` is given and already exists.
    """
    return export_math_answerer(MathAnswerer(model, MathPreprocessor(vocab)), export_dir,
                                model_name, version=version, beam_size=beam_size)
