"""Fixture generators of the equivalence tests in ``tests/fidelity`` (docs/fidelity.md).

Each generator runs the authors' public code from a checkout given on its command line
(never copied here), records weights, inputs, activations, logits, loss, gradients and
a short training trajectory on real data, and writes a compressed ``.npz`` with a JSON
of metadata beside it. The tests compare the port against those files without the
authors' code and without their framework.
"""
