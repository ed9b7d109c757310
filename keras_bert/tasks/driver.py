"""The one fine-tuning driver: `finetune(task, run)` runs any `keras_bert.tasks.base.Task` the same way
(every input read before the first step, build, compile, fit with resume, save, evaluate, predict), with the
hooks of a `Run` (recipes/common.py `FlagRun` fills them from the flags). Every `run_*` recipe is its flags
and one call of it; it names no task.

With a `Run.checkpoint_dir`, training is checkpointed (`TrainingCheckpoint`: weights, optimizer state and
step, dropout's seeds) at each epoch's end, and a run killed in training resumes from the last: its weights,
optimizer state, step and so learning rate as saved, then the epochs left, every example once each, shuffled
with `seed + step` (as pre-training: new orders rather than a replay of the first epoch's); a run of other
inputs (the training examples by content, the labels, `Run.identity`) is refused naming what changed. The
checkpoints are removed once the run has ended.

    run = MyRun(strategy, preprocessor, output_dir="runs/x", predict=True)   # a Run with its hooks
    model, results = finetune(task, run)
"""

import contextlib
import dataclasses
import hashlib

from keras_bert.tasks.base import TRAIN


@dataclasses.dataclass
class Run:
    """The settings of one fine-tuning run and its hooks (a subclass implements those raising).

    Attributes:
        strategy: the tf.distribute strategy the model is built under.
        preprocessor: the run's `BertPreprocessor` (tokenizer and sequence length) for data and `serve`.
        output_dir: where the prediction files go.
        train, evaluate, predict: the run's stages.
        train_batch_size, eval_batch_size: global batch sizes of training and of `serve`.
        seed: the training data's shuffle seed.
        pad_to_multiple_of: training batches cut to a multiple of this (0: full length).
        checkpoint_dir: where training checkpoints go, from which a killed run resumes (None: none).
    """

    strategy: object
    preprocessor: object
    output_dir: str
    train: bool = True
    evaluate: bool = True
    predict: bool = False
    train_batch_size: int = 32
    eval_batch_size: int = 32
    seed: int = 0
    pad_to_multiple_of: int = 0
    checkpoint_dir: str | None = None

    def errors(self, stage):
        """A context manager around `stage` ("labels", "train", "model", or a split's name) that may add to
        its errors where their data came from; default none."""
        del stage
        return contextlib.nullcontext()

    def show(self, line):
        """Tells the user `line` (the training data's summary, the prediction files)."""
        print(line)

    def build_model(self, model_class, head_args):
        """The model to fine-tune (called inside `strategy.scope()`)."""
        raise NotImplementedError

    def compile(self, model, metrics, num_train_examples):
        """Compiles `model` with its `task_loss` and `metrics`, for `num_train_examples` (None: no
        training)."""
        raise NotImplementedError

    def identity(self):
        """What defines the run besides its training examples and labels, by content ({name: JSON-able}: the
        vocab, the initial checkpoint, the settings of training): a resume with others is refused."""
        return {}

    def restore(self, checkpoint):
        """`checkpoint.restore()`: the step the run resumes from (0: none); may add to its errors."""
        return checkpoint.restore()

    def fit(self, model, batches, num_examples, checkpoint=None):
        """Trains `model` on `batches` (finite; the run repeats them) of `num_examples` rows; with a
        `checkpoint` (a `TrainingCheckpoint`) from its step, batches before it skipped, saving it at each
        epoch's end."""
        raise NotImplementedError

    def save(self, model, labels):
        """Saves the fine-tuned model (with `labels`, or None)."""
        raise NotImplementedError

    def write_results(self, results):
        """Writes the evaluation `results` ({name: value})."""
        raise NotImplementedError


def finetune(task, run):
    """Runs `task` as `run` says: reads every split it uses (bad input fails before any step), builds the
    model of `task.model_class` under `run.strategy`, trains, saves, scores its eval splits (one results
    file; names prefixed by the split when there are several) and writes the prediction files of its eval
    and predict splits. Returns (model, results)."""
    scored, predicted = task.splits(run.evaluate, run.predict)
    with run.errors("labels"):
        task.prepare()
    data = None
    if run.train:
        with run.errors(TRAIN):
            train = task.read(TRAIN)
    evals = [(split, _read(task, run, split)) for split in scored]
    predicts = [(split, _read(task, run, split)) for split in predicted]
    if run.train:
        with run.errors(TRAIN):  # a resumed run's epochs shuffled anew: seed + the step it resumes from
            data = task.dataset(train, run.preprocessor, run.train_batch_size, training=True,
                                seed=run.seed + _saved_step(run.checkpoint_dir),
                                pad_to_multiple_of=run.pad_to_multiple_of)
        if data.summary:
            run.show(data.summary)
    with run.strategy.scope():
        model = run.build_model(task.model_class, task.head_args())
        with run.errors("model"):
            task.check_model(model)
        run.compile(model, task.compile_metrics, data.num_examples if data else None)
        checkpoint = _checkpoint(task, run, model, train) if data and run.checkpoint_dir else None
    if checkpoint is not None:
        step = run.restore(checkpoint)
        if step:
            run.show(f"Resuming from step {step} ({checkpoint.manager.latest_checkpoint})")
    if data:
        run.fit(model, data.batches, data.num_examples, checkpoint)
        run.save(model, task.labels)
    results = {}
    for split, examples in evals:
        predictions = _predict(task, run, split, model, examples)
        prefix = f"{split}/" if len(evals) > 1 else ""
        results.update({prefix + name: value for name, value in task.results(model, examples,
                                                                             predictions).items()})
    if results:
        run.write_results(results)
    for split, examples in predicts:
        _predict(task, run, split, model, examples)
    if checkpoint is not None:
        checkpoint.discard()  # the run ended: nothing to resume
    return model, results


def _saved_step(directory):
    """The step of the latest checkpoint in `directory` (None or none there: 0)."""
    import tensorflow as tf

    path = directory and tf.train.latest_checkpoint(directory)
    return int(path.rsplit("-", 1)[1]) if path else 0


def _checkpoint(task, run, model, train):
    """The `TrainingCheckpoint` of `run` (the latest only: a fine-tuning checkpoint holds the optimizer's
    slots, twice the model), identified by the training examples' content, the labels and `run.identity()`."""
    from keras_bert.training.callbacks import TrainingCheckpoint

    digest = hashlib.sha256()
    for example in train:  # dataclasses of strings, numbers and lists: their repr is their content
        digest.update(repr(example).encode("utf-8") + b"\n")
    labels = None if task.labels is None else [str(label) for label in task.labels]
    identity = {"training data": digest.hexdigest(), "labels": labels, **run.identity()}
    return TrainingCheckpoint(model, run.checkpoint_dir, max_to_keep=1, strategy=run.strategy,
                              identity=identity)


def _read(task, run, split):
    with run.errors(split):
        return task.read(split)


def _predict(task, run, split, model, examples):
    """The predictions of `split`, their files written."""
    with run.errors(split):
        predictions = task.predict(model, examples, run.eval_batch_size, run.preprocessor)
    paths = task.write_predictions(split, examples, predictions, run.output_dir)
    if paths:
        run.show("Predictions: " + (paths if isinstance(paths, str) else ", ".join(paths)))
    return predictions
