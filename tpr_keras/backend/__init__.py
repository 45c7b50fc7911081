"""Backend-specific kernels: code for one backend that ``keras.ops`` cannot express as
well, imported only when Keras runs on that backend (as Keras keeps its own in
``keras.backend``'s per-framework modules). The layers, ops and models import none of
this at module level."""
