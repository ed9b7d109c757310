"""`Task`: the one shape of a fine-tuning task (as Model Garden's official/core/base_task.py, in our names).
Each task folder's task.py declares a subclass; the one driver (`keras_bert.tasks.driver.finetune`) runs any
of them, so a recipe is its flags plus that call.

    task.prepare()                                    # what every split needs first (the label set)
    examples = task.read("train")                     # a split of its files, parsed
    data = task.dataset(examples, preprocessor, 32)   # training batches, through what `serve` runs
    predictions = task.predict(model, examples)       # from the model's `serve`
    results = task.results(model, examples, predictions)      # eval_results.json's values
    task.write_predictions("eval", examples, predictions, output_dir)

Training features are built by the function the model's `serve` runs on raw inputs (its `text_inputs`, or
the task's windows, batched by `keras_bert.tasks.finetuning.window_batches`), so a model trains on what it
serves (tests/tasks/test_trained_as_served.py). The task's private helpers live on its class; a module-level
function of a task.py is one that something outside the class uses.

Pre-training (keras_bert/tasks/pretraining/task.py `PretrainingTask`) speaks the same words where they fit
(`read`, `dataset`, `results`) but is run by the `pretrain` recipe, not this driver: its docstring says why.
"""

import os
import typing

TRAIN = "train"
PREDICT = "predict"


def prediction_path(output_dir, split, extension, predict_name="predictions"):
    """<output_dir>/<split>_predictions<extension>, the split "predict" as <predict_name><extension>."""
    name = predict_name if split == PREDICT else f"{split}_predictions"
    return os.path.join(output_dir, name + extension)


class TrainingData(typing.NamedTuple):
    """What `Task.dataset` returns: `batches` (a finite tf.data of (inputs, targets...) batches, in order
    unless shuffled), `num_examples` (the rows they hold: the step arithmetic's count; windows for a task
    that reads a text in windows) and `summary` (a line for the run's log, or None). Pre-training's
    (`PretrainingTask.dataset`): `batches` a `dataset_fn(input_context)` of an endless stream, for
    `strategy.distribute_datasets_from_function`, and `num_examples` None."""

    batches: object
    num_examples: int
    summary: str | None = None


class Task:
    """A fine-tuning task: its data splits, training features, predictions, metrics and prediction files.

    Attributes:
        model_class: the task model it fine-tunes (a `keras_bert.models.task_base.EncoderTaskModel`).
        compile_metrics: the `metrics=` of its `compile` (None: the loss only; "auto": the model's own).
    """

    model_class = None
    compile_metrics = None

    def splits(self, evaluate, predict):
        """(split names to score, split names to predict) of a run that `evaluate`s and/or `predict`s."""
        return (["eval"] if evaluate else []), (["predict"] if predict else [])

    def prepare(self):
        """Reads what every split needs before the first (the label set of a training file); default none."""

    @property
    def labels(self):
        """The class names in id order, saved with the model (labels.json), or None."""
        return None

    def head_args(self):
        """The constructor arguments of `model_class`'s head that the task's labels fix."""
        return {} if self.labels is None else {"labels": list(self.labels)}

    def check_model(self, model):
        """Raises ValueError when `model` (built or loaded) does not fit the task; default: its outputs are
        the classes of `head_args()` (`labels`, else `num_classes`; neither: no check)."""
        from keras_bert.tasks.finetuning import check_num_classes

        args = self.head_args()
        classes = args.get("labels", args.get("num_classes"))
        if classes is not None:
            check_num_classes(model, classes)

    def read(self, split):
        """The examples of `split` ("train", or a name of `splits`), parsed: errors name the file and line."""
        raise NotImplementedError

    def dataset(self, examples, preprocessor, batch_size=32, training=True, seed=0, pad_to_multiple_of=0):
        """The `TrainingData` of `examples`, packed by `preprocessor` as `serve` packs them; shuffled with
        `seed` when `training`; each batch cut to `pad_to_multiple_of` (0: full length)."""
        raise NotImplementedError

    def predict(self, model, examples, batch_size=32, preprocessor=None):
        """The predictions of `model` on `examples`, from its `serve` (what an export of it answers)."""
        raise NotImplementedError

    def results(self, model, examples, predictions):
        """{name: value} of `predictions` on labeled `examples`: the task's metrics and eval_loss."""
        raise NotImplementedError

    def write_predictions(self, split, examples, predictions, output_dir):
        """Writes the prediction file(s) of `split` under `output_dir` (named by `prediction_path`, unless
        the data has its own names); returns the path, a list of paths, or None when the split has no
        file."""
        raise NotImplementedError
