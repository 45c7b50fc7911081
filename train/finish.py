"""How a ``train.*`` run finishes, and what a rerun of the same command does with a run that
finished: one protocol for bAbI, math and entailment on either backend.

A run's products are written in this order, each atomically
(:mod:`tpr_keras.atomic_files`: a hidden temporary, synced, then renamed):

1. the checkpoints and ``best/`` during training (:class:`~tpr_keras.training.checkpoints.
   CheckpointIO`, or the JAX trainer's numpy files);
2. ``<export_dir>/model.keras`` and ``vocab.txt`` (the best weights);
3. the SavedModel, ``<export_dir>/<model_name>/<version>/``, exported from ``model.keras``
   (on JAX by a TensorFlow ``train.export`` process); not with ``--nosaved_model``;
4. ``<model_dir>/results.json``, last, naming what 2 and 3 wrote under ``"outputs"``
   (``"saved_model": null`` where no SavedModel was written).

So ``results.json`` means finished: a run killed anywhere before it is resumed by the same
command, which trains no step already checkpointed, evaluates and finishes again. A rerun
on a run that has ``results.json`` (:func:`finish_again`) trains nothing: it deletes the
temporaries a killed write left, rebuilds ``model.keras`` from the best weights if it is
missing, exports again if the run's SavedModel is missing or incomplete (no
``saved_model.pb`` or ``variables/``; not with ``--nosaved_model``, which leaves a run
without one as it is), and says what it did in one line.

Testing hook: ``TPR_KERAS_TEST_KILL_AT`` (:func:`tpr_keras.atomic_files.kill_point`)
names where a test kills the process; this module adds ``before-results``.
"""

import contextlib
import io
import json
import os
import shlex

import keras

from tpr_keras.atomic_files import kill_point, remove_temporaries, write_text
from tpr_keras.run_outputs import save_model, write_results
from tpr_keras.training import make_trainer
from tpr_keras.training.checkpoints import finished_run
from tpr_keras.training.stop_reasons import STOP_REASONS
from train.export import export_keras_model
from train.tensorflow_export import export_command, export_in_tensorflow, SAVED_MODEL_LINE

#: What lets a finished run continue, by the reason it stopped.
CONTINUE_HINT = {"epochs": "a larger --epochs", "steps": "a larger --steps",
                 "early_stopping": "a larger --patience",
                 "target_error": "a lower target error"}


def wants_saved_model(flags):
    """``--saved_model``: True unless the command line turned it off (a flags object
    without it, as a tool or test may build, exports)."""
    return getattr(flags, "saved_model", True)


def export_dir_of(flags):
    """``--export_dir``, or ``<model_dir>/export``."""
    return flags.export_dir or os.path.join(flags.model_dir, "export")


def servable(version_dir):
    """True if ``version_dir`` holds a SavedModel a server can load: ``saved_model.pb``
    and ``variables/variables.index``."""
    return bool(version_dir) and all(os.path.isfile(os.path.join(version_dir, name)) for name in
                                     ("saved_model.pb", os.path.join("variables",
                                                                     "variables.index")))


def recorded_export(flags, results):
    """The run's SavedModel version folder if it is servable, else None: the one
    ``results.json`` names, or (results written before they named it) the newest servable
    version under ``<export_dir>/<model_name>``."""
    outputs = results.get("outputs")
    if outputs is not None:
        recorded = outputs.get("saved_model")  # None: the run could not export
        path = recorded and os.path.normpath(os.path.join(flags.model_dir, recorded))
        return path if servable(path) else None
    base = os.path.join(export_dir_of(flags), flags.model_name)
    versions = sorted((int(n) for n in (os.listdir(base) if os.path.isdir(base) else [])
                       if n.isdigit()), reverse=True)
    return next((os.path.join(base, str(v)) for v in versions
                 if servable(os.path.join(base, str(v)))), None)


def remove_stale(flags):
    """Deletes what killed writes of this run left (temporary files and folders in the run
    folder, its checkpoints, the export folder and the model's version folders; a ``best``
    folder set aside mid-swap is put back); returns the paths deleted."""
    export_dir = export_dir_of(flags)
    folders = [flags.model_dir, os.path.join(flags.model_dir, "checkpoints"), export_dir,
               os.path.join(export_dir, flags.model_name)]
    return [path for folder in folders for path in remove_temporaries(folder)]


def _stale_note(removed, model_dir):
    """``removed 2 stale temporaries of an interrupted run (export/babi/.export-tmp-...)``."""
    names = ", ".join(os.path.relpath(p, model_dir) for p in removed[:3])
    more = f" and {len(removed) - 3} more" if len(removed) > 3 else ""
    return (f"removed {len(removed)} stale temporar{'y' if len(removed) == 1 else 'ies'} "
            f"of an interrupted run ({names}{more})")


def export_options(task):
    """``task.export_options()``, loading the data first where they come from it (bAbI's
    story limit) and it is not loaded yet (a rerun of a finished run)."""
    try:
        return task.export_options()
    except AttributeError:
        with contextlib.redirect_stdout(io.StringIO()):  # the data lines the run printed
            task.load_data()
        return task.export_options()


def export_saved_model(task, flags, keras_path, on_jax, model=None):
    """Writes the SavedModel of ``keras_path`` (or of ``model``, loaded from it) beside it;
    returns its version folder, or None where TensorFlow is missing (JAX)."""
    export_dir = os.path.dirname(keras_path)
    if on_jax:  # the SavedModel is TensorFlow's: written by a TensorFlow process
        return export_in_tensorflow(keras_path, export_dir, flags.model_name,
                                    **export_options(task))
    if model is not None:
        return task.export(model, export_dir)
    return export_keras_model(keras_path, export_dir, flags.model_name,
                              **export_options(task))


def _outputs(flags, keras_path, served):
    relative = lambda path: os.path.relpath(path, flags.model_dir)  # noqa: E731
    return {"model": relative(keras_path),
            "vocab": relative(os.path.join(os.path.dirname(keras_path), "vocab.txt")),
            "saved_model": relative(served) if served else None}


def _served_line(flags, served):
    return (f"{SAVED_MODEL_LINE}{served} (serve with python -m serving.server "
            f"--model_name={flags.model_name} "
            f"--model_base_path={os.path.abspath(os.path.dirname(served))})")


def _no_saved_model_line(task, flags, keras_path):
    """What ``--nosaved_model`` left out, and the command that writes it."""
    command = export_command(keras_path, export_dir_of(flags), flags.model_name,
                             **export_options(task))
    return (f"No SavedModel (--nosaved_model); to serve the model, write it with: "
            f"python {shlex.join(command[1:])}")


def finish_run(task, model, results, on_jax):
    """Writes a trained run's products on the chief, in the protocol's order (the module
    docstring): ``model.keras`` and ``vocab.txt``, the SavedModel (unless
    ``--nosaved_model``), ``results.json``; prints where they are."""
    flags = task.flags
    removed = remove_stale(flags)
    if removed:
        note = _stale_note(removed, flags.model_dir)
        print(note[0].upper() + note[1:] + ".", flush=True)
    saved = save_model(export_dir_of(flags), model, task.save_vocabulary)
    served = None
    if wants_saved_model(flags):
        # From the saved file, so that no strategy variables end up in the SavedModel.
        served = export_saved_model(task, flags, saved, on_jax,
                                    None if on_jax else keras.models.load_model(saved))
    results["outputs"] = _outputs(flags, saved, served)
    kill_point("before-results")
    write_results(flags.model_dir, results, model)
    print(f"Results: {os.path.join(flags.model_dir, 'results.json')}; model: {saved}")
    if served:
        print(_served_line(flags, served))
    elif not wants_saved_model(flags):
        print(_no_saved_model_line(task, flags, saved))


def _is_chief(strategy):
    if strategy is None:
        return True
    from tpr_keras.backend.tensorflow.trainer import is_chief

    return is_chief(strategy)


def _rebuild_model(task, config, on_jax):
    """The trained model from the run's checkpoints: the latest, then the best weights
    where the run kept them (as ``fit`` ends). Built on the chief alone, outside the run's
    strategy (checkpoints are keyed by variable path; no other worker takes part).
    Returns ``(model, "best weights" or "last checkpoint")``."""
    with contextlib.redirect_stdout(io.StringIO()):  # the data lines the run printed
        task.load_data()
    trainer = make_trainer(task.model_fn, task.optimizer_fn, task.compute_fn(on_jax), config,
                           task.flags.model_dir)
    trainer.restore()
    best = config.keep_best and trainer.restore_best()
    return trainer.model, "best weights" if best else "last checkpoint"


def _repair(task, config, results, on_jax):
    """Makes what a finished run lacks (but a SavedModel under ``--nosaved_model``);
    returns ``(notes, served)``: what it did (empty when nothing was missing) and the
    SavedModel's version folder (None: none)."""
    flags = task.flags
    notes = []
    removed = remove_stale(flags)
    if removed:
        notes.append(_stale_note(removed, flags.model_dir))
    keras_path = os.path.join(export_dir_of(flags), "model.keras")
    rebuilt = not (os.path.isfile(keras_path)
                   and os.path.isfile(os.path.join(export_dir_of(flags), "vocab.txt")))
    if rebuilt:
        model, source = _rebuild_model(task, config, on_jax)
        save_model(export_dir_of(flags), model, task.save_vocabulary)
        notes.append(f"rebuilt {keras_path} and vocab.txt from the {source}")
    served = recorded_export(flags, results)
    if served is None and wants_saved_model(flags):
        served = export_saved_model(task, flags, keras_path, on_jax)
        notes.append(f"exported the missing SavedModel {served} from model.keras" if served
                     else "no SavedModel: TensorFlow is not installed here")
    elif served is None and (results.get("outputs") or {}).get("saved_model"):
        notes.append(f"the SavedModel {results['outputs']['saved_model']} it named is "
                     "missing and --nosaved_model exports none")
    outputs = _outputs(flags, keras_path, served)
    if results.get("outputs") != outputs:  # results.json names what the run has now
        path = os.path.join(flags.model_dir, "results.json")
        write_text(path, json.dumps({**results, "outputs": outputs}, indent=1, default=str),
                   label="results")
    return notes, served


def finish_again(task, config, strategy, on_jax):
    """Says so and returns True when ``--model_dir`` holds a finished run for ``config``
    (:func:`tpr_keras.training.checkpoints.finished_run`: ``results.json`` of the latest
    checkpoint's step, which reached a stop condition); first, on the chief, makes what
    the run lacks (:func:`_repair`). A run stopped by ``--max_train_minutes`` or killed is
    not finished: the command then resumes it."""
    flags = task.flags
    done = finished_run(flags.model_dir, config)
    if done is None:
        return False
    results, reason = done
    line = (f"Already trained: {results.get('epochs', '?')} epochs, "
            f"{task.finished_summary(results)} (stopped by {STOP_REASONS[reason]}); results "
            f"in {os.path.join(flags.model_dir, 'results.json')}")
    if _is_chief(strategy):
        notes, served = _repair(task, config, results, on_jax)
        if notes:
            line += "; its outputs were incomplete: " + "; ".join(notes)
        elif served:
            line += f"; model and SavedModel {served} in place, nothing written"
        else:  # --nosaved_model and none recorded: nothing is missing
            line += "; model in place, no SavedModel (--nosaved_model), nothing written"
    print(f"{line}. Use a new --model_dir, or {CONTINUE_HINT[reason]} to continue.",
          flush=True)
    return True
