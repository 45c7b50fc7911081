"""Tensor Product Representation algebra as pure, batched tensor functions.

Paper: Schlag & Schmidhuber, "Learning to Reason with Third-Order Tensor
Products" (NeurIPS 2018), §2 (eq. 1-3) and §4 (eq. 9-14).

Conventions. Every function works on a leading batch axis. An order-3 TPR
``F`` has shape ``[batch, entity, relation, entity]`` and holds a superposition
of triples ``source (x) relation (x) target``. The paper writes the two
unbinding contractions as ``F •34 e`` (contract the source-entity slot with an
entity vector, leaving an order-2 tensor) followed by ``•23 r`` (contract the
relation slot, leaving the target entity). With the axis order above this is

    (F •34 e) •23 r  ==  einsum("bsrt,bs,br->bt", F, e, r)

so ``unbind(bind3(e, r, t), e, r) == t`` whenever ``|e| = |r| = 1``.

The memory operations return the *update tensor* of their equation; the caller
sums the enabled operations into ``ΔF_t`` (eq. 6) and adds it to ``F_{t-1}``
(eq. 4). All reads of one step use ``F_{t-1}``. They are what TPR-RNN runs with
``implementation="recurrent"`` (:func:`tpr_keras.ops.factored.recurrent_targets`), the
reference its default parallel solve is tested equal to.
"""

from keras import ops


def bind(filler, role):
    """Binds a filler to a role with the tensor (outer) product, eq. 1.

    Args:
        filler: ``[batch, n]``.
        role: ``[batch, m]``.

    Returns:
        ``[batch, n, m]`` = ``filler r^T`` per example.
    """
    return ops.einsum("bi,bj->bij", filler, role)


def bind3(source, relation, target):
    """Order-3 binding ``source (x) relation (x) target`` (the terms of eq. 10, 12, 14).

    Args:
        source: ``[batch, entity]``.
        relation: ``[batch, relation]``.
        target: ``[batch, entity]``.

    Returns:
        ``[batch, entity, relation, entity]``.
    """
    return ops.einsum("bs,br,bt->bsrt", source, relation, target)


def inner_product(a, b):
    """The tensor inner product of two vectors, eq. 2: ``a •12 b = a · b``.

    Args:
        a: ``[batch, n]``.
        b: ``[batch, n]``.

    Returns:
        ``[batch]``.
    """
    return ops.sum(a * b, axis=-1)


def unbind(tpr, unbinding):
    """Unbinds an order-2 TPR with an unbinding vector, eq. 3: ``T •23 u = T u``.

    Args:
        tpr: ``[batch, n, m]``.
        unbinding: ``[batch, m]``.

    Returns:
        ``[batch, n]``, the filler bound to the role ``unbinding`` unbinds.
    """
    return ops.einsum("bij,bj->bi", tpr, unbinding)


def unbind_entity(memory, entity):
    """``F •34 e``: contracts the source-entity slot of an order-3 TPR.

    Args:
        memory: ``[batch, entity, relation, entity]``.
        entity: ``[batch, entity]``.

    Returns:
        ``[batch, entity, relation]``: an order-2 TPR in the filler x role
        layout of eq. 1 (target entities bound to relations), so that
        ``unbind(unbind_entity(F, e), r)`` is ``(F •34 e) •23 r``.
    """
    return ops.einsum("bsrt,bs->btr", memory, entity)


def unbind3(memory, entity, relation):
    """``(F •34 e) •23 r``: retrieves the target bound to (entity, relation).

    This is the read of eq. 9, 11, 13 and 17-19, done as one contraction.

    Args:
        memory: ``[batch, entity, relation, entity]``.
        entity: ``[batch, entity]``.
        relation: ``[batch, relation]``.

    Returns:
        ``[batch, entity]``.
    """
    return ops.einsum("bsrt,bs,br->bt", memory, entity, relation)


def write(memory, e1, r1, e2):
    """The write operation, eq. 9-10.

    Retrieves the target ``ŵ`` currently bound to ``(e1, r1)`` and replaces it
    by ``e2``: ``W = -(e1 (x) r1 (x) ŵ) + (e1 (x) r1 (x) e2)``.

    Args:
        memory: ``F_{t-1}``, ``[batch, entity, relation, entity]``.
        e1: source entity ``[batch, entity]``.
        r1: relation ``[batch, relation]``.
        e2: new target entity ``[batch, entity]``.

    Returns:
        ``(W, ŵ)``: the update tensor and the retrieved old target.
    """
    w_hat = unbind3(memory, e1, r1)
    return bind3(e1, r1, e2 - w_hat), w_hat


def move(memory, e1, r2, w_hat):
    """The move operation, eq. 11-12.

    Re-binds the old target ``ŵ`` (from the write) under the relation ``r2``,
    replacing ``m̂``, whatever ``(e1, r2)`` held:
    ``M = -(e1 (x) r2 (x) m̂) + (e1 (x) r2 (x) ŵ)``.

    Args:
        memory: ``F_{t-1}``.
        e1: source entity ``[batch, entity]``.
        r2: relation ``[batch, relation]``.
        w_hat: the target retrieved by :func:`write` ``[batch, entity]``.

    Returns:
        ``(M, m̂)``.
    """
    m_hat = unbind3(memory, e1, r2)
    return bind3(e1, r2, w_hat - m_hat), m_hat


def backlink(memory, e1, e2, r3):
    """The backlink operation, eq. 13-14.

    Switches source and target, binding ``e1`` as the target of ``(e2, r3)``:
    ``B = -(e2 (x) r3 (x) b̂) + (e2 (x) r3 (x) e1)``.

    Args:
        memory: ``F_{t-1}``.
        e1: the write's source entity ``[batch, entity]``.
        e2: the write's target entity ``[batch, entity]``.
        r3: relation ``[batch, relation]``.

    Returns:
        ``(B, b̂)``.
    """
    b_hat = unbind3(memory, e2, r3)
    return bind3(e2, r3, e1 - b_hat), b_hat
