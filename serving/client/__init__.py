"""Ask a served bAbI model: a small Python API and ``python -m serving.client``.

Speaks TF Serving's Predict API (gRPC, with the messages of :mod:`serving.client.protos`, which
need no TensorFlow, so the command starts in a fraction of a second; or REST), so it talks
to ``python -m serving.server`` and to stock ``tensorflow_model_server`` alike::

    from serving.client import BabiClient
    with BabiClient("localhost:8500", model_name="babi") as client:
        reply = client.ask("Mary went to the kitchen.\\nJohn moved to the garden.",
                           "Where is Mary?")
        print(reply.answer, reply.candidates)   # kitchen [('kitchen', 0.99), ...]

    python -m serving.client --server localhost:8500 --model_name babi \\
        --story "Mary went to the kitchen. John moved to the garden." --question "Where is Mary?"
    python -m serving.client --rest --server localhost:8501 ...   # TF Serving's REST API

A story is one string: sentences separated by newlines or ending in ``.``, ``?`` or ``!``.
``Answer.unknown_words`` counts the distinct words of the story and question that the model
does not know (they all read as ``<unk>``), those ``Answer.unknown_tokens`` lists; punctuation
is no word. The command prints a warning when it is not zero.

For scripts, the command reads any text from a file (``--story_file FILE``, ``-``: stdin),
prints ``--top_k`` candidates, exits 3 under ``--strict`` when the reply carries a warning,
and says why there is no answer in one ``error:`` line (exit 1); the exit statuses:
:mod:`serving.client.cli`, docs/serving.md.

A Mathematics Dataset model (``train.math``) is asked with :class:`MathClient`::

    with MathClient("localhost:8500", model_name="math") as client:
        print(client.solve("What is the tens digit of 2934?").answer)   # 3

    python -m serving.client --model_name math --question "What is the tens digit of 2934?"

``Solution.module`` names the trained module whose wording the question has; ``""`` (a
question outside them) and a non-zero ``Solution.unknown_characters`` make the command
print a warning, as unknown words do for bAbI. An export of a preset that claims modules
(those it scored >= 90 % on on a fresh generator sample) also says per answer whether the
question's module is claimed (``Solution.claimed``; False: a warning, so ``--strict``
exits 3), and ``MathClient.coverage()`` (``--coverage``) returns what it claims.

The parts: :mod:`serving.client.serving_client` (Predict calls over gRPC or REST),
:mod:`serving.client.model_clients` (one client per model family),
:mod:`serving.client.cli` (the command) and :mod:`serving.client.protos` (the
TensorFlow-free messages). None of them imports TensorFlow or :mod:`serving.core`.
"""

from serving.client.cli import main
from serving.client.model_clients import (
    Answer,
    BabiClient,
    Coverage,
    Entailment,
    EntailmentClient,
    MathClient,
    Solution,
    ask,
    solve,
)
from serving.client.serving_client import ServerNotReady, ServingClient

__all__ = ["Answer", "BabiClient", "Coverage", "Entailment", "EntailmentClient", "MathClient",
           "ServerNotReady", "ServingClient", "Solution", "ask", "main", "solve"]
