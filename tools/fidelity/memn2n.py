"""Fixture of ``tests/fidelity/test_memn2n.py``: the authors' MemN2N MATLAB code, run under
GNU Octave on a real bAbI batch (docs/fidelity_memn2n.md).

    python -m tools.fidelity.memn2n --authors_code /tmp/MemNN/MemN2N-babi-matlab \\
        --data_dir ../shared/data/babi --out tests/fidelity/fixtures/memn2n.npz

Runs https://github.com/facebookarchive/MemNN's ``MemN2N-babi-matlab`` unchanged: an Octave
script written to a temporary folder adds their ``nn/`` and ``memory/`` folders to the path
and runs their ``parseBabiTask.m`` (on the first ``--stories`` stories of the task's
``en-10k`` train file), their ``config_babi.m`` (then, in the workspace, ``input_dim`` /
``out_dim`` ``--dim``, ``batch_size`` ``--batch``, ``randomize_time`` 0, ``train_range`` the
first ``--steps`` x ``--batch`` questions, no validation range), their ``build_model.m`` under
Octave's ``rng(--seed)``, their ``train_linear_start.m`` and ``train.m``. Their nil word's
columns are set to zero once before anything runs (their training sets them to zero after
every update; the port's pad row starts at zero).

Recorded under the port's names (:class:`tpr_keras.models.MemN2N`, adjacent tying; their
lookup table ``[d, words + time words]`` is a table's ``embeddings`` (words, nil = pad id 0)
and ``temporal`` rows): ``weights/<path>``; on batch 0 (the first ``--batch`` questions,
their memory filled as their ``test.m`` fills it: the story's last ``sz`` sentences, time
words counted from the end): ``input/*`` (port ids, their time words), per hop ``act/m_k``,
``act/c_k`` (memory vectors, their slot order), ``act/p_k`` (attention), ``act/o_k`` (read),
``act/u_k`` (``u_0`` the question), ``logits`` (over their whole vocabulary: words, then the
``sz`` time words) and ``probs`` (their answer softmax), ``loss`` (their summed cross-entropy) and ``grad/<path>``; the same
without the memory softmax (linear start) as ``ls/...``; then two 20-step trajectories of
their training scripts from the same weights, recorded by a ``CrossEntropyLoss`` subclass
that logs each batch and cost as their ``train.m`` calls it: ``traj_ls/*`` (their
``train_linear_start.m``: 1 epoch of linear start at 0.005, the main phase 0 epochs) and
``traj/*`` (their ``train.m`` with the softmax, 1 epoch at 0.005): ``loss``, per step
``story``, ``time``, ``question``, ``answer`` (their uniform draw with replacement), and
``final/<path>``; ``trained/logits``: their logits on batch 0 with the softmax
trajectory's final weights, whose workspace their code leaves is saved as the converter
of ``tools/checkpoint_conversion/convert_memn2n_checkpoints.py`` reads it (its
``SAVE_LINES``) beside the fixture (``.mat``); ``noise/time``: the time indices of
``--noise_epochs`` more epochs of their ``train.m`` with their ``randomize_time``
(``--noise``, their 0.1), for the distribution of the port's random noise. The metadata holds their ``dict`` (word ->
their id; nil is 1).
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

from tools.fidelity import common
from tools.fidelity.tpr_rnn import first_stories

RECORDING_LOSS = r"""classdef RecordingLoss < CrossEntropyLoss
  % Their CrossEntropyLoss; each fprop also logs the cost and the batch train.m built.
  properties
    costs = [];
    questions = {};
    memories = {};
    targets = {};
  end
  methods
    function cost = fprop(obj, input, target)
      cost = fprop@CrossEntropyLoss(obj, input, target);
      obj.costs(end+1) = cost;
      obj.questions{end+1} = evalin('base', 'input');
      obj.memories{end+1} = evalin('base', 'memory{1}.data');
      obj.targets{end+1} = target;
    end
  end
end
"""

DRIVER = r"""
addpath(fullfile('{code}', 'nn')); addpath(fullfile('{code}', 'memory'));
addpath('{code}'); addpath('{tmp}');
rng({seed});
dict = containers.Map; dict('nil') = 1;
[story, questions, qstory] = parseBabiTask({{'{train}'}}, dict, false);
config_babi;
config.input_dim = {dim}; config.out_dim = {dim};
batch_size = {batch}; config.bsz = {batch};
randomize_time = 0;
train_range = 1:({steps} * {batch}); val_range = [];
build_model;
tables = {{model.modules{{1}}.weight}};
for i = 1:nhops
  tables{{i + 1}} = memory{{i}}.emb_out.weight;
end
for k = 1:numel(tables)
  tables{{k}}.D(:, dict('nil')) = 0;
end
out_ = struct();
for k = 1:numel(tables)
  out_.(sprintf('weights_%d', k - 1)) = tables{{k}}.D;
end
out_.nwords = length(dict); out_.sz = config.sz; out_.nhops = nhops;
out_.words = keys(dict); out_.word_ids = cell2mat(values(dict));
out_.lrate = config.init_lrate; out_.ls_lrate = ls_init_lrate;
out_.max_grad_norm = config.max_grad_norm;
% batch 0, assembled as test.m assembles a test batch (no time noise)
batch = 1:batch_size;
input = zeros(size(story, 1), batch_size, 'single');
input(:) = dict('nil');
target = questions(3, batch);
memory{{1}}.data(:) = dict('nil');
for b = 1:batch_size
  d = story(:, 1:questions(2, batch(b)), questions(1, batch(b)));
  d = d(:, max(1, end - config.sz + 1):end);
  memory{{1}}.data(1:size(d, 1), 1:size(d, 2), b) = d;
  memory{{1}}.data(end, 1:size(d, 2), b) = (size(d, 2):-1:1) + length(dict);
  input(1:size(qstory, 1), b) = qstory(:, batch(b));
end
for i = 2:nhops
  memory{{i}}.data = memory{{1}}.data;
end
out_.memory = memory{{1}}.data; out_.question = input; out_.answer = target;
for pass = 1:2
  if pass == 2  % linear start: their train_linear_start.m's removal of the memory softmax
    for i = 1:nhops
      memory{{i}}.mod_query.modules(:, end) = [];
    end
    prefix = 'ls_';
  else
    prefix = '';
  end
  out = model.fprop(input);
  cost = loss.fprop(out, target);
  grad = loss.bprop(out, target);
  model.bprop(input, grad);
  out_.([prefix 'logits']) = model.modules{{end - 1}}.output;
  out_.([prefix 'probs']) = out;
  out_.([prefix 'loss']) = cost;
  out_.([prefix 'u_0']) = model.modules{{3}}.output;
  for i = 1:nhops
    out_.(sprintf('%sm_%d', prefix, i)) = memory{{i}}.mod_query.modules{{1}}.modules{{1}}.output;
    out_.(sprintf('%sc_%d', prefix, i)) = memory{{i}}.mod_out.modules{{1}}.modules{{1}}.output;
    out_.(sprintf('%sp_%d', prefix, i)) = memory{{i}}.probs;
    out_.(sprintf('%so_%d', prefix, i)) = memory{{i}}.output;
    out_.(sprintf('%su_%d', prefix, i)) = model.modules{{3 + 3 * i}}.output;
  end
  for k = 1:numel(tables)
    out_.(sprintf('%sgrad_%d', prefix, k - 1)) = tables{{k}}.grad;
    tables{{k}}.grad(:) = 0;
  end
end
for i = 1:nhops
  memory{{i}}.mod_query.add(Softmax());
end
initial = cellfun(@(t) t.D, tables, 'UniformOutput', false);
for pass2 = 1:2
  for k = 1:numel(tables)
    tables{{k}}.D = initial{{k}}; tables{{k}}.grad(:) = 0;
  end
  loss = RecordingLoss(); loss.size_average = false; loss.do_softmax_brop = true;
  if pass2 == 1
    prefix = 'traj_ls_';
    ls_nepochs = 1; nepochs = 0;
    train_linear_start;
  else
    prefix = 'traj_';
    nepochs = 1;
    train;
  end
  out_.([prefix 'loss']) = loss.costs;
  out_.([prefix 'memory']) = cat(4, loss.memories{{:}});
  out_.([prefix 'question']) = cat(3, loss.questions{{:}});
  out_.([prefix 'answer']) = cat(1, loss.targets{{:}});
  for k = 1:numel(tables)
    out_.(sprintf('%sfinal_%d', prefix, k - 1)) = tables{{k}}.D;
  end
end
for i = 1:nhops
  memory{{i}}.data = out_.memory;
end
model.fprop(out_.question);
out_.trained_logits = model.modules{{end - 1}}.output;
% their time noise: train.m with their randomize_time, only the time words kept
trained = cellfun(@(t) t.D, tables, 'UniformOutput', false);
loss = RecordingLoss(); loss.size_average = false; loss.do_softmax_brop = true;
randomize_time = {noise}; nepochs = {noise_epochs};
train;
out_.noise_time = cat(3, cellfun(@(m) squeeze(m(end, :, :)), loss.memories, ...
                                 'UniformOutput', false){{:}});
for k = 1:numel(tables)
  tables{{k}}.D = trained{{k}};
end
out_.octave_version = version();
save('-v7', '{mat}', '-struct', 'out_');
{workspace}
"""


def workspace_lines(path):
    """The Octave lines that save a trained model from their workspace for
    ``tools.checkpoint_conversion.convert_memn2n_checkpoints`` (their code saves none)."""
    from tools.checkpoint_conversion.convert_memn2n_checkpoints import SAVE_LINES

    return SAVE_LINES.replace("memn2n.mat", path)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--authors_code", required=True,
                        help="MemN2N-babi-matlab/ of github.com/facebookarchive/MemNN")
    parser.add_argument("--authors_commit", default=None)
    parser.add_argument("--data_dir", required=True, help="bAbI folder holding en-10k/")
    parser.add_argument("--out", default="tests/fidelity/fixtures/memn2n.npz")
    parser.add_argument("--task", type=int, default=1)
    parser.add_argument("--stories", type=int, default=80)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--dim", type=int, default=12)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--noise", type=float, default=0.1, help="their randomize_time")
    parser.add_argument("--noise_epochs", type=int, default=10,
                        help="epochs of their train.m whose time words are recorded")
    parser.add_argument("--octave", default="octave")
    return parser.parse_args(argv)


def run_octave(args, tmp, train_file):
    """Writes the driver and the recording loss to ``tmp``, runs Octave; the ``.mat``."""
    mat = os.path.join(tmp, "memn2n.mat")
    with open(os.path.join(tmp, "RecordingLoss.m"), "w", encoding="utf-8") as f:
        f.write(RECORDING_LOSS)
    driver = DRIVER.format(code=os.path.abspath(args.authors_code), tmp=tmp, seed=args.seed,
                           train=train_file, dim=args.dim, batch=args.batch,
                           steps=args.steps, mat=mat, noise=args.noise,
                           noise_epochs=args.noise_epochs,
                           workspace=workspace_lines(os.path.join(tmp, "workspace.mat")))
    path = os.path.join(tmp, "fidelity_driver.m")
    with open(path, "w", encoding="utf-8") as f:
        f.write(driver)
    done = subprocess.run([args.octave, "--no-gui", "--quiet", "--no-window-system", path],
                          cwd=tmp, capture_output=True, text=True)
    if done.returncode != 0 or not os.path.exists(mat):
        raise RuntimeError(f"Octave failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    import scipy.io

    return scipy.io.loadmat(mat, squeeze_me=False), done.stdout


def table_arrays(prefix, matrices, nwords, sz):
    """Their ``[d, words + sz]`` tables as the port's ``embeddings`` / ``temporal``."""
    out = {}
    for k, matrix in enumerate(matrices):
        matrix = np.asarray(matrix, np.float32)
        out[f"{prefix}/memn2n/embedding_{k}/embeddings"] = matrix[:, :nwords].T
        out[f"{prefix}/memn2n/embedding_{k}/temporal"] = matrix[:, nwords:nwords + sz].T
    return out


def port_batch(memory, question, answer, nwords):
    """Their memory ``[W+1, sz, B]`` (last row: time words), question ``[W, B]`` and answer
    ``[B]`` (1-based, nil 1) as the port's ``story [B, sz, W]`` (pad 0, oldest sentence
    first), ``time [B, sz]`` (1 = the last sentence, 0 = empty slot), ``question [B, W]``
    and ``answer [B]`` (words 0 .., time word ``t`` at ``nwords + t - 1``)."""
    memory = np.asarray(memory, np.int64)
    story = np.transpose(memory[:-1], (2, 1, 0)) - 1
    time = memory[-1].T
    time = np.where(time > 1, time - nwords, 0)
    return {"story": story.astype(np.int32), "time": time.astype(np.int32),
            "question": (np.asarray(question, np.int64).T - 1).astype(np.int32),
            "answer": (np.asarray(answer, np.int64).reshape(-1) - 1).astype(np.int32)}


def noise_times(time, nwords):
    """Their noisy time words ``[sz, B, steps]`` (oldest sentence first, nil in empty
    slots) as time indices ``int8 [B * steps, sz]`` in the port's slot order (the most
    recent sentence first, 0 in empty slots)."""
    time = np.asarray(time, np.int64).reshape(time.shape[0], -1).T
    out = np.zeros_like(time)
    for row, their in zip(out, time):
        real = their[their > 1] - nwords
        row[:len(real)] = real[::-1]
    return out.astype(np.int8)


def convert(mat, args):
    """The ``.mat`` of the driver as the fixture's arrays (port names and layouts)."""
    nwords, sz, hops = (int(np.asarray(mat[k]).squeeze()) for k in ("nwords", "sz", "nhops"))
    tables = range(hops + 1)
    arrays = table_arrays("weights", [mat[f"weights_{k}"] for k in tables], nwords, sz)
    batch = port_batch(mat["memory"], mat["question"], mat["answer"], nwords)
    arrays.update({f"input/{k}": v for k, v in batch.items()})
    for prefix, key in (("", ""), ("ls_", "ls/")):
        arrays[f"{key}logits"] = np.asarray(mat[prefix + "logits"], np.float32).T
        arrays[f"{key}probs"] = np.asarray(mat[prefix + "probs"], np.float32).T
        arrays[f"{key}loss"] = np.float32(np.asarray(mat[prefix + "loss"]).squeeze())
        arrays[f"{key}act/u_0"] = np.asarray(mat[prefix + "u_0"], np.float32).T
        for i in range(1, hops + 1):
            for name in ("m", "c"):  # [d, sz, B] -> [B, sz, d]
                arrays[f"{key}act/{name}_{i}"] = np.transpose(
                    np.asarray(mat[f"{prefix}{name}_{i}"], np.float32), (2, 1, 0))
            for name in ("p", "o", "u"):
                arrays[f"{key}act/{name}_{i}"] = np.asarray(
                    mat[f"{prefix}{name}_{i}"], np.float32).T
        arrays.update(table_arrays(f"{key}grad", [mat[f"{prefix}grad_{k}"] for k in tables],
                                   nwords, sz))
    for prefix, key in (("traj_ls_", "traj_ls"), ("traj_", "traj")):
        arrays[f"{key}/loss"] = np.asarray(mat[prefix + "loss"], np.float32).reshape(-1)
        memory, question = mat[prefix + "memory"], mat[prefix + "question"]
        answer = np.asarray(mat[prefix + "answer"])
        for step in range(arrays[f"{key}/loss"].shape[0]):
            batch = port_batch(memory[..., step], question[..., step], answer[step], nwords)
            for name, value in batch.items():
                arrays[f"{key}/{name}/{step:02d}"] = value
        arrays.update(table_arrays(f"{key}/final", [mat[f"{prefix}final_{k}"]
                                                    for k in tables], nwords, sz))
    arrays["trained/logits"] = np.asarray(mat["trained_logits"], np.float32).T
    arrays["noise/time"] = noise_times(mat["noise_time"], nwords)
    scalars = {k: float(np.asarray(mat[k]).squeeze())
               for k in ("lrate", "ls_lrate", "max_grad_norm")}
    words = [str(np.asarray(w).squeeze()) for w in np.asarray(mat["words"]).ravel()]
    ids = np.asarray(mat["word_ids"]).ravel().astype(int).tolist()
    return arrays, {"nwords": nwords, "sz": sz, "hops": hops, **scalars,
                    "dict": dict(zip(words, ids))}


def main(argv=None):
    args = parse_args(argv)
    source = os.path.join(args.data_dir, "en-10k")
    name = next(n for n in sorted(os.listdir(source))
                if n.startswith(f"qa{args.task}_") and n.endswith("_train.txt"))
    tmp = tempfile.mkdtemp(prefix="memn2n-fidelity-")
    try:
        train_file = os.path.join(tmp, name)
        with open(train_file, "w", encoding="utf-8") as f:
            f.write(first_stories(os.path.join(source, name), args.stories))
        mat, log = run_octave(args, tmp, train_file)
        shutil.copyfile(os.path.join(tmp, "workspace.mat"),
                        os.path.splitext(args.out)[0] + ".mat")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    arrays, sizes = convert(mat, args)
    words = arrays["input/story"].shape[2]
    metadata = {
        "module": "tools.fidelity.memn2n",
        "authors_repository": "https://github.com/facebookarchive/MemNN",
        "authors_commit": common.authors_commit(args.authors_code, args.authors_commit),
        "authors_folder": "MemN2N-babi-matlab (parseBabiTask.m, config_babi.m, "
                          "build_model.m, train_linear_start.m, train.m, nn/, memory/)",
        "octave_version": str(np.asarray(mat["octave_version"]).squeeze()),
        "sizes": {"vocabulary": sizes["nwords"], "memory_size": sizes["sz"],
                  "max_words": int(words), "embedding_dim": args.dim,
                  "num_hops": sizes["hops"], "batch": args.batch},
        "seed": args.seed, "steps": args.steps,
        "optimizer": {"name": "SGD (their Weight.update)", "learning_rate": sizes["lrate"],
                      "linear_start_learning_rate": sizes["ls_lrate"],
                      "clip_per_matrix": sizes["max_grad_norm"], "matrix_norm": "spectral",
                      "loss": "cross-entropy summed over the batch (size_average = false)"},
        "data": {"task": args.task, "file": name, "stories": args.stories,
                 "batch_rule": "batch 0: questions 1..batch; trajectories: their train.m's "
                               "uniform draw with replacement from the first steps*batch"},
        "randomize_time": 0, "nil_columns_zeroed": True,
        "dict": sizes["dict"],
        "logits": "their whole vocabulary: the words (nil = 0), then the memory_size time "
                  "words",
    }
    size = common.write_fixture(args.out, arrays, metadata)
    print(log[-2000:])
    print(f"wrote {args.out}: {len(arrays)} arrays, {size} bytes; loss {arrays['loss']:.6f}; "
          f"trajectories {arrays['traj_ls/loss'][0]:.4f} -> {arrays['traj_ls/loss'][-1]:.4f} "
          f"(linear start), {arrays['traj/loss'][0]:.4f} -> {arrays['traj/loss'][-1]:.4f}")


if __name__ == "__main__":
    sys.exit(main())
