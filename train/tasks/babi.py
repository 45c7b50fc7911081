"""``train.babi``'s task: TPR-RNN (Schlag & Schmidhuber, 2018) or the MemN2N baseline
(Sukhbaatar et al., 2015) on bAbI, one task or several jointly, scored by the test error
per task (Table 1)."""

import keras
from absl import logging

from tpr_keras.data import babi
from tpr_keras.models import BabiAnswerer, BabiPreprocessor, MemN2N, TPRRNN
from tpr_keras.training import get_optimizer, sparse_classification, TrainConfig
from tpr_keras.training.callbacks import LinearStart
from tpr_keras.training.optimizers import authors_nadam
from tpr_keras.training.recipes import recipe, RECIPES
from train.cli import UsageError
from train.runner import TrainTask


def parse_tasks(value):
    """``--task``: ``"all"``, or a tuple of task numbers 1-20."""
    if value == "all":
        return "all"
    tasks = tuple(int(t) for t in value.split(","))
    bad = [t for t in tasks if not 1 <= t <= 20]
    if bad:
        raise UsageError(f"--task must be 1..20, a list of them, or 'all'; got {bad}.")
    return tasks


class BabiTask(TrainTask):
    """bAbI: the recipe follows the setting (one task or all jointly, Appendix A;
    :mod:`tpr_keras.training.recipes`), the sizes follow ``--size`` (a paper size); a
    size whose recipe names a ``protocol`` (MemN2N's ``joint_paper``) brings its recipe
    too. Recipe keys without a flag (``loss_reduction``, ``matrix_norm``, ...) are the
    recipe's."""

    def resolve_recipe(self):
        flags = self.flags
        self.tasks = parse_tasks(flags.task)
        self.joint = joint = self.tasks == "all" or len(self.tasks) > 1
        self.memn2n = flags.model == "memn2n"
        self.preset = flags.size or ("all_tasks" if joint else "single_task")
        if self.memn2n and self.preset not in MemN2N.paper_sizes:
            raise UsageError(f"--size {self.preset} is a TPR-RNN size; MemN2N has "
                                 f"{sorted(MemN2N.paper_sizes)}.")
        if not self.memn2n and self.preset not in TPRRNN.paper_sizes:
            raise UsageError(f"--size {self.preset} is a MemN2N size (--model "
                                 f"memn2n); TPR-RNN has {sorted(TPRRNN.paper_sizes)}.")
        # --size all_tasks_code on one task keeps the one-task recipe.
        defaults = dict(RECIPES[flags.model].get(self.preset, {}))
        if not defaults.get("protocol"):
            defaults = recipe(flags.model, "all_tasks" if joint else "single_task")
        if getattr(flags, "recipe", "size") == "authors_code":
            defaults = recipe(flags.model, self.preset, "authors_code")
        self.hp = {k: getattr(flags, k, None) if getattr(flags, k, None) is not None else v
                   for k, v in defaults.items()}
        return self.hp["batch_size"]

    def option(self, name, default=None):
        """A setting of the recipe (a flag given wins over it), else ``default``."""
        value = self.hp.get(name)
        if value is None:
            value = getattr(self.flags, name, None)
        return default if value is None else value

    def train_config(self, trainer_kwargs):
        flags, hp = self.flags, self.hp
        # MemN2N's per-matrix clipping: the trainer's (a recipe with a matrix_norm: after
        # the summed loss, matrices grouped as the authors') or Keras SGD's clipnorm.
        per_matrix = hp["optimizer"] == "sgd" and self.option("matrix_norm") is not None
        linear_start_epochs = self.option("linear_start_epochs")
        return TrainConfig(
            learning_rate=hp["learning_rate"], epochs=hp["epochs"], max_steps=flags.steps,
            clip_norm=None if hp["optimizer"] == "sgd" else hp["clip_norm"] or None,
            loss_reduction=self.option("loss_reduction", "mean"),
            clip_per_matrix=(hp["clip_norm"] or None) if per_matrix else None,
            matrix_norm=self.option("matrix_norm", "frobenius"),
            decay_offset_epochs=self.option("decay_offset_epochs", 0),
            schedule_start_epoch=(linear_start_epochs or 0) if (
                self.memn2n and flags.linear_start) else 0,
            keep_best=self.option("keep_best", True),
            warmup_steps=hp["warmup_steps"], decay_every_epochs=hp["decay_every_epochs"],
            warmup_factor=flags.warmup_factor, halve_lr_below=hp["halve_lr_below"],
            # a recipe without early stopping (MemN2N joint_paper) trains all its epochs
            patience=flags.patience if self.option("early_stopping", True) else None,
            min_delta_loss=flags.min_delta_loss,
            patience_at_zero=None if flags.patience_at_zero < 0 else flags.patience_at_zero,
            target_error=flags.target_valid_error, **trainer_kwargs)

    def finished_summary(self, results):
        return f"test error {results['test_error_percent_mean']:.2f} %"

    def max_story_sentences(self):
        """The flag's or recipe's truncation; jointly, a recipe's
        ``joint_max_story_sentences`` (the authors' code: task 3 too at 70)."""
        limit = self.option("max_story_sentences")
        if limit is None and getattr(self, "joint", False):
            limit = self.hp.get("joint_max_story_sentences")
        return limit

    def load_data(self):
        flags = self.flags
        self.data = data = babi.load_babi(
            flags.data_dir, tasks=self.tasks, setting=flags.setting,
            max_story_sentences=self.max_story_sentences(), download=flags.download,
            keep_sentence_ends=self.keep_sentence_ends())
        print(data)
        self.truncated = data.stats.get("truncated", {})
        print(f"Vocabulary {len(data.vocab)} symbols; {data.max_words} words per sentence; "
              f"longest story {data.max_sentences} sentences; truncated samples "
              f"{self.truncated}.")

    def model_fn(self):
        flags, data = self.flags, self.data
        if self.memn2n:
            return MemN2N.from_paper_size(
                self.preset, vocabulary_size=len(data.vocab), max_words=data.max_words,
                embedding_dim=flags.embedding_dim, num_hops=flags.hops,
                memory_size=flags.memory_size,
                sentence_encoding=self.option("sentence_encoding"),
                temporal_encoding=flags.temporal_encoding, weight_tying=flags.weight_tying,
                random_noise=flags.random_noise,
                mask_empty_memories=self.option("mask_empty_memories"),
                pad_gradient=self.option("pad_gradient"), linear_start=flags.linear_start,
                answer_time_words=self.option("answer_time_words"), seed=flags.seed)
        return TPRRNN.from_paper_size(
            self.preset, vocabulary_size=len(data.vocab), max_words=data.max_words,
            symbol_dim=flags.symbol_dim, hidden_dim=flags.hidden_dim,
            entity_dim=flags.entity_dim, relation_dim=flags.relation_dim,
            operations=flags.operations, inference_steps=flags.inference_steps,
            implementation=flags.implementation, pad_row=self.option("pad_row", "zero"))

    def optimizer_fn(self):
        hp = self.hp
        if hp["optimizer"] == "sgd":
            # Per-matrix clipping (Keras clipnorm clips each gradient on its own),
            # applied by the Trainer to the all-reduced gradient, unless the trainer
            # clips (train_config: a recipe with a matrix_norm).
            clip = None if self.option("matrix_norm") else hp["clip_norm"] or None
            return keras.optimizers.SGD(hp["learning_rate"], clipnorm=clip)
        if (hp["optimizer"] == "nesterov_adam"
                and self.option("beta_power_start") == "glorot_uniform"):
            return authors_nadam(hp["learning_rate"], hp["beta_1"], hp["beta_2"],
                                 hp.get("epsilon") or 1e-8, seed=self.flags.seed)
        return get_optimizer(hp["optimizer"], hp["learning_rate"], hp["beta_1"], hp["beta_2"],
                             hp.get("epsilon"))

    def compute_fn(self, on_jax):
        return sparse_classification("answer")

    def describe_model(self, trainer):
        flags = self.flags
        trainer.model.summary(print_fn=lambda line, **_: logging.info(line))
        if self.memn2n and flags.linear_start:
            # LS: 0.005 instead of 0.01 (§4.2); the authors' joint protocol keeps 0.005.
            # (A resumed run's checkpoint then restores the factor it had.)
            trainer.set_lr_factor(self.option("linear_start_lr_factor", 0.5))
        if self.memn2n:
            model = trainer.model
            print(f"MemN2N ({self.preset}, {flags.hops} hops, {model.sentence_encoding}, "
                  f"{flags.weight_tying}, LS={flags.linear_start}, RN={flags.random_noise}, "
                  f"empty slots {'masked' if model.mask_empty_memories else 'in the softmax'}"
                  f"{', pad word in the clipping norm' if model.pad_gradient else ''}): "
                  f"{trainer.model.count_params():,} parameters.")
        else:
            print(f"TPR-RNN ({self.preset}, operations={flags.operations}): "
                  f"{trainer.model.count_params():,} parameters.")

    def callbacks(self):
        if not self.memn2n:
            return []
        return [LinearStart(epochs=self.option("linear_start_epochs"))]

    def training_data(self, trainer, on_jax):
        flags, data, batch = self.flags, self.data, self.hp["batch_size"]
        eval_batch = max(batch, 256)
        bucket_width = self.option("bucket_width", 10) or None
        # the authors' epochs: only full batches (floor(N / batch) of them)
        drop = bool(self.option("drop_remainder", False))
        if on_jax:  # numpy batches of a few fixed shapes: JAX compiles once per shape
            train_fn = babi.NumpyBatches(data.train, batch, shuffle=True, seed=flags.seed,
                                         bucket_width=bucket_width).batches
            self.valid_ds, self.test_ds = (
                babi.NumpyBatches(split, eval_batch, bucket_width=bucket_width)
                for split in (data.valid, data.test))
        else:
            if trainer.host_only:
                # One pipeline for every epoch, the epoch's order chosen through a variable:
                # building and tracing a pipeline per epoch is a visible share of a short
                # epoch.
                import tensorflow as tf

                epoch_variable = tf.Variable(0, dtype=tf.int64, trainable=False)
                train_ds = babi.make_dataset(data.train, batch, shuffle=True, seed=flags.seed,
                                             bucket_width=bucket_width, epoch=epoch_variable,
                                             drop_remainder=drop)

                def train_fn(epoch):
                    epoch_variable.assign(epoch)
                    return train_ds
            else:  # distributed input is auto-sharded/rebatched: a pipeline per epoch
                def train_fn(epoch):
                    return babi.make_dataset(data.train, batch, shuffle=True,
                                             seed=flags.seed * 100_003 + epoch,
                                             bucket_width=bucket_width, drop_remainder=drop)

            self.valid_ds, self.test_ds = (
                babi.make_dataset(split, eval_batch, shuffle=False, bucket_width=bucket_width)
                for split in (data.valid, data.test))
        self.bucket_width = bucket_width
        steps = len(data.train) // batch if drop else -(-len(data.train) // batch)
        return train_fn, self.valid_ds, steps

    def evaluate(self, trainer, on_jax, train_fn):
        flags, data = self.flags, self.data
        step_rate = None
        if flags.benchmark_step:  # the same compiled step, on cached batches of this data
            step_rate = trainer.benchmark_train_step(train_fn(0),
                                                     seconds=flags.benchmark_seconds)
        valid = trainer.evaluate(self.valid_ds, group_key="task")
        test = trainer.evaluate(self.test_ds, group_key="task")
        extra = {}
        if self.option("train_error"):  # MemN2N §4.2 picks the best of 10 runs by it
            extra = self.train_error(trainer, on_jax)
        rows = sorted(test["error_percent_by_group"])
        print("\ntask | valid error % | test error %")
        for task in rows:
            print(f"{task:4d} | {valid['error_percent_by_group'].get(task, float('nan')):13.2f}"
                  f" | {test['error_percent_by_group'][task]:11.2f}")
        if len(rows) > 1:
            print(f"mean | {valid['error_percent']:13.2f} | {test['error_percent']:11.2f}"
                  f"   (failed tasks > 5%: "
                  f"{sum(e > 5 for e in test['error_percent_by_group'].values())})")
        return {
            "test_error_percent": {str(k): v
                                   for k, v in test["error_percent_by_group"].items()},
            "valid_error_percent": {str(k): v
                                    for k, v in valid["error_percent_by_group"].items()},
            "test_error_percent_mean": test["error_percent"],
            "step_examples_per_second": step_rate, **extra,
            "data": {"train": len(data.train), "valid": len(data.valid),
                     "test": len(data.test), "vocabulary": len(data.vocab),
                     "max_words": data.max_words, "truncated": self.truncated},
        }

    def train_error(self, trainer, on_jax):
        """The final weights' error on the training split (inference: no random noise),
        per task and over all its questions."""
        split, batch = self.data.train, max(self.hp["batch_size"], 256)
        dataset = (babi.NumpyBatches(split, batch, bucket_width=self.bucket_width) if on_jax
                   else babi.make_dataset(split, batch, shuffle=False,
                                          bucket_width=self.bucket_width))
        train = trainer.evaluate(dataset, group_key="task")
        print(f"training split error {train['error_percent']:.2f} % (the run picker's)")
        return {"train_error_percent": {str(k): v for k, v in
                                        train["error_percent_by_group"].items()},
                "train_error_percent_mean": train["error_percent"]}

    def config_record(self, trainer):
        flags = self.flags
        # the recipe first: the values the run used (per task, as read) override its keys
        return {**self.hp, "task": flags.task, "model": flags.model, "preset": self.preset,
                "operations": flags.operations, "seed": flags.seed,
                "implementation": flags.implementation,
                "bucket_width": self.bucket_width or 0, "setting": flags.setting,
                "max_story_sentences": {str(t): n for t, n in
                                        self.data.stats["max_story_sentences"].items()},
                "keep_sentence_ends": self.keep_sentence_ends(),
                "parameters": trainer.model.count_params()}

    def save_vocabulary(self, path):
        self.data.vocab.save(path)

    def keep_sentence_ends(self):
        """Whether ``. ? !`` stay tokens (MemN2N ``joint_paper``: dropped, as its authors'
        parser does)."""
        return bool(self.option("keep_sentence_ends", True))

    def _story_limit(self):
        limits = set(self.data.stats["max_story_sentences"].values())
        return None if None in limits else max(limits)

    def export(self, model, export_dir):
        # String-in/string-out SavedModel for TF Serving, through the task model that
        # answers in Python (the run has no preset folder yet: it is built in memory).
        preprocessor = BabiPreprocessor(self.data.vocab, model.max_words, self._story_limit(),
                                        self.keep_sentence_ends())
        return BabiAnswerer(model, preprocessor).export(export_dir, self.flags.model_name)

    def export_options(self):
        return {"max_story_sentences": self._story_limit() or 0,
                "keep_sentence_ends": self.keep_sentence_ends()}
