"""``train.math``'s task: the TP-Transformer (Schlag et al., 2019) or the Transformer on the
Mathematics Dataset, scored by the exact match of the whole greedy answer per module, on
interpolate and extrapolate (Table 1)."""

import os
from types import MappingProxyType

import numpy as np

from tpr_keras.data import mathematics
from tpr_keras.data.mathematics import find_mathematics_dir, TRAIN_DIFFICULTIES
from tpr_keras.models import MathAnswerer
from tpr_keras.models.tp_transformer import MathPreprocessor, sequence_compute_fn, TPTransformer
from tpr_keras.presets.preset_files import load_preset, sha256_file
from tpr_keras.training import EpochMetric, get_optimizer, TrainConfig
from tpr_keras.training.recipes.tp_transformer import resolve_size
from tpr_keras.training.torch_init import torch_linear_init
from train import backend
from train.errors import UsageError
from train.runner import TrainTask
from train.tasks.math_validation import check_resumed_run, split_validation
from train.tasks.math_validation import describe as describe_validation

#: Flags whose default is the size's training recipe
#: (:mod:`tpr_keras.training.recipes.tp_transformer`).
RECIPE_FLAGS = ("learning_rate", "beta_1", "beta_2", "clip_norm", "batch_size", "steps", "epochs",
                "max_train_minutes")
REGIMES = ("interpolate", "extrapolate")
#: How the start line names a recipe's optimizer (default: Keras' Adam).
OPTIMIZER_NAMES = {"torch_adam": "PyTorch-form Adam"}


def describe_recipe(flag, preset, recipe):
    """The line printed at start: which size ``--size flag`` gave, and its recipe."""
    device = ""
    if flag == "auto":
        device = " (a GPU is visible)" if preset in ("tp_transformer", "transformer") else (
            " (no GPU: the CPU recipe; the paper's is --size tp_transformer)")
    budget = [f"{recipe['steps']:,} steps" if recipe["steps"] else f"{recipe['epochs']} epochs"]
    if recipe.get("max_train_minutes"):
        budget.append(f"at most {recipe['max_train_minutes']:g} min of training")
    return (f"Size {flag}" + (f" -> {preset}" if flag != preset else "") + device +
            f": {OPTIMIZER_NAMES.get(recipe.get('optimizer'), 'Adam')} lr "
            f"{recipe['learning_rate']:g}, β {recipe['beta_1']:g}/"
            f"{recipe['beta_2']:g}, clip {recipe['clip_norm']:g}, batch "
            f"{recipe['batch_size']}, " + ", ".join(budget) + ". Flags override each.")


def jax_greedy_accuracy(model, max_length):
    """``batches -> exact match %`` of greedy answers on JAX (whole answer + end symbol,
    as ``tpr_keras.evaluation.greedy_scorer``), one ``jax.jit`` decoder for
    every module; the weight-0 filler rows of the batches are left out."""
    import jax
    decode = jax.jit(lambda source: model.greedy_decode(source, max_length=max_length)[0])

    def accuracy(batches):
        hits = []
        for features, labels in batches:
            ids = np.asarray(decode(features["source"]))
            target = labels["target_out"][:, :ids.shape[1]]
            target = np.pad(target, ((0, 0), (0, ids.shape[1] - target.shape[1])))
            hits.append((ids == target).all(axis=1)[labels["weight"] > 0])
        return float(100.0 * np.concatenate(hits).mean()) if hits else float("nan")

    return accuracy


def parse_module_weights(text, module_names):
    """``--module_weights`` (``"name=weight,..."``) as ``{module id: weight}``, ids
    indexing ``module_names``; None for an empty flag.

    Raises:
        ValueError: an entry without ``=``, a weight that is not a positive number, a
            name twice, or a name that is not one of the trained modules (listed).
    """
    if not text:
        return None
    weights = {}
    for entry in text.split(","):
        name, sep, value = entry.strip().partition("=")
        if not sep:
            raise ValueError(f"--module_weights entry {entry!r} is not module=weight")
        if name not in module_names:
            raise ValueError(f"--module_weights names {name!r}, which is not a trained "
                             f"module; the modules are {', '.join(module_names)}")
        try:
            weight = float(value)
        except ValueError:
            weight = float("nan")
        if not weight > 0 or weight == float("inf"):
            raise ValueError(f"--module_weights: the weight of {name} must be a positive "
                             f"number, got {value!r}")
        if module_names.index(name) in weights:
            raise ValueError(f"--module_weights names {name} twice")
        weights[module_names.index(name)] = weight
    return weights


def preset_vocabulary(preset):
    """The ``CharVocabulary`` of the trained math preset ``preset`` (a name or a folder)."""
    return MathPreprocessor.from_preset(preset).vocabulary


def load_initial_weights(model, preset):
    """Copies the weights of the trained preset ``preset`` (a shipped name or a folder)
    into ``model``, checking that both have the same vocabulary and weight shapes.

    Returns:
        Where the weights came from, for ``results.json``: the preset's name, its weights
        file's SHA-256, and its own training command, commit and results file.
    """
    loaded = load_preset(preset)
    if loaded.class_name != "TPTransformer":
        raise ValueError(f"--init_from {preset}: a {loaded.class_name} preset; a run "
                         "continues one TPTransformer (for a routed preset, one of its parts, "
                         "named in its metadata.json's training.parts)")
    trained = loaded.build_model()
    ours, theirs = model.get_config(), trained.get_config()
    if ours.get("vocabulary") != theirs.get("vocabulary"):
        raise ValueError(f"--init_from {preset}: the preset's vocabulary differs from this "
                         "run's; its weights would read other symbols")
    shapes = [tuple(w.shape) for w in model.weights]
    if shapes != [tuple(w.shape) for w in trained.weights]:
        raise ValueError(f"--init_from {preset}: its weights do not fit this --size's "
                         f"size; give the size it was trained at")
    model.set_weights(trained.get_weights())
    training = loaded.metadata.get("training", {})
    return {"preset": loaded.name, "weights_sha256": sha256_file(loaded.weights_path),
            "command": training.get("command"),
            "commit": training.get("source", {}).get("commit"),
            "results_json": training.get("results_json")}


class MathTask(TrainTask):
    """The Mathematics Dataset: ``--size`` picks the size and its recipe together (the
    paper's on a GPU, a CPU one otherwise); recipe flags given override it."""

    #: The resolved recipe (:meth:`resolve_recipe`); its keys without a flag (an
    #: ``authors_code`` recipe's optimizer, loss, initialisation, batches) are read here.
    recipe = MappingProxyType({})

    def resolve_recipe(self):
        flags = self.flags
        self.preset, recipe = resolve_size(
            flags.size, use_role=flags.model == "tp_transformer",
            recipe_name=getattr(flags, "recipe", "size"),
            **{k: getattr(flags, k) for k in RECIPE_FLAGS})
        self.recipe = recipe  # authors_code: keys without a flag (optimizer, loss, ...)
        for key in RECIPE_FLAGS:  # the shared flags read max_train_minutes
            setattr(flags, key, recipe[key])
        if "balance_modules" in recipe:
            flags.balance_modules = recipe["balance_modules"]
        if flags.answer_buckets and backend.keras_backend() == "jax":
            raise UsageError("--answer_buckets batches by a grid of lengths in tf.data and "
                             "Keras runs on JAX (KERAS_BACKEND=jax), whose batches pad to a "
                             "few fixed shapes: leave --answer_buckets out")
        if not flags.length_buckets and flags.answer_buckets:
            raise UsageError("--nolength_buckets batches plainly in tf.data, and "
                             "--answer_buckets batches by a grid of lengths: give one of them")
        if not flags.length_buckets and backend.keras_backend() == "jax":
            raise UsageError("--nolength_buckets batches plainly in tf.data, and Keras runs "
                             "on JAX (KERAS_BACKEND=jax), whose batches pad to a few fixed "
                             "shapes: leave --nolength_buckets out")
        for flag in ("length_groups", "target_groups", "group_multiple"):
            if getattr(flags, flag) > 1 and backend.keras_backend() == "jax":
                # The groups' shapes are known only as the step runs.
                raise UsageError(f"--{flag} {getattr(flags, flag)} needs TensorFlow's "
                                 "dynamic shapes and Keras runs on JAX (KERAS_BACKEND=jax), "
                                 "which compiles one step per batch shape: leave "
                                 f"--{flag} out")
        print(describe_recipe(flags.size, self.preset, recipe))
        return flags.batch_size

    def train_config(self, trainer_kwargs):
        flags = self.flags
        return TrainConfig(
            learning_rate=flags.learning_rate, epochs=flags.epochs, max_steps=flags.steps,
            clip_norm=flags.clip_norm or None, warmup_steps=flags.warmup_steps,
            warmup_factor=flags.warmup_factor, halve_lr_below=None, patience=flags.patience,
            cooldown_steps=flags.cooldown_steps or None,
            **trainer_kwargs)

    def finished_summary(self, results):
        return "interpolate accuracy {:.2f} %".format(
            results.get("summary", {}).get("interpolate", {}).get("mean", float("nan")))

    def load_data(self):
        flags = self.flags
        modules = flags.modules if flags.modules == "all" else tuple(flags.modules.split(","))
        # A run that continues a preset reads with the preset's vocabulary, so that it
        # may train on a subset of the preset's modules (whose characters are fewer).
        vocab = preset_vocabulary(flags.init_from) if flags.init_from else None
        self.data = mathematics.load_mathematics(flags.data_dir, modules=modules, vocab=vocab,
                                                 limit_per_file=flags.limit_per_file,
                                                 download=flags.download)
        unknown = self.data.stats["unknown_characters"]
        if vocab is not None and any(k.startswith("train/") for k in unknown):
            raise ValueError(f"--init_from {flags.init_from}: the training questions hold "
                             f"characters outside the preset's vocabulary ({unknown}); "
                             "its weights have no embedding for them")
        print(self.data)
        self.data, self.validation, self.validation_record = split_validation(flags,
                                                                              self.data)
        check_resumed_run(getattr(flags, "model_dir", None), self.validation_record)
        print(describe_validation(self.validation_record))
        self.module_weights = parse_module_weights(flags.module_weights,
                                                   list(self.data.module_names))
        if self.module_weights and not flags.balance_modules:
            raise ValueError("--module_weights draws a balanced epoch: drop "
                             "--nobalance_modules")

    def data_files(self):
        """The training files of the run's modules (the data a carried run must keep)."""
        root = find_mathematics_dir(self.flags.data_dir, download=False)
        paths = (os.path.join(root, difficulty, f"{module}.txt")
                 for module in self.data.module_names for difficulty in TRAIN_DIFFICULTIES)
        return [path for path in paths if os.path.exists(path)]

    def model_fn(self):
        model = TPTransformer.from_paper_size(self.preset, vocabulary_size=len(self.data.vocab),
                                              vocabulary=self.data.vocab.tokens,
                                              use_role=self.flags.model == "tp_transformer")
        self.init_record = None
        if self.flags.init_from:
            self.init_record = load_initial_weights(model, self.flags.init_from)
        elif self.recipe.get("torch_default_init"):
            torch_linear_init(model, self.recipe["torch_default_init"], seed=self.flags.seed)
        return model

    def optimizer_fn(self):
        flags = self.flags
        return get_optimizer(self.recipe.get("optimizer", "adam"), flags.learning_rate,
                             flags.beta_1, flags.beta_2, self.recipe.get("epsilon"))

    def compute_fn(self, on_jax):
        return sequence_compute_fn(reduction=self.recipe.get("loss_reduction", "sum"),
                                   length_groups=self.flags.length_groups,
                                   target_groups=self.flags.target_groups,
                                   group_multiple=self.flags.group_multiple)

    def describe_model(self, trainer):
        print(f"{self.flags.model} ({self.preset}): {trainer.model.count_params():,} "
              "parameters.")

    def training_data(self, trainer, on_jax):
        flags, data = self.flags, self.data
        if on_jax:  # numpy batches of a few fixed shapes: JAX compiles once per shape
            train_fn = mathematics.MathBatches(data.train, flags.batch_size, shuffle=True,
                                               seed=flags.seed,
                                               balance_modules=flags.balance_modules,
                                               module_weights=self.module_weights).batches
            valid_ds = mathematics.MathBatches(self.validation, flags.eval_batch_size)
        else:
            def train_fn(epoch):
                buckets = ({"bucket_boundaries": self.recipe["bucket_boundaries"]}
                           if "bucket_boundaries" in self.recipe else {})
                if not flags.length_buckets:  # plain batches, the authors' batching
                    buckets = {"bucket_boundaries": None}
                if flags.answer_buckets:
                    buckets = {"bucket_boundaries": mathematics.GRID_BUCKET_BOUNDARIES,
                               "answer_bucket_boundaries": mathematics.GRID_ANSWER_BOUNDARIES}
                return mathematics.make_dataset(data.train, flags.batch_size, shuffle=True,
                                                seed=flags.seed * 100_003 + epoch,
                                                balance_modules=flags.balance_modules,
                                                module_weights=self.module_weights, **buckets)

            valid_ds = mathematics.make_dataset(self.validation, flags.eval_batch_size)
        return train_fn, valid_ds, -(-len(data.train) // flags.batch_size)

    def _accuracy(self, model, on_jax):
        """``split -> exact match %`` of the greedy answers. One per model for the run:
        the curve's after each epoch and the final table's share one compiled decoder (a
        second one cost a second trace and first call, about a second of a short run)."""
        made = getattr(self, "_made_accuracy", None)
        if made is not None and made[0] is model:
            return made[1]
        batch, max_length = self.flags.eval_batch_size, model.max_decode_length
        if on_jax:
            score = jax_greedy_accuracy(model, max_length)
            accuracy = lambda split: score(mathematics.MathBatches(split, batch))  # noqa: E731
        else:
            from tpr_keras.evaluation.mathematics import greedy_accuracy, greedy_scorer

            scorer = greedy_scorer(model, max_length)
            accuracy = lambda split: greedy_accuracy(  # noqa: E731
                scorer, mathematics.make_dataset(split, batch))
        self._made_accuracy = (model, accuracy)
        return accuracy

    def callbacks(self):
        """With ``--curve_questions N``: the exact match % of each module's first N
        interpolate (test-file) questions after every epoch
        (``interpolate_exact_match_percent``); curves only, they choose no epoch."""
        count = self.flags.curve_questions
        if not count:
            return []
        on_jax = backend.keras_backend() == "jax"
        splits = {module: split.head(count) for module, split in self.data.interpolate.items()}

        def exact_match(model):  # the decoder is compiled at the first epoch's end
            scorer = self._accuracy(model, on_jax)
            return {module: scorer(split) for module, split in splits.items()}

        return [EpochMetric("interpolate_exact_match_percent", exact_match)]

    def evaluate(self, trainer, on_jax, train_fn):
        accuracy = self._accuracy(trainer.model, on_jax)
        results = {f"{regime}_accuracy_percent": {
            module: accuracy(split) for module, split in getattr(self.data, regime).items()}
            for regime in REGIMES}
        print("\nregime      | modules | mean accuracy % | modules > 95 %")
        summary = {}
        for regime in REGIMES:
            scores = list(results[f"{regime}_accuracy_percent"].values())
            if scores:
                summary[regime] = {"modules": len(scores), "mean": sum(scores) / len(scores),
                                   "above_95": sum(s > 95 for s in scores)}
                print(f"{regime:11s} | {len(scores):7d} | {summary[regime]['mean']:15.2f} | "
                      f"{summary[regime]['above_95']:14d}")
        for regime in REGIMES:
            for module, score in results[f"{regime}_accuracy_percent"].items():
                print(f"  {regime:11s} {module:45s} {score:6.2f}")
        stats = self.data.stats
        return results | {"summary": summary, "parameters": trainer.model.count_params(),
                          "validation": self.validation_record,
                          "data": stats.get("counts", {}) if isinstance(stats, dict) else {}}

    def config_record(self, trainer):
        flags = self.flags
        return {k: getattr(flags, k) for k in (
            "modules", "model", "batch_size", "learning_rate", "beta_1", "beta_2",
            "clip_norm", "warmup_steps", "cooldown_steps", "epochs", "steps",
            "max_train_minutes", "seed", "curve_questions",
            "limit_per_file", "balance_modules", "module_weights", "init_from",
            "validation_questions", "validation_dir")} | {
                "recipe": getattr(flags, "recipe", "size"),
                "validation_source": self.validation_record["source"],
                "preset": self.preset, "preset_flag": flags.size,
                "init_from_preset": getattr(self, "init_record", None)}

    def save_vocabulary(self, path):
        self.data.vocab.save(path)

    def export(self, model, export_dir):
        # Through the task model that answers in Python, built in memory.
        return MathAnswerer(model, MathPreprocessor(self.data.vocab)).export(
            export_dir, self.flags.model_name)
