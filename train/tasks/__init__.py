"""The task objects of the ``train.*`` commands, one module per family: what
:func:`train.runner.run` needs to know of bAbI (TPR-RNN and MemN2N), the
logical entailment data (TPRU and the baselines) and the Mathematics Dataset
(TP-Transformer). Each imports its backend, data and models on first use."""
