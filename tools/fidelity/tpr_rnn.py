"""Fixture of ``tests/fidelity/test_tpr_rnn.py``: the authors' TPR-RNN graph on a real bAbI
batch (docs/fidelity_tpr_rnn.md).

    python -m tools.fidelity.tpr_rnn --authors_code /tmp/tpr-rnn-authors \\
        --data_dir ../shared/data/babi --out tests/fidelity/fixtures/tpr_rnn.npz

Runs https://github.com/ischlag/TPR-RNN's ``tpr_rnn_graph.py`` (a script that parses the
data, builds the graph and opens a session at import) in TensorFlow 1 form:
``tf.compat.v1`` with ``disable_v2_behavior()``, in its own process (no Keras 3 here).
Their text is unchanged; at runtime:

* ``import tensorflow as tf`` in their files gets ``tf.compat.v1``, given a ``contrib``
  with ``rnn.RNNCell`` (TF's legacy ``rnn_cell_impl.RNNCell``) and
  ``opt.NadamOptimizer`` (``AdamOptimizer`` whose dense apply ops run with
  ``use_nesterov=True``, which is what contrib's Nadam did);
* ``preprocessor/reader.py``'s split pattern ``'(\\W+)?'`` becomes ``'(\\W+)'`` (on
  Python 3.7+ the optional group also matches the empty string, splitting characters);
* their hyper-parameter namespace keeps ``--entity``, ``--role``, ``--hidden`` (small)
  and ``--init_limit`` (the word embeddings' uniform range; theirs is 0.1) whatever the
  script assigns; their data folder ``tasks/en-valid-10k`` is a temporary
  folder holding the first ``--stories`` stories of the task's ``en-10k`` train file as
  train and of its test file as valid and test.

In eval form on batch 0 (the first ``--batch`` questions of that train file, as their
parser vectorises them) with the pad word's embedding row set to zero (the port's pad
reads as zeros), it records under the port's variable names
(:class:`tpr_keras.models.TPRRNN`): ``weights/<path>``, ``input/*``, ``act/*`` (sentence
and question encodings, the story MLPs' outputs, the memory ``F``, the question MLPs'
outputs, each inference step, ``logits``), ``loss`` (their ``cost``), ``grad/<path>``;
then their training step (``train_op``: Nadam, clip at global norm 5, their warm-up
learning rate 1e-4) on batches 0 .. ``--steps``-1: ``train/loss``, ``train/grad_norm``
and ``final/<path>``, and the values their Nadam's power accumulators start from
(``optimizer/beta1_power_start``, ``optimizer/beta2_power_start``: the random initial
values of their β variables, which are assigned 0.9 / 0.999 only afterwards). Their ``query_entity`` network 1 (``q_e2``) feeds nothing; it has
no counterpart in the port and no gradient.

``--checkpoint_out DIR`` also writes the fixture of ``tests/tools/checkpoint_converters``
(:func:`write_checkpoint_fixture`): a checkpoint written by their ``tf.train.Saver``,
their parser's cache holding ``word2id`` and their logits with its weights.
"""

import argparse
import os
import re
import shutil
import sys
import tempfile
import types

import numpy as np

from tools.checkpoint_conversion.convert_tpr_rnn_checkpoints import port_names
from tools.fidelity import common


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--authors_code", required=True,
                        help="work tree of github.com/ischlag/TPR-RNN")
    parser.add_argument("--authors_commit", default=None)
    parser.add_argument("--data_dir", required=True, help="bAbI folder holding en-10k/")
    parser.add_argument("--out", default="tests/fidelity/fixtures/tpr_rnn.npz")
    parser.add_argument("--task", type=int, default=1)
    parser.add_argument("--stories", type=int, default=60)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--entity", type=int, default=10)
    parser.add_argument("--role", type=int, default=5)
    parser.add_argument("--hidden", type=int, default=12)
    # Their 0.1 leaves every memory read far below the layer norms' sqrt(1e-7) at these
    # sizes (logits ~1e-2, inference steps ~1e-4: a regime insensitive to the inference
    # module's weights); 1.0 makes the reads O(0.01 - 1).
    parser.add_argument("--init_limit", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--checkpoint_out", default=None,
                        help="also write the checkpoint-conversion fixture to this folder")
    parser.add_argument("--checkpoint_steps", type=int, default=200,
                        help="their training steps after the trajectory, before that save")
    return parser.parse_args(argv)


def first_stories(path, count):
    """The lines of the first ``count`` stories of a bAbI file."""
    lines, seen = [], 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.split(" ", 1)[0] == "1":
                seen += 1
                if seen > count:
                    break
            lines.append(line)
    return "".join(lines)


def data_folder(data_dir, task, stories):
    """A temporary ``tasks/en-valid-10k`` as their parser wants it; returns its root."""
    root = tempfile.mkdtemp(prefix="tpr-rnn-fidelity-")
    folder = os.path.join(root, "tasks", "en-valid-10k")
    os.makedirs(folder)
    os.makedirs(folder + "-pik")
    source = os.path.join(data_dir, "en-10k")
    names = {kind: next(n for n in sorted(os.listdir(source))
                        if n.startswith(f"qa{task}_") and n.endswith(f"_{kind}.txt"))
             for kind in ("train", "test")}
    for kind, origin in (("train", "train"), ("valid", "test"), ("test", "test")):
        with open(os.path.join(folder, f"qa{task}_{kind}.txt"), "w", encoding="utf-8") as f:
            f.write(first_stories(os.path.join(source, names[origin]), stories))
    return root, names


def nadam_class(v1):
    """contrib's ``NadamOptimizer``: ``AdamOptimizer`` with Nesterov's apply ops."""

    class NadamOptimizer(v1.train.AdamOptimizer):
        def _args(self, grad):
            beta1_power, beta2_power = self._get_beta_accumulators()
            dtype = grad.dtype.base_dtype
            return dict(beta1_power=v1.cast(beta1_power, dtype),
                        beta2_power=v1.cast(beta2_power, dtype),
                        lr=v1.cast(self._lr_t, dtype), beta1=v1.cast(self._beta1_t, dtype),
                        beta2=v1.cast(self._beta2_t, dtype),
                        epsilon=v1.cast(self._epsilon_t, dtype), grad=grad,
                        use_locking=self._use_locking, use_nesterov=True)

        def _apply_dense(self, grad, var):
            return v1.raw_ops.ApplyAdam(var=var, m=self.get_slot(var, "m"),
                                        v=self.get_slot(var, "v"), **self._args(grad)).op

        def _resource_apply_dense(self, grad, var):
            return v1.raw_ops.ResourceApplyAdam(
                var=var.handle, m=self.get_slot(var, "m").handle,
                v=self.get_slot(var, "v").handle, **self._args(grad))

        def _apply_sparse_shared(self, *args, **kwargs):
            raise NotImplementedError("their graph has dense gradients only")

    return NadamOptimizer


def run_their_graph(args, root):
    """Executes their ``tpr_rnn_graph.py`` with the substitutions; returns its globals."""
    import tensorflow

    from tensorflow.python.keras.layers.legacy_rnn import rnn_cell_impl

    v1 = tensorflow.compat.v1
    v1.disable_v2_behavior()
    v1.set_random_seed(args.seed)
    np.random.seed(args.seed)
    v1.contrib = types.SimpleNamespace(rnn=types.SimpleNamespace(RNNCell=rnn_cell_impl.RNNCell),
                                       opt=types.SimpleNamespace(NadamOptimizer=nadam_class(v1)))
    pinned = {"entity_size": args.entity, "role_size": args.role, "hidden_size": args.hidden,
              "init_limit": args.init_limit}

    class PinnedNamespace(types.SimpleNamespace):
        def __setattr__(self, name, value):
            super().__setattr__(name, pinned.get(name, value))

    code = os.path.abspath(args.authors_code)
    saved = sys.modules["tensorflow"], types.SimpleNamespace, list(sys.argv), os.getcwd()
    sys.path.insert(0, code)
    try:
        sys.modules["tensorflow"] = v1
        reader = common.load_module(os.path.join(code, "preprocessor", "reader.py"),
                                    "preprocessor.reader", root=code)
        reader.SPLIT_RE = re.compile(r"(\W+)")
        common.load_module(os.path.join(code, "lib.py"), "lib")
        types.SimpleNamespace = PinnedNamespace
        sys.argv = ["tpr_rnn_graph.py", str(args.task), "fidelity"]
        os.chdir(root)
        graph = common.load_module(os.path.join(code, "tpr_rnn_graph.py"), "tpr_rnn_graph")
    finally:
        sys.modules["tensorflow"], types.SimpleNamespace, sys.argv = saved[:3]
        os.chdir(saved[3])
    return graph, v1


def write_checkpoint_fixture(args, g, feed, batches, cache, metadata):
    """The fixture of ``tests/tools/checkpoint_converters``: after ``--checkpoint_steps``
    more of their ``train_op`` at their post-warm-up learning rate (1e-3) on the same
    batches, their own ``tf.train.Saver`` writes the checkpoint (``tpr_rnn_model.ckpt``,
    without the ``.meta`` graph and the ``checkpoint`` state file); beside it their
    parser's cache ``qa<task>_train.pik`` (holding their ``word2id``) and their logits on
    batch 0."""
    g.sess.run(g._learning_rate.assign(g.c.learning_rate))
    for step in range(args.checkpoint_steps):
        g.sess.run(g.train_op, feed(batches[step % len(batches)]))
    os.makedirs(args.checkpoint_out, exist_ok=True)
    stem = os.path.join(args.checkpoint_out, "tpr_rnn")
    g.saver.save(g.sess, f"{stem}_model.ckpt", write_meta_graph=False, write_state=False)
    with open(f"{stem}_qa{args.task}_train.pik", "wb") as f:
        f.write(cache)
    rows = feed(batches[0])
    arrays = {"story": rows[g.story], "story_length": rows[g.story_length],
              "question": rows[g.query], "answer": rows[g.answer],
              "logits": g.sess.run(g.logits, rows)}
    metadata = dict(metadata, checkpoint_steps=args.checkpoint_steps,
                    checkpoint_learning_rate=float(g.c.learning_rate),
                    files=["tpr_rnn_model.ckpt", f"tpr_rnn_qa{args.task}_train.pik"])
    return common.write_fixture(f"{stem}_logits.npz", arrays, metadata)


def fixture_metadata(args, g, story, files, mapped, names):
    """The fixture's ``metadata.json``: their code, the sizes, the optimizer and the data."""
    c = g.c
    return {
        "module": "tools.fidelity.tpr_rnn",
        "authors_repository": "https://github.com/ischlag/TPR-RNN",
        "authors_commit": common.authors_commit(args.authors_code, args.authors_commit),
        "authors_file": "tpr_rnn_graph.py (with lib.py, preprocessor/reader.py)",
        "tensorflow_version": sys.modules["tensorflow"].__version__,
        "sizes": {"vocabulary": int(c.vocab_size), "symbol": int(c.symbol_size),
                  "entity": int(c.entity_size), "role": int(c.role_size),
                  "hidden": int(c.hidden_size), "max_words": int(story.shape[2]),
                  "max_sentences": int(story.shape[1])},
        "layer_norm_epsilon": 1e-7, "init_limit": args.init_limit, "seed": args.seed,
        "steps": args.steps,
        "optimizer": {"name": "NadamOptimizer (AdamOptimizer, use_nesterov=True)",
                      "learning_rate": float(c.learning_rate * c.warm_up_factor),
                      "betas": [float(c.beta1), float(c.beta2)], "epsilon": 1e-8,
                      "clip_global_norm": float(c.max_gradient_norm),
                      "loss": "mean sparse softmax cross-entropy over the batch"},
        "data": {"task": args.task, "files": files, "stories": args.stories,
                 "batch": args.batch, "batch_rule": "batch b = questions b*batch.. of train"},
        "word2id": {w: int(i) for w, i in g.word2id.items()},
        "pad_row_zeroed": True, "parameters": len(mapped),
        "unmapped": sorted(n for n, p in names.items() if p is None),
    }


def main(argv=None):
    args = parse_args(argv)
    if os.environ.get("PYTHONHASHSEED") != "0":  # their vocabulary is a set's order
        os.environ["PYTHONHASHSEED"] = "0"
        os.execv(sys.executable, [sys.executable, "-m", "tools.fidelity.tpr_rnn"] + sys.argv[1:])
    root, files = data_folder(args.data_dir, args.task, args.stories)
    try:
        g, v1 = run_their_graph(args, root)
        with open(os.path.join(root, "tasks", "en-valid-10k-pik",
                               f"qa{args.task}_train.pik"), "rb") as f:
            cache = f.read()  # their parser's cache: the vectorised data and word2id
    finally:
        shutil.rmtree(root, ignore_errors=True)
    sess, c = g.sess, g.c
    variables = g.trainable_vars
    names = port_names(v.name.split(":")[0] for v in variables)
    mapped = [(v, names[v.name.split(":")[0]]) for v in variables]
    mapped = [(v, path) for v, path in mapped if path is not None]

    def values(prefix):
        arrays = sess.run([v for v, _ in mapped])
        return {f"{prefix}/{path}": np.asarray(a).reshape(() if "layer_norm" in path else a.shape)
                for (_, path), a in zip(mapped, arrays)}

    embedding = next(v for v in variables if v.name.startswith("variables/word_embedding"))
    sess.run(v1.scatter_update(embedding, [0], np.zeros((1, c.symbol_size), np.float32)))
    story, lengths, query, answer = (np.asarray(a) for a in g.raw_train[:4])
    batches = [slice(b * args.batch, (b + 1) * args.batch) for b in range(args.steps)]
    assert batches[-1].stop <= len(answer), "more stories needed (--stories)"

    def feed(rows):
        return {g.story: story[rows], g.story_length: lengths[rows], g.query: query[rows],
                g.answer: answer[rows]}

    arrays = values("weights")
    tensors = {"act/sentences": g.sentence_sum, "act/question": g.query_sum,
               "act/e1": g.e1, "act/e2": g.e2, "act/r1": g.r1, "act/r2": g.r2, "act/r3": g.r3,
               "act/memory": g.TPR, "act/n": g.q_e1, "act/l1": g.q_r1, "act/l2": g.q_r2,
               "act/l3": g.q_r3, "act/step_1": g.i_1, "act/step_2": g.i_2,
               "act/step_3": g.i_3, "logits": g.logits, "loss": g.cost}
    arrays.update(sess.run(tensors, feed(batches[0])))
    gradients = {v.name: grad for v, grad in zip(variables, g.gradients)}
    assert all(gradients[v.name] is not None for v, _ in mapped)
    grads = sess.run([gradients[v.name] for v, _ in mapped], feed(batches[0]))
    arrays.update({f"grad/{path}": np.asarray(a).reshape(() if "layer_norm" in path else a.shape)
                   for (_, path), a in zip(mapped, grads)})
    arrays.update({"input/story": story[batches[0]], "input/story_length": lengths[batches[0]],
                   "input/question": query[batches[0]], "input/answer": answer[batches[0]]})

    # Their Nadam's power accumulators start from the random initial values of their
    # beta variables (assigned 0.9 / 0.999 only afterwards): recorded for the port.
    powers = sess.run(list(g.optimizer._get_beta_accumulators()))
    arrays["optimizer/beta1_power_start"] = np.float32(powers[0])
    arrays["optimizer/beta2_power_start"] = np.float32(powers[1])
    # Their train(): during the warm-up (steps < 50) the learning rate is 0.1 x 1e-3.
    sess.run(g._learning_rate.assign(c.learning_rate * c.warm_up_factor))
    losses, norms = [], []
    for step, rows in enumerate(batches):
        result = sess.run({"train": g.train_op, "cost": g.cost, "norm": g.gradient_norm},
                          feed(rows))
        losses.append(result["cost"])
        norms.append(result["norm"])
        for key, array in (("story", story), ("story_length", lengths), ("question", query),
                           ("answer", answer)):
            arrays[f"train/{key}/{step:02d}"] = array[rows]
    arrays["train/loss"] = np.asarray(losses, np.float32)
    arrays["train/grad_norm"] = np.asarray(norms, np.float32)
    arrays.update(values("final"))

    metadata = fixture_metadata(args, g, story, files, mapped, names)
    size = common.write_fixture(args.out, arrays, metadata)
    if args.checkpoint_out:
        write_checkpoint_fixture(args, g, feed, batches, cache, metadata)
    print(f"wrote {args.out}: {len(arrays)} arrays, {size} bytes; loss {arrays['loss']:.6f}, "
          f"trajectory {losses[0]:.5f} -> {losses[-1]:.5f}")


if __name__ == "__main__":
    main()
