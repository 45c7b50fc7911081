"""The environment of the tests' JAX processes, with XLA set to compile fast.

The tests compile hundreds of small JAX programs and run each a few times: XLA's expensive
LLVM passes then cost more than they save (``tests/models/test_jax_backend.py`` took 177 s
with them and 118 s without, measured back to back; the JAX half's model files about a third
less). XLA's newer CPU fusion emitters (MLIR) compile each small program more slowly than
its older LLVM IR emitters, so they are off too (``--xla_cpu_use_fusion_emitters=false``:
``tests/ops/test_factored.py`` 69 -> 37 s under JAX, measured back to back). The JAX half of
the test command gets these flags from ``tests/conftest.py``; a test that starts a JAX
process of its own takes its environment from :func:`jax_env`. A value of ``XLA_FLAGS``
already in the environment is kept.
"""

import os

FAST_COMPILE_XLA_FLAGS = ("--xla_llvm_disable_expensive_passes=true "
                          "--xla_backend_optimization_level=0 "
                          "--xla_cpu_use_fusion_emitters=false")


def jax_env(base=None, **extra):
    """``base`` (default ``os.environ``) with ``KERAS_BACKEND=jax``, ``extra`` and, unless
    ``base`` sets them already, the fast-compile XLA flags (after any ``XLA_FLAGS`` in
    ``extra``)."""
    base = os.environ if base is None else base
    env = dict(base, KERAS_BACKEND="jax", **extra)
    if "XLA_FLAGS" not in base:
        env["XLA_FLAGS"] = f"{extra.get('XLA_FLAGS', '')} {FAST_COMPILE_XLA_FLAGS}".strip()
    return env
