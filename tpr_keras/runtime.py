"""Process settings for training entry points; importing this does not import TensorFlow."""

import ctypes
import os
import sys

_M_ARENA_MAX = -8  # mallopt parameter number in glibc's malloc.h


def limit_malloc_arenas(count=2):
    """Caps glibc's malloc arenas at ``count`` unless ``MALLOC_ARENA_MAX`` is set.

    By default glibc gives each thread that allocates concurrently its own
    arena (up to 8 per core), and freed memory stays in the arena that held
    it. TensorFlow's thread pools and tf.data threads then keep several
    partly-empty heaps, so a CPU training process holds 90-120 MB more than it
    uses (measured on the all-tasks bAbI benchmark). Call this first thing,
    before TensorFlow starts its threads. Has no effect off glibc.

    Returns:
        True if the limit was set here.
    """
    if "MALLOC_ARENA_MAX" in os.environ or not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        return bool(libc.mallopt(_M_ARENA_MAX, int(count)))
    except (OSError, AttributeError):  # musl or another libc
        return False


_XLA_TRIANGULAR_SOLVE = []  # set once use_xla_triangular_solve has registered the lowering
#: ``lapack`` keeps jaxlib's own CPU lowering (see :func:`use_xla_triangular_solve`).
TRIANGULAR_SOLVE_ENV = "TPR_KERAS_JAX_TRIANGULAR_SOLVE"


def use_xla_triangular_solve():
    """Lowers JAX's triangular solves on the CPU to XLA's own TriangularSolve.

    jaxlib lowers ``jax.lax.linalg.triangular_solve`` on the CPU to a batched LAPACK
    ``trsm`` call, which deadlocked inside Keras ``fit`` on a 2-core machine with
    jaxlib 0.10 (15 of 20 short TPR-RNN runs froze: the forward and the gradient solves
    each held one of the two pool threads; not reproduced in 12 runs with jaxlib
    0.10.2). XLA's TriangularSolve has no such pool, gives the same values (TPR-RNN's
    parallel memory agrees with TensorFlow to 1e-5 through it,
    ``tests/models/test_jax_backend.py``) and is faster here: the all-tasks TPR-RNN
    step ran at 429 and 411 examples/s against 362 and 333 with LAPACK (two alternating
    ``python -m bench.backends --families tpr_rnn --backends jax`` runs per lowering).
    This registers it for the CPU through JAX's public lowering API, so every JAX
    program of the process uses it; real matrices only (the conjugating variants
    raise). ``TPR_KERAS_JAX_TRIANGULAR_SOLVE=lapack`` keeps jaxlib's lowering.

    Returns:
        True once the lowering is registered; False with ``lapack`` or without JAX.
    """
    if _XLA_TRIANGULAR_SOLVE:
        return True
    choice = os.environ.get(TRIANGULAR_SOLVE_ENV, "xla")
    if choice not in ("xla", "lapack"):
        raise ValueError(f"{TRIANGULAR_SOLVE_ENV}={choice!r}: choose xla or lapack.")
    if choice == "lapack":
        return False
    try:
        from jax.extend.mlir import ir
        from jax.extend.mlir.dialects import stablehlo
        from jax.interpreters import mlir
        from jax.lax import linalg
    except ImportError:
        return False

    def lowering(ctx, a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
        if conjugate_a:
            raise NotImplementedError("use_xla_triangular_solve: real matrices only")
        solved = stablehlo.triangular_solve(
            a, b, ir.BoolAttr.get(left_side), ir.BoolAttr.get(lower),
            ir.BoolAttr.get(unit_diagonal),
            stablehlo.TransposeAttr.get("TRANSPOSE" if transpose_a else "NO_TRANSPOSE"))
        return [solved]

    mlir.register_lowering(linalg.triangular_solve_p, lowering, platform="cpu")
    _XLA_TRIANGULAR_SOLVE.append(True)
    return True
