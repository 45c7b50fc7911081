"""``train.entailment``'s task: a recurrent encoder (TPRU, Tang, Smolensky & de Sa, 2018;
or LSTM/GRU) on the logical entailment data, plain or BiDAF (§5.1-5.2), scored by the
accuracy on validate and the five test sets (Table 1)."""

from tpr_keras.data import entailment
from tpr_keras.data.entailment_batches import EntailmentBatches
from tpr_keras.models import (
    BiDAFEntailmentModel,
    EntailmentClassifier,
    EntailmentPreprocessor,
    PlainEntailmentModel,
)
from tpr_keras.training import binary_classification, get_optimizer, TrainConfig
from tpr_keras.training.recipes import recipe
from tpr_keras.training.recipes.entailment import resolve_recipe
from train.runner import TrainTask

#: Flags that override the size's training recipe when given.
RECIPE_FLAGS = ("batch_size", "learning_rate", "epochs", "decay_every_epochs", "clip_norm",
                "augment")


def describe_recipe(flag, recipe, hp, limits):
    """The line printed at start: which recipe ``--recipe flag`` gave, and its limits."""
    note = ""
    if flag == "auto":
        note = (" (a GPU is visible)" if recipe == "paper" else
                " (no GPU: a time budget; all 90 epochs with --recipe paper)")
    budget = [f"up to {hp['epochs']} epochs"]
    if limits["max_train_minutes"]:
        budget.append(f"at most {limits['max_train_minutes']:g} min of training")
    return (f"Recipe {flag}" + (f" -> {recipe}" if flag != recipe else "") + note + ": Adam lr "
            f"{hp['learning_rate']:g}, batch {hp['batch_size']}, " + ", ".join(budget)
            + (", XLA" if limits["jit_compile"] else "") + ".")


class EntailmentTask(TrainTask):
    """Logical entailment: ``--arch`` and ``--cell`` name the paper size (and its §5.1
    recipe); ``--recipe`` runs it as published or under the CPU time budget."""

    def resolve_recipe(self):
        flags = self.flags
        self.model_class = PlainEntailmentModel if flags.arch == "plain" else BiDAFEntailmentModel
        self.preset = f"{flags.arch}_{flags.cell}"
        hp = recipe("entailment", self.preset)  # §5.1; flags given override it
        hp.update({k: getattr(flags, k) for k in RECIPE_FLAGS
                   if getattr(flags, k) is not None})
        self.recipe, self.limits = resolve_recipe(
            flags.recipe, max_train_minutes=flags.max_train_minutes,
            jit_compile=flags.jit_compile if "jit_compile" in flags.given else None,
            budget_given=flags.epochs is not None or flags.steps is not None)
        # The shared flags carry the recipe's limits to the trainer (trainer_kwargs).
        flags.max_train_minutes = self.limits["max_train_minutes"]
        flags.jit_compile = self.limits["jit_compile"]
        print(describe_recipe(flags.recipe, self.recipe, hp, self.limits))
        self.hp = hp
        return hp["batch_size"]

    def train_config(self, trainer_kwargs):
        hp = self.hp
        return TrainConfig(
            learning_rate=hp["learning_rate"], epochs=hp["epochs"], max_steps=self.flags.steps,
            clip_norm=hp["clip_norm"] or None, warmup_steps=0, halve_lr_below=None,
            decay_every_epochs=hp["decay_every_epochs"] or None,
            decay_factor=hp["decay_factor"], patience=self.flags.patience, **trainer_kwargs)

    def finished_summary(self, results):
        return "validate accuracy {:.1f} %".format(
            results.get("accuracy_percent", {}).get("validate", float("nan")))

    def load_data(self):
        limit = self.flags.train_limit
        train = entailment.load_entailment_split("train", self.flags.data_dir)
        if limit:
            train = entailment.EntailmentData(train.a[:limit], train.b[:limit],
                                              train.labels[:limit], train.heuristics[:limit])
        self.train = train
        self.evals = {split: entailment.load_entailment_split(split, self.flags.data_dir)
                      for split in entailment.EVALUATION_SPLITS}
        print(f"train {len(train.labels):,} pairs; " + ", ".join(
            f"{k} {len(v.labels):,}" for k, v in self.evals.items()))

    def model_fn(self):
        flags = self.flags
        return self.model_class.from_paper_size(
            self.preset, units=flags.dim, num_roles=flags.roles, pooling=flags.pooling,
            features=flags.features, embedding_init=flags.embedding_init, seed=flags.seed)

    def optimizer_fn(self):
        return get_optimizer(self.hp["optimizer"], self.hp["learning_rate"])

    def compute_fn(self, on_jax):
        return binary_classification("label" if on_jax else None)

    def describe_model(self, trainer):
        flags, model = self.flags, trainer.model
        self.parameters = model.count_params()
        self.trainable = sum(int(w.numpy().size) for w in model.trainable_weights)
        print(f"{flags.arch} {flags.cell} d={model.units}"
              + (f" N={model.num_roles}" if flags.cell == "tpru" else "")
              + f": {self.parameters:,} parameters ({self.trainable:,} trainable).")

    def training_data(self, trainer, on_jax):
        flags, hp, train = self.flags, self.hp, self.train
        if on_jax:  # numpy batches of a few fixed shapes: JAX compiles once per shape
            train_fn = EntailmentBatches(train, hp["batch_size"], shuffle=True,
                                         augment=hp["augment"], seed=flags.seed).batches
            self.eval_ds = {k: EntailmentBatches(v, 256) for k, v in self.evals.items()}
        else:
            # Under XLA each new batch shape is a new compilation of the training step
            # (train.txt's batches of 64 come in about 20 shapes per epoch, 20-60 s each on
            # a 2-core CPU, paid again by every resumed process). One shape, the longest
            # training proposition (41 symbols), costs about 2 % more recurrent steps than
            # padding each batch to its own longest (40.2 on average). Masks make the two
            # paddings give the same outputs.
            pad_to = "longest" if trainer.config.jit_compile else None

            def train_fn(epoch):
                return entailment.make_dataset(train, hp["batch_size"], shuffle=True,
                                               augment=hp["augment"], pad_to=pad_to,
                                               seed=flags.seed * 100_003 + epoch)

            self.eval_ds = {k: entailment.make_dataset(v, 256) for k, v in self.evals.items()}
        return train_fn, self.eval_ds["validate"], -(-len(train.labels) // hp["batch_size"])

    def evaluate(self, trainer, on_jax, train_fn):
        accuracy = {k: 100.0 - trainer.evaluate(ds)["error_percent"]
                    for k, ds in self.eval_ds.items()}
        print("\n" + " | ".join(f"{k} {v:.1f}" for k, v in accuracy.items()))
        return {"accuracy_percent": accuracy, "parameters": self.parameters,
                "trainable_parameters": self.trainable}

    def config_record(self, trainer):
        flags, model = self.flags, trainer.model
        return {k: getattr(flags, k) for k in (
            "cell", "arch", "features", "train_limit", "steps", "seed")} | self.hp | (
            self.limits) | {"recipe": self.recipe, "preset": self.preset, "dim": model.units,
                            "roles": model.num_roles, "pooling": model.pooling}

    def save_vocabulary(self, path):
        entailment.save_vocabulary(path)

    def export(self, model, export_dir):
        # Through the task model that answers in Python, built in memory.
        return EntailmentClassifier(model, EntailmentPreprocessor()).export(
            export_dir, self.flags.model_name)
