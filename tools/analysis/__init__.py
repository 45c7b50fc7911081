"""The command lines of the papers' analyses (``python -m tools.analysis.<name>``): their
flags and the files they write; the computations are in :mod:`tpr_keras.analysis` and
:mod:`tpr_keras.data.babi.systematic`.

* ``modules``: TP-Transformer Figures 4/5 and Table 1 (per-module accuracy of math runs).
* ``roles``: TP-Transformer §5, role clusters (Figure 2) and attention maps (Figure 3).
* ``similarity``: TPR-RNN §7, clustered similarity of its representations (Figure 4).
* ``systematic_data``: TPR-RNN §7, the systematic-generalisation bAbI files.
* ``systematic``: TPR-RNN §7, accuracy per new name and task (Figure 5).
"""
