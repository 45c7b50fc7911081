"""Where a training step's time goes, op by op: :mod:`bench.math_authors_step`'s
``--profile_steps`` runs a warm step under the framework's own profiler and keeps, per op
type and per part of the model, the time per step.

* TensorFlow (the port's ``Trainer`` step): ``tf.profiler`` traces the steps; the host
  plane's executor threads hold one event per op run, named ``scope/name:Type``. An op's
  self time is its event's length less the events nested in it on the same thread (a
  ``tf.cond`` runs its branch inside its own event).
* PyTorch (the authors' step): ``torch.profiler``'s self CPU time per ``aten::`` op.

A part is the op's scope: ``backward`` for the ops of ``gradient_tape/``, then the layer
(``encoder_0/self_attention``, ``decoder_1/feed_forward``, ``embedding`` ...); ops outside
the model (clipping, the optimizer, the loss) keep their first scope name. What the ops
do not add up to (``wall_ms`` less ``ops_ms``) is the framework's own overhead between
them: dispatch, the executor, Python.
"""

import collections
import glob
import os
import re
import tempfile
import time

#: How many op types / parts a profile keeps (the rest are summed into ``other``).
TOP = 25
#: An op's event on an executor thread: ``scope/name:Type`` (TensorFlow's op-name
#: characters; not the executor's own ``Class::Method`` events).
_OP_EVENT = re.compile(r"^[\w.][\w.\-/>]*:\w+$")
_LAYER = re.compile(r"^((?:encoder|decoder)_\d+)(?:_\d+)?$")
_NOT_PARTS = ("gradient_tape", "tp_transformer", "StatefulPartitionedCall", "cond", "then",
              "else", "")


def part_of(scope):
    """The model part of an op's scope (see the module's docstring): Keras' call-count
    suffixes dropped (``encoder_0_1/self_attention_1`` is ``encoder_0/self_attention``)."""
    names = []
    for component in scope.split("/"):
        layer = _LAYER.match(component)
        names.append(layer.group(1) if layer else re.sub(r"_\d+$", "", component))
    backward = names[0] == "gradient_tape"
    while len(names) > 1 and names[0] in _NOT_PARTS:
        names = names[1:]
    keep = 2 if _LAYER.match(names[0]) and len(names) > 2 else 1
    return ("backward: " if backward else "") + "/".join(names[:keep])


def self_times(events):
    """``[(name, self time)]`` of ``[(name, start, duration)]`` on one thread: each event's
    duration less the durations of the events directly inside it."""
    events = sorted(events, key=lambda e: (e[1], -e[2]))
    out, stack = [], []  # stack: [name, end, self]

    def close(until):
        while stack and stack[-1][1] <= until:
            name, _, own = stack.pop()
            out.append((name, own))

    for name, start, duration in events:
        close(start)
        if stack:
            stack[-1][2] -= duration
        stack.append([name, start + duration, duration])
    close(float("inf"))
    return out


def summarize(by_type, by_part, wall_ms, steps):
    """The profile record: per step, the top op types and parts (ms and share of wall)."""
    def top(table):
        ranked = sorted(table.items(), key=lambda kv: -kv[1])
        kept = dict(ranked[:TOP])
        rest = sum(v for _, v in ranked[TOP:])
        if rest:
            kept["other"] = rest
        return {k: {"ms": v / steps, "share": v / steps / wall_ms} for k, v in kept.items()}

    ops_ms = sum(by_type.values()) / steps
    return {"steps": steps, "wall_ms": wall_ms, "ops_ms": ops_ms,
            "overhead_ms": wall_ms - ops_ms, "by_type": top(by_type),
            "by_part": top(by_part) if by_part else {}}


def tensorflow_profile(run_step, steps):
    """Profiles ``run_step()`` (one warm step) ``steps`` times with ``tf.profiler``."""
    import tensorflow as tf
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    logdir = tempfile.mkdtemp(prefix="math_step_profile_")
    tf.profiler.experimental.start(logdir)
    start = time.perf_counter()
    for _ in range(steps):
        run_step()
    wall_ms = (time.perf_counter() - start) * 1000 / steps
    tf.profiler.experimental.stop()
    space = xplane_pb2.XSpace()
    with open(sorted(glob.glob(os.path.join(logdir, "**", "*.xplane.pb"),
                               recursive=True))[-1], "rb") as f:
        space.ParseFromString(f.read())
    by_type, by_part = collections.Counter(), collections.Counter()
    for plane in space.planes:
        if not plane.name.startswith("/host:"):
            continue
        for line in plane.lines:
            events = [(plane.event_metadata[e.metadata_id].name, e.offset_ps, e.duration_ps)
                      for e in line.events]
            events = [e for e in events if _OP_EVENT.match(e[0])]
            for name, own_ps in self_times(events):
                scope, _, kind = name.rpartition(":")
                by_type[kind] += own_ps / 1e9
                by_part[part_of(scope)] += own_ps / 1e9
    return summarize(by_type, by_part, wall_ms, steps)


def torch_profile(run_step, steps):
    """Profiles ``run_step()`` ``steps`` times with ``torch.profiler`` (self CPU time per
    op; PyTorch names no model parts)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        start = time.perf_counter()
        for _ in range(steps):
            run_step()
        wall_ms = (time.perf_counter() - start) * 1000 / steps
    by_type = collections.Counter()
    for event in prof.key_averages():
        by_type[event.key] += event.self_cpu_time_total / 1000
    return summarize(by_type, {}, wall_ms, steps)


def format_profile(name, profile, rows=12):
    """Lines for the console: the profile's top op types and parts."""
    lines = [f"\nprofile of {name}: {profile['wall_ms']:.0f} ms per step, ops "
             f"{profile['ops_ms']:.0f} ms, overhead {profile['overhead_ms']:.0f} ms"]
    for key in ("by_type", "by_part"):
        if profile[key]:
            lines.append("  " + key.replace("_", " ") + ": " + ", ".join(
                f"{k} {v['ms']:.0f} ms ({100 * v['share']:.0f} %)"
                for k, v in list(profile[key].items())[:rows]))
    return lines
