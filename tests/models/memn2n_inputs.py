"""Small MemN2N inputs shared by ``tests/models/test_memn2n_*.py``: a batch of padded
stories with their questions, and a hop's controller state, memories and memory mask.
"""

import numpy as np


def story_batch():
    """3 stories of 6 rows x 4 word slots; lengths 6, 2 and 0 real sentences."""
    story = np.zeros((3, 6, 4), "int32")
    for s in range(6):
        story[0, s, :2] = [2 + s, 10 + s]
    story[1, 0, :3] = [3, 4, 5]
    story[1, 1, :1] = [6]
    question = np.array([[7, 8, 0, 0], [9, 0, 0, 0], [2, 3, 4, 0]], "int32")
    return story, question


def hop_inputs():
    rng = np.random.default_rng(0)
    u = rng.normal(size=(2, 4)).astype("float32")
    m = rng.normal(size=(2, 5, 4)).astype("float32")
    c = rng.normal(size=(2, 5, 4)).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0], [1, 0, 0, 0, 0]], bool)
    m[~mask] = 0.0
    c[~mask] = 0.0
    return u, m, c, mask
