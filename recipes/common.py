"""Plumbing shared by every recipe: flags, strategy, dtype policy, seeds, model building, optimizer,
results files. A recipe calls `define_flags(...)` at import, then in `main`: `strategy = setup()`, ...

Nothing here is specific to a task; task recipes add their own flags next to these. Each flag is a concept
of `recipes.flags` (its type, help and parse-time checks); the functions here say which a recipe takes.
"""

import contextlib
import dataclasses
import json
import logging
import os

import keras
import tensorflow as tf
from absl import flags

from keras_bert import compat
from keras_bert.config import BertConfig
from keras_bert.errors import UserInputError
from keras_bert.tasks.driver import Run
from keras_bert.training import distribute, optimization
from keras_bert.training.defaults import FINETUNING
from recipes import flags as shared_flags
from recipes.run_dir import claim_output_dir

FLAGS = flags.FLAGS
logger = logging.getLogger("keras_bert")
_RESOLVED = {}  # the flag values --init_checkpoint was resolved with -> its Pretrained (one run: one entry)


def define_flags(model_dir="runs/model", learning_rate=FINETUNING.learning_rate,
                 train_batch_size=FINETUNING.batch_size, max_seq_length=FINETUNING.max_seq_length,
                 num_warmup_steps=FINETUNING.num_warmup_steps, optimizer="adamw",
                 weight_decay=FINETUNING.weight_decay, preset="tiny"):
    """Defines the flags every recipe shares (`recipes.flags` concepts); the arguments are this recipe's
    defaults (default: the library's, `keras_bert.training.defaults`)."""
    # Model and vocabulary.
    shared_flags.define("bert_config_file", "init_checkpoint", "vocab_file", "do_lower_case",
                        max_seq_length=max_seq_length)
    shared_flags.define(preset=preset)
    # Optimization.
    shared_flags.define("clip_global_norm", "gradient_accumulation_steps", train_batch_size=train_batch_size,
                        learning_rate=learning_rate, num_warmup_steps=num_warmup_steps,
                        weight_decay=weight_decay)
    flags.DEFINE_enum("optimizer", optimizer, ["adamw", "lamb"], "Optimizer.")
    define_execution_flags(model_dir)
    shared_flags.define("pad_to_multiple_of")
    flags.DEFINE_bool("remat", False,
                      "Recompute the feed-forward GELU in the backward pass instead of keeping it (Keras "
                      "RematScope 'activations'): less peak memory (measured: 3682 -> 3324 MB peak RSS, "
                      "4-layer BERT-base width, batch 32, seq 128).")


def restore(checkpoint):
    """`checkpoint.restore()` (a `TrainingCheckpoint` of a resuming recipe): the step it resumes from; a run
    of other inputs or another configuration is refused, saying that --overwrite starts afresh."""
    try:
        return checkpoint.restore()
    except UserInputError as e:
        raise UserInputError(f"{e}, or pass --overwrite to start afresh") from None


def input_identity(tokenizer):
    """What a resuming run compares of its model's inputs, by content: the vocab's tokens and casing, and
    --init_checkpoint's files (a name that is no local path, as given)."""
    import glob

    from keras_bert.text.vocab import vocab_digest
    from keras_bert.training.callbacks import file_fingerprint

    init = FLAGS.init_checkpoint
    local = not init or os.path.exists(init) or glob.glob(glob.escape(init) + ".*")
    return {"vocab": vocab_digest(tokenizer.vocab),
            "casing": [tokenizer.lower_case, tokenizer.strip_accents, tokenizer.rules],
            "init_checkpoint": file_fingerprint([init]) if local else init}


def define_execution_flags(model_dir):
    """How a run executes and where it writes: --model_dir, --overwrite, --distribution_strategy, --tpu,
    --worker_wait_s, --dtype, --seed, --steps_per_execution, --jit_compile (what `setup` and `jit_compile`
    read)."""
    flags.DEFINE_string("model_dir", model_dir, "Output directory: checkpoints, logs, results, final model.")
    shared_flags.define("overwrite")
    flags.DEFINE_enum("distribution_strategy", "one_device", list(distribute.STRATEGIES),
                      "tf.distribute strategy; multi_worker_mirrored reads TF_CONFIG.")
    flags.DEFINE_string("tpu", None, "TPU name/address for --distribution_strategy=tpu.")
    shared_flags.define("worker_wait_s", "dtype", "seed", "steps_per_execution")
    flags.DEFINE_bool("jit_compile", None,
                      "XLA-compile the whole train step (true) or run TF's kernels (false); unset: the "
                      "library's choice for --dtype on this machine (XLA, except bf16 on a CPU with bf16 "
                      "hardware: oneDNN matmuls with XLA fusing the ops between them, "
                      "keras_bert/execution.py).")


def setup(input_flags=("init_checkpoint",), unfinished=False):
    """Seeds, dtype policy, output directory and the strategy from the shared flags (the output directory
    may not touch the paths of `input_flags`; with `unfinished`, a run of this recipe that left its
    checkpoints/ resumes there: `claim_output_dir`). Returns the strategy."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    _RESOLVED.clear()  # a checkpoint is resolved afresh each run
    keras.utils.set_random_seed(FLAGS.seed)
    keras.mixed_precision.set_global_policy(FLAGS.dtype)
    flag = "output_dir" if "output_dir" in FLAGS else "model_dir"
    claim_output_dir(flag, input_flags, check_only=True, unfinished=unfinished)  # before waiting for workers
    compat.fix_keras_multi_worker()
    with flag_errors("distribution_strategy", "worker_wait_s"):
        strategy = distribute.get_strategy(FLAGS.distribution_strategy, FLAGS.tpu, FLAGS.worker_wait_s)
    claim_output_dir(flag, input_flags, unfinished=unfinished)  # made once the run starts: a stopped wait
    # leaves nothing
    return strategy


def jit_compile(strategy, num_train_steps=None, num_shapes=1):
    """--jit_compile ("auto" when unset: the model's compile() chooses, or for a run of `num_train_steps`
    over `num_shapes` batch shapes `execution.choose_for_shapes`), except for multi_worker_mirrored on CPU,
    where XLA cannot compile the collectives."""
    if FLAGS.jit_compile is not False and isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        if not tf.config.list_logical_devices("GPU"):
            if FLAGS.jit_compile:
                logger.warning("--jit_compile is off for multi_worker_mirrored on CPU "
                               "(no XLA CPU collectives)")
            return False
    if FLAGS.jit_compile is None and num_train_steps:
        from keras_bert import execution

        return execution.choose_for_shapes(FLAGS.dtype, num_train_steps, num_shapes)
    return "auto" if FLAGS.jit_compile is None else FLAGS.jit_compile


def remat_scope():
    """The Keras RematScope of --remat, to build models in (a layer takes its remat mode when created)."""
    return keras.RematScope(mode="activations") if FLAGS.remat else contextlib.nullcontext()


@contextlib.contextmanager
def flag_errors(*names):
    """Adds to a library ValueError / FileNotFoundError raised inside the block a note naming the flags
    its data came from (the library names the data, a recipe the flag)."""
    try:
        yield
    except (ValueError, FileNotFoundError, UserInputError) as e:
        if names:
            e.add_note("given as " + ", ".join(FLAGS[name].serialize() or f"--{name}=None" for name in names))
        raise


def vocab_file():
    """--vocab_file, else vocab.txt beside --init_checkpoint, else the default corpus's learned vocab."""
    if FLAGS.vocab_file:  # checked to be a file when the flags were parsed (recipes/flags.py)
        return FLAGS.vocab_file
    if FLAGS.init_checkpoint:
        from keras_bert.checkpoints import find_vocab_file

        found = find_vocab_file(FLAGS.init_checkpoint)
        if found:
            return found
        raise ValueError(f"--init_checkpoint={FLAGS.init_checkpoint} has no vocab.txt beside it; "
                         "pass --vocab_file")
    from keras_bert.data.default_corpus import default_vocab_file

    return default_vocab_file(lower_case=lower_case())


def lower_case():
    """--do_lower_case, lower case when unset (a checkpoint's own casing comes from `checkpoint`)."""
    return FLAGS.do_lower_case is not False


def bert_config(vocab_size):
    """The architecture from --bert_config_file or --preset, checked against the vocab's size."""
    from keras_bert.tasks.finetuning import check_vocab_size

    if FLAGS.bert_config_file:
        config = BertConfig.from_json_file(FLAGS.bert_config_file)
        with flag_errors("bert_config_file"):
            check_vocab_size(config, vocab_size)
        return config
    return BertConfig.from_preset(FLAGS.preset, vocab_size=vocab_size)


def build_encoder(vocab_size):
    """A BertEncoder: the one --init_checkpoint holds (`keras_bert.models.assembly.assemble` of
    `checkpoint()`), else fresh from the config flags."""
    from keras_bert.models.assembly import assemble
    from keras_bert.models.encoder import BertEncoder

    if not FLAGS.init_checkpoint:
        return BertEncoder(bert_config(vocab_size), dtype=FLAGS.dtype)
    with flag_errors("init_checkpoint"):
        return assemble(checkpoint(), BertEncoder, FLAGS.dtype)


def build_optimizer(num_train_steps, num_warmup_steps=None):
    """The optimizer of the flags, with warmup (`num_warmup_steps`, default --num_warmup_steps) + linear
    decay over `num_train_steps`."""
    num_warmup_steps = FLAGS.num_warmup_steps if num_warmup_steps is None else num_warmup_steps
    if num_warmup_steps > num_train_steps:
        raise ValueError(f"--num_warmup_steps={num_warmup_steps} exceeds the {num_train_steps} train steps")
    return optimization.create_optimizer(FLAGS.learning_rate, num_train_steps, num_warmup_steps,
                                         optimizer=FLAGS.optimizer, weight_decay=FLAGS.weight_decay,
                                         clip_global_norm=FLAGS.clip_global_norm or None)


def write_json(path, values, strategy=None):
    """Writes `values` as JSON (atomically; only the chief in multi-worker runs)."""
    if strategy is not None and not distribute.is_chief(strategy):
        return
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump({k: _plain(v) for k, v in values.items()}, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


def _plain(value):
    return value.item() if hasattr(value, "item") else value


# ============================================================================================================
# Fine-tuning recipes (run_classifier, run_squad, run_ner, run_multiple_choice, extract_features)
# ============================================================================================================


def define_finetuning_flags(output_dir, learning_rate=FINETUNING.learning_rate,
                            train_batch_size=FINETUNING.batch_size, max_seq_length=FINETUNING.max_seq_length,
                            task_head=True):
    """The shared flags (as `define_flags`) plus those of the paper's fine-tuning scripts: --output_dir
    (alias of --model_dir), --eval_batch_size, --num_train_epochs, --warmup_proportion,
    --do_train/eval/predict, and with a `task_head` --head."""
    define_flags(model_dir=output_dir, learning_rate=learning_rate, train_batch_size=train_batch_size,
                 max_seq_length=max_seq_length)
    shared_flags.define_one("output_dir", alias_of="model_dir")
    shared_flags.define("eval_batch_size", "num_train_epochs", "warmup_proportion", "lora_rank",
                        *(("head",) if task_head else ()))
    flags.DEFINE_bool("do_train", True, "Fine-tune on the training data.")
    flags.DEFINE_bool("do_eval", True, "Score the evaluation data; writes eval_results.json.")
    flags.DEFINE_bool("do_predict", False, "Predict the test data; writes the predictions file.")


def flag_files(flag):
    """The files that flag `flag` (comma-separated files/globs) names; errors say which flag."""
    from keras_bert.data.pretraining import expand_patterns

    try:
        return expand_patterns(FLAGS[flag].value)
    except (FileNotFoundError, ValueError) as e:
        raise type(e)(f"--{flag}={FLAGS[flag].value}: {e}") from None


def output_inputs(globs=(), paths=()):
    """{label: path} of the inputs an output may not touch: the files of the `globs` flags (comma-separated
    files/globs; patterns matching nothing are left to the recipe's own error) and the `paths` flags."""
    from keras_bert.data.pretraining import expand_patterns

    inputs = {f"--{name}={FLAGS[name].value}": FLAGS[name].value for name in paths}
    for name in globs:
        value = FLAGS[name].value or ()
        for pattern in value.split(",") if isinstance(value, str) else value:
            with contextlib.suppress(FileNotFoundError, ValueError):
                inputs.update({f"{path} (of --{name})": path for path in expand_patterns(pattern)})
    return inputs


def claim_output(flag, kind="file", globs=(), paths=()):
    """`keras_bert.outputs.claim` of --`flag`'s path (a "file" or "dir") against the inputs of `globs` and
    `paths` (`output_inputs`), with --overwrite; its errors name the flags. Use it as a context manager."""
    from keras_bert import outputs

    value = FLAGS[flag].value
    return outputs.claim(value, output_inputs(globs, paths), FLAGS.overwrite, kind, f"--{flag}={value}", flag)


def output_file(flag, globs=(), paths=()):
    """`keras_bert.outputs.writing_file` of --`flag`'s path, claimed as `claim_output` does: a context
    manager yielding the temporary path to write, renamed to --`flag` on success."""
    from keras_bert import outputs

    value = FLAGS[flag].value
    return outputs.writing_file(value, output_inputs(globs, paths), FLAGS.overwrite, f"--{flag}={value}",
                                flag)


# The flags a script may define that override what a checkpoint states -> the loader's keyword.
OVERRIDE_FLAGS = {"vocab_file": "vocab_file", "do_lower_case": "lower_case", "max_seq_length": "seq_length"}


def _given_overrides():
    """{loader keyword: value} of the OVERRIDE_FLAGS this script defines and the command line gives."""
    return {keyword: FLAGS[name].value for name, keyword in OVERRIDE_FLAGS.items()
            if name in FLAGS and FLAGS[name].present and FLAGS[name].value is not None}


def _override_names():
    return [name for name, keyword in OVERRIDE_FLAGS.items() if keyword in _given_overrides()]


def load_model(flag):
    """The model of --`flag` (a path or hub name) as `keras_bert.load_pretrained_model` loads it, whatever
    the format: a `.keras` save's model, a task checkpoint's task model with its trained head, else the
    encoder; with the script's --vocab_file, --do_lower_case and --max_seq_length overriding what it states
    (where the script defines them and they are given). Its errors name the flags."""
    from keras_bert.models.encoder import load_pretrained_model

    with flag_errors(flag, *_override_names()):
        return load_pretrained_model(FLAGS[flag].value, **_given_overrides())


def checkpoint():
    """The `Pretrained` of --init_checkpoint (`keras_bert.models.pretrained.resolve_pretrained` with the
    given --vocab_file, --do_lower_case and --max_seq_length; unset, the packed length is the one the
    checkpoint states, else --max_seq_length's default), or None without --init_checkpoint; resolved once
    per run. Its errors name the flags."""
    from keras_bert.models.pretrained import resolve_pretrained

    if not FLAGS.init_checkpoint:
        return None
    given = _given_overrides()
    key = (FLAGS.init_checkpoint, *sorted(given.items()))
    if key not in _RESOLVED:
        with flag_errors("init_checkpoint", *_override_names()):
            pretrained = resolve_pretrained(FLAGS.init_checkpoint, default_seq_length=FLAGS.max_seq_length,
                                            **given)
        _RESOLVED.clear()  # one run, one entry
        _RESOLVED[key] = pretrained
    return _RESOLVED[key]


def checkpoint_labels():
    """The label names --init_checkpoint carries (`Pretrained.labels`: a fine-tuned `.keras`'s or the
    labels.json beside it, a Hugging Face task checkpoint's id2label names), or None."""
    pretrained = checkpoint()
    return None if pretrained is None else pretrained.labels


def run_tokenizer():
    """The BertTokenizer of the run: the one --init_checkpoint states (`checkpoint`: a `.keras` save's own,
    else the vocab beside it or --vocab_file, cased as the checkpoint states, else --do_lower_case, with
    KerasHub's rules for a KerasHub preset), else the one of --vocab_file (default: the default corpus's
    learned vocab) and --do_lower_case (default: lower case)."""
    from keras_bert.text import BertTokenizer

    pretrained = checkpoint()
    if pretrained is not None and pretrained.preprocessor is not None:
        return pretrained.preprocessor.tokenizer
    return BertTokenizer(vocab_file(), lower_case=lower_case())


def finetuning_tokenizer():
    """`run_tokenizer()`, and --max_seq_length becomes the packed length of --init_checkpoint's preprocessor
    (the flag when given, else what the checkpoint states, else the flag's default), so that the run packs
    as the model it loads."""
    pretrained = checkpoint()
    if pretrained is not None and pretrained.preprocessor is not None:
        FLAGS.max_seq_length = pretrained.preprocessor.seq_length
    return run_tokenizer()


def build_task_model(preprocessor, model_class, head_args=None):
    """The task model of --init_checkpoint (`keras_bert.tasks.finetuning.build_task_model`, the assembly
    `from_pretrained` uses: a fine-tuned `model_class` continues as it is; a KerasHub or Hugging Face head of
    this task whose classes are those of `head_args` (labels or num_classes) is loaded, other classes are
    refused unless --head=fresh), or `model_class(encoder, **head_args)` on a fresh encoder of the config
    flags. Call it inside `strategy.scope()`. Checks the vocab of `preprocessor` (the run's
    `BertPreprocessor`, given to a model that has none) and --max_seq_length against it."""
    from keras_bert.tasks import finetuning

    tokenizer = preprocessor.tokenizer
    config = None if FLAGS.init_checkpoint else bert_config(tokenizer.vocab_size)
    with flag_errors("init_checkpoint"), remat_scope():
        model = finetuning.build_task_model(
            model_class, head_args, FLAGS.init_checkpoint, config, FLAGS.dtype, FLAGS.head,
            pretrained=FLAGS.init_checkpoint and checkpoint(), hint="--head=fresh")
    config = model.encoder.config
    with flag_errors("init_checkpoint", "vocab_file"):
        finetuning.check_vocab_size(config, tokenizer.vocab_size, tokenizer.vocab_file)
    with flag_errors("max_seq_length"):
        finetuning.check_seq_length(config, FLAGS.max_seq_length)
    if model.preprocessor is None:  # the run's text preprocessing, so `serve` and `predict` take raw text
        model.set_preprocessor(preprocessor)
    if FLAGS.lora_rank and FLAGS.do_train:
        model.enable_lora(FLAGS.lora_rank)
    return model


def finetuning_steps(num_train_examples):
    """(steps_per_epoch, num_train_steps, num_warmup_steps) from the batch size, epochs and warmup flags."""
    from keras_bert.tasks.finetuning import finetuning_steps as steps

    return steps(num_train_examples, FLAGS.train_batch_size, FLAGS.num_train_epochs, FLAGS.warmup_proportion,
                 FLAGS.num_warmup_steps)


def compile_task(model, strategy, metrics=None, num_train_examples=None):
    """Compiles with the task's loss (`compile`'s "auto": the model's `task_loss()` and its weights), the
    flags' optimizer scheduled over `num_train_examples` (None: not for training) and `metrics`."""
    from keras_bert.data import padding

    optimizer, num_train_steps = "sgd", None  # evaluate/predict only: never stepped
    if num_train_examples:
        _, num_train_steps, num_warmup_steps = finetuning_steps(num_train_examples)
        optimizer = build_optimizer(num_train_steps, num_warmup_steps)
    num_shapes = len(padding.batch_lengths(FLAGS.max_seq_length, pad_to_multiple_of()))
    model.compile(optimizer=optimizer, loss="auto", metrics=metrics,
                  jit_compile=jit_compile(strategy, num_train_steps, num_shapes),
                  steps_per_execution=FLAGS.steps_per_execution,
                  gradient_accumulation_steps=FLAGS.gradient_accumulation_steps)


def pad_to_multiple_of(max_seq_length=None):
    """--pad_to_multiple_of, unset resolved: `padding.default_multiple` of `max_seq_length` (default
    --max_seq_length), or 0 (every batch at full length) on TPU, whose compiled steps want static shapes."""
    from keras_bert.data import padding

    if FLAGS.pad_to_multiple_of is None and FLAGS.distribution_strategy == "tpu":
        return 0
    return padding.resolve_multiple(FLAGS.pad_to_multiple_of, max_seq_length or FLAGS.max_seq_length)


def fit_task(model, train_data, num_train_examples, checkpoint=None):
    """model.fit for --num_train_epochs over `train_data` (a finite tf.data of batches; repeated here); the
    log ends with the batch lengths the step compiled for and what they cost (`CompileLog`). With a
    `checkpoint` (a `TrainingCheckpoint`), saved at each epoch's end but the last, the epochs after its
    step (`train_data` then the run's: re-seeded by the driver). Returns the History, or None when the
    checkpoint's step already ends the training."""
    from keras_bert.data import padding
    from keras_bert.training import CompileLog, FailOnNaN, StopAtStep

    steps_per_epoch, num_train_steps, _ = finetuning_steps(num_train_examples)
    step = checkpoint.step if checkpoint is not None else 0
    if step >= num_train_steps:
        return None
    logger.info("fine-tuning: %d examples, %d steps (%d per epoch)", num_train_examples, num_train_steps,
                steps_per_epoch)
    compiles = CompileLog(len(padding.batch_lengths(FLAGS.max_seq_length, pad_to_multiple_of())))
    callbacks = [FailOnNaN(), StopAtStep(num_train_steps), compiles]
    epochs = -(-num_train_steps // steps_per_epoch)
    if checkpoint is not None:
        # Not after the last epoch: the run saves its model next and then discards the checkpoint (MiniLM's
        # weights and Adam slots: 1.4 s); a run killed before its model is written resumes one epoch back.
        callbacks.append(keras.callbacks.LambdaCallback(
            on_epoch_end=lambda epoch, _: checkpoint.save() if epoch + 1 < epochs else None))
    return model.fit(compiles.watch(train_data.repeat()), epochs=epochs,
                     initial_epoch=step // steps_per_epoch, steps_per_epoch=steps_per_epoch,
                     callbacks=callbacks, verbose=2)


def save_task_model(model, strategy, labels=None, preprocessor=None):
    """Writes the fine-tuned model to <output_dir>/model.keras (and its label list to labels.json) on the
    chief; returns the path. The model carries `labels` and `preprocessor` (the run's: its tokenizer and
    --max_seq_length), so the .keras alone predicts on raw text and exports."""
    from keras_bert.checkpoints import save_without_optimizer
    from keras_bert.tasks.labels import write_labels

    if preprocessor is not None:
        model.set_preprocessor(preprocessor)
    if labels is not None:
        model.labels = [str(label) for label in labels]
    path = os.path.join(FLAGS.model_dir, "model.keras")
    if distribute.is_chief(strategy):
        save_without_optimizer(model, path)
        if labels is not None:
            write_labels(FLAGS.model_dir, labels)
    return path


def write_eval_results(results, strategy):
    """Writes <output_dir>/eval_results.json and prints the values."""
    write_json(os.path.join(FLAGS.model_dir, "eval_results.json"), results, strategy)
    print("Eval results: " + ", ".join(f"{k} = {_plain(v):.4f}" if isinstance(_plain(v), float)
                                       else f"{k} = {v}" for k, v in sorted(results.items())))


# What a fine-tuning run's result depends on beside its data, vocab and --init_checkpoint (`input_identity`)
# and its architecture (the checkpoints' bert_config.json): a resume with other values is refused.
TRAINING_FLAGS = ("max_seq_length", "train_batch_size", "num_train_epochs", "learning_rate",
                  "warmup_proportion", "num_warmup_steps", "optimizer", "weight_decay", "clip_global_norm",
                  "gradient_accumulation_steps", "seed", "pad_to_multiple_of", "head", "lora_rank", "dtype")


@dataclasses.dataclass
class FlagRun(Run):
    """A `keras_bert.tasks.driver.Run` of the flags (`from_flags`), its hooks: `build_task_model`,
    `compile_task`, `fit_task` (checkpointed in <output_dir>/checkpoints when training, resumed by
    `restore`), `save_task_model`, `write_eval_results`; a stage's errors noted with the flags of
    `stage_flags` ({stage: flag names}, as `flag_errors`)."""

    stage_flags: dict = dataclasses.field(default_factory=dict)

    @classmethod
    def from_flags(cls, strategy, tokenizer, stage_flags=None):
        """The run the flags say, its one `BertPreprocessor` of `tokenizer` and --max_seq_length (for the
        data, `serve` and the saved model)."""
        from keras_bert.text import BertPreprocessor

        return cls(strategy, BertPreprocessor(tokenizer, FLAGS.max_seq_length), FLAGS.model_dir,
                   train=FLAGS.do_train, evaluate=FLAGS.do_eval, predict=FLAGS.do_predict,
                   train_batch_size=FLAGS.train_batch_size, eval_batch_size=FLAGS.eval_batch_size,
                   seed=FLAGS.seed, pad_to_multiple_of=pad_to_multiple_of(),
                   checkpoint_dir=os.path.join(FLAGS.model_dir, "checkpoints") if FLAGS.do_train else None,
                   stage_flags=stage_flags or {})

    def errors(self, stage):
        names = self.stage_flags.get(stage)
        return flag_errors(*names) if names else contextlib.nullcontext()

    def build_model(self, model_class, head_args):
        return build_task_model(self.preprocessor, model_class, head_args)

    def compile(self, model, metrics, num_train_examples):
        compile_task(model, self.strategy, metrics, num_train_examples)

    def identity(self):
        """`input_identity`, the TRAINING_FLAGS and the flags the training features are made with (those of
        `stage_flags["train"]`; a file's content is the driver's "training data")."""
        names = [*TRAINING_FLAGS, *(name for name in self.stage_flags.get("train", ())
                                    if not name.endswith("_file") and name not in TRAINING_FLAGS)]
        return {**input_identity(self.preprocessor.tokenizer),
                **{f"--{name}": FLAGS[name].value for name in names if name in FLAGS}}

    def restore(self, checkpoint):
        return restore(checkpoint)

    def fit(self, model, batches, num_examples, checkpoint=None):
        fit_task(model, batches, num_examples, checkpoint)

    def save(self, model, labels):
        save_task_model(model, self.strategy, labels, self.preprocessor)

    def write_results(self, results):
        write_eval_results(results, self.strategy)


def finetune(task, stage_flags=None):
    """Fine-tunes, scores and predicts `task` (a `keras_bert.tasks.base.Task`, or a function making one,
    called once the run is set up) as the flags say, through the one driver
    (`keras_bert.tasks.driver.finetune`); `stage_flags` ({stage: flag names}) notes the flags a stage's errors
    came from. Returns (model, results)."""
    from keras_bert.tasks import driver
    from keras_bert.tasks.base import Task

    strategy = setup(unfinished=FLAGS.do_train)  # a killed training resumes from its checkpoints
    tokenizer = finetuning_tokenizer()  # first: --max_seq_length becomes the checkpoint's when not given
    task = task if isinstance(task, Task) else task()
    return driver.finetune(task, FlagRun.from_flags(strategy, tokenizer, stage_flags))
