"""The papers' published numbers that the experiments reproduce, typed from the papers.

Data only: the experiments compare their runs against these, and the report package
(``tools/report``) prints them beside the committed runs.

- TPR-RNN: Schlag & Schmidhuber (2018), "Learning to Reason with Third-Order Tensor
  Products": Table 1 (all-tasks summary, 10 runs), Table 2 (single task), Table 3 (the
  operation ablations' failed tasks) and Appendix B Table 4 (all tasks, 8 runs).
- MemN2N: Sukhbaatar et al. (2015), "End-To-End Memory Networks", Appendix A Table 3 (10k
  training questions), column "PE LS RN joint".
- TPRU: Tang, Smolensky & de Sa (2018), "Learning Distributed Representations of Symbolic
  Structure Using Binding and Unbinding Operations", Table 1 (entailment, dimension 64).
"""

#: TPR-RNN Table 1, the all-tasks model (10 runs): the best run's mean error %, the mean error
#: % and the failed tasks (> 5 %), mean ± std.
TPR_RNN_TABLE1 = {"best": "0.78", "mean": "1.34 ± 0.52", "failed": "0.86 ± 1.11"}

#: TPR-RNN Table 2, single task: task -> (best, mean ± std) test error %.
TPR_RNN_TABLE2 = {
    1: ("0.0", "0.02 ± 0.05"), 2: ("0.0", "0.06 ± 0.09"), 3: ("1.2", "1.78 ± 0.58"),
    4: ("0.0", "0.02 ± 0.04"), 5: ("0.5", "0.61 ± 0.17"), 6: ("0.0", "0.22 ± 0.19"),
    7: ("0.5", "2.78 ± 1.81"), 8: ("0.1", "0.47 ± 0.45"), 9: ("0.0", "0.14 ± 0.13"),
    10: ("0.3", "1.24 ± 1.30"), 11: ("0.0", "0.14 ± 0.11"), 12: ("0.0", "0.04 ± 0.05"),
    13: ("0.3", "0.42 ± 0.11"), 14: ("0.0", "0.24 ± 0.29"), 15: ("0.0", "0.0 ± 0.0"),
    16: ("0.0", "0.02 ± 0.045"), 17: ("0.4", "0.9 ± 0.69"), 18: ("0.1", "0.64 ± 0.33"),
    19: ("0.0", "12.64 ± 17.39"), 20: ("0.0", "0.0 ± 0.00"),
}

#: TPR-RNN Table 3: the tasks failed (> 5 % test error) by each operation set; "all" fails
#: none (Table 2).
TPR_RNN_TABLE3 = {
    "write": (3, 6, 9, 10, 12, 13, 17, 19),
    "write+move": (9, 10, 13, 17),
    "write+backlink": (3,),
    "all": (),
}

#: TPR-RNN Appendix B Table 4 (8 all-tasks runs): task -> (best, mean ± std) test error %.
TPR_RNN_TABLE4 = {
    1: ("0.00", "0.05 ± 0.08"), 2: ("0.30", "0.64 ± 0.46"), 3: ("2.20", "4.14 ± 1.85"),
    4: ("0.00", "0.05 ± 0.08"), 5: ("0.70", "1.00 ± 0.25"), 6: ("0.00", "0.36 ± 0.39"),
    7: ("1.00", "1.88 ± 0.82"), 8: ("0.20", "0.51 ± 0.37"), 9: ("0.10", "0.40 ± 0.43"),
    10: ("0.20", "0.89 ± 0.75"), 11: ("0.50", "1.18 ± 0.48"), 12: ("0.00", "1.35 ± 1.14"),
    13: ("1.90", "2.38 ± 0.47"), 14: ("0.20", "0.85 ± 0.54"), 15: ("0.00", "0.03 ± 0.07"),
    16: ("0.00", "0.70 ± 1.35"), 17: ("0.60", "3.44 ± 3.16"), 18: ("0.00", "0.72 ± 0.60"),
    19: ("1.20", "6.96 ± 7.03"), 20: ("0.00", "0.00 ± 0.00"),
}

#: MemN2N Appendix A Table 3 (10k), column "PE LS RN joint": task -> test error %.
MEMN2N_TABLE3 = {
    1: 0.0, 2: 1.0, 3: 6.8, 4: 0.0, 5: 6.1, 6: 0.1, 7: 6.6, 8: 2.7, 9: 0.0, 10: 0.5,
    11: 0.0, 12: 0.1, 13: 0.0, 14: 0.0, 15: 0.2, 16: 0.2, 17: 41.8, 18: 8.0, 19: 75.7,
    20: 0.0,
}

#: TPRU Table 1, dimension 64: row -> ((valid, easy, hard, big, massive, exam) accuracy %,
#: parameters), plain and BiDAF; the paper gives no embedding initialisation, so the
#: ``normal`` BiDAF row is held against the same numbers.
TPRU_TABLE1 = {
    "tpru8": ((66.8, 67.2, 59.3, 60.9, 51.9, 67.0), "40.1k"),
    "tpru32": ((73.7, 73.7, 62.7, 62.8, 53.0, 76.7), "–"),
    "lstm": ((71.7, 71.8, 64.1, 64.2, 53.7, 68.3), "65.5k"),
    "gru": ((75.1, 77.1, 63.7, 63.8, 54.4, 73.7), "49.1k"),
    "bidaf-tpru32": ((88.4, 88.4, 71.1, 70.1, 64.9, 77.0), "–"),
    "bidaf-lstm": ((88.5, 88.7, 74.5, 73.8, 66.8, 80.0), "230.0k"),
}
TPRU_TABLE1["bidaf-tpru32-normal"] = TPRU_TABLE1["bidaf-tpru32"]
