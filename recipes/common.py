"""Plumbing shared by every recipe: flags, strategy, dtype policy, seeds, model building, optimizer,
results files. A recipe calls `define_flags(...)` at import, then in `main`: `strategy = setup()`, ...

Nothing here is specific to a task; task recipes add their own flags next to these.
"""

import contextlib
import json
import logging
import os

import keras
import tensorflow as tf
from absl import flags

from keras_bert import compat
from keras_bert.config import PRESETS, BertConfig
from keras_bert.errors import UserInputError
from keras_bert.training import distribute, optimization, tf_config
from recipes import logs

FLAGS = flags.FLAGS
logger = logging.getLogger("keras_bert")


def define_flags(model_dir="runs/model", learning_rate=1e-4, train_batch_size=32, max_seq_length=128,
                 num_warmup_steps=0, optimizer="adamw", weight_decay=0.01, preset="tiny"):
    """Defines the flags every recipe shares; the arguments are this recipe's defaults."""
    # Model and vocabulary.
    flags.DEFINE_string("bert_config_file", None, "bert_config.json of the architecture (Google or HF format).")
    flags.DEFINE_enum("preset", preset, sorted(PRESETS), "Architecture when neither --bert_config_file nor "
                      "--init_checkpoint is given; vocab_size comes from the vocab file.")
    flags.DEFINE_string("init_checkpoint", None, "Initial weights: Google TF1 checkpoint, Hugging Face "
                        "directory, or a keras_bert save (.keras or directory).")
    flags.DEFINE_string("vocab_file", None, "WordPiece vocab.txt; default: the one beside --init_checkpoint, "
                        "else a vocab learned on the default corpus.")
    flags.DEFINE_bool("do_lower_case", True, "Lower-case and strip accents (uncased models).")
    flags.DEFINE_integer("max_seq_length", max_seq_length, "Packed sequence length (tokens).")
    # Optimization.
    flags.DEFINE_integer("train_batch_size", train_batch_size, "Global batch size (all replicas together).")
    flags.DEFINE_float("learning_rate", learning_rate, "Peak learning rate.")
    flags.DEFINE_integer("num_warmup_steps", num_warmup_steps, "Linear warmup steps.")
    flags.DEFINE_enum("optimizer", optimizer, ["adamw", "lamb"], "Optimizer.")
    flags.DEFINE_float("weight_decay", weight_decay, "Decoupled weight decay (not on LayerNorm and biases).")
    flags.DEFINE_float("clip_global_norm", 1.0, "Clip the (all-replica) gradient to this global norm; 0: off.")
    flags.DEFINE_integer("gradient_accumulation_steps", 1, "Compute each step's --train_batch_size batch in this "
                         "many sequential micro-batches (less memory, same step: gradients summed exactly).",
                         lower_bound=1)
    # Execution.
    flags.DEFINE_string("model_dir", model_dir, "Output directory: checkpoints, logs, results, final model.")
    define_overwrite_flag()
    flags.DEFINE_enum("distribution_strategy", "one_device", list(distribute.STRATEGIES),
                      "tf.distribute strategy; multi_worker_mirrored reads TF_CONFIG.")
    flags.DEFINE_string("tpu", None, "TPU name/address for --distribution_strategy=tpu.")
    flags.DEFINE_float("worker_wait_s", 600, "multi_worker_mirrored: seconds to wait for every TF_CONFIG worker "
                       "to start before giving up with an error.")
    flags.DEFINE_enum("dtype", "float32", ["float32", "mixed_bfloat16", "mixed_float16"],
                      "Keras dtype policy (LayerNorm, softmax and losses stay float32).")
    flags.DEFINE_bool("jit_compile", None, "XLA-compile the whole train step (true) or run TF's kernels (false); "
                      "unset: the library's choice for --dtype on this machine (XLA, except bf16 on a CPU with bf16 "
                      "hardware: oneDNN matmuls with XLA fusing the ops between them, keras_bert/execution.py).")
    flags.DEFINE_bool("remat", False, "Recompute the feed-forward GELU in the backward pass instead of keeping it "
                      "(Keras RematScope 'activations'): less peak memory (measured: 3682 -> 3324 MB peak RSS, 4-layer BERT-base width, batch 32, seq 128).")
    flags.DEFINE_integer("seed", 42, "Seed for weights init, dropout and data order.")
    flags.DEFINE_integer("steps_per_execution", 1, "Train steps per call into the compiled function.")
    flags.DEFINE_integer("pad_to_multiple_of", 0, "Cut each batch's padding to its longest sequence rounded up "
                         "to this multiple (0: pad to --max_seq_length). Pre-training also batches sequences of "
                         "similar length together; fine-tuning trims training batches (classifier and multiple "
                         "choice: evaluation too). Each batch length compiles its own XLA step.", lower_bound=0)


def setup():
    """Seeds, dtype policy, output directory and the strategy from the shared flags. Returns the strategy."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    keras.utils.set_random_seed(FLAGS.seed)
    keras.mixed_precision.set_global_policy(FLAGS.dtype)
    claim_output_dir("output_dir" if "output_dir" in FLAGS else "model_dir", ["init_checkpoint"])
    compat.fix_keras_multi_worker()
    with flag_errors("distribution_strategy", "worker_wait_s"):
        return distribute.get_strategy(FLAGS.distribution_strategy, FLAGS.tpu, FLAGS.worker_wait_s)


RUN_MARKER = ".keras_bert_run"  # in an output directory: the recipe writing there
RESUMING_RECIPES = ("pretrain",)  # a rerun continues from the run's checkpoints


def define_overwrite_flag():
    flags.DEFINE_bool("overwrite", False, "Write into a non-empty output directory that holds no resumable run of "
                      "this recipe, replacing its files (without it such a directory is refused).")


def claim_output_dir(flag, input_flags=()):
    """The output-directory rules of every recipe, for the directory of --`flag`: refused when it is, or
    contains, the path of one of `input_flags` (writing would destroy the input); refused when not empty
    (the marker aside), unless it holds a run of this recipe that resumes (`RESUMING_RECIPES`: one it marked,
    or an unmarked one with checkpoints/, from before the marker) or --overwrite is given. Creates it and
    marks it as this recipe's; if the run then fails before writing anything else there, the directory is
    left as it was."""
    path, recipe = FLAGS[flag].value, logs.recipe_name()
    for name in input_flags:
        source = FLAGS[name].value
        if source and _within(source, path):
            raise UserInputError(f"--{flag}={path} is or contains the input --{name}={source}: writing there "
                                 f"would replace it; choose another --{flag}")
    if os.path.exists(path) and not os.path.isdir(path):
        raise UserInputError(f"--{flag}={path} is a file, not a directory")
    if not tf_config.writes_files(FLAGS.get_flag_value("distribution_strategy", None)):
        return os.makedirs(path, exist_ok=True)  # a multi-worker run: the chief claims it
    entries = sorted(e for e in os.listdir(path) if e != RUN_MARKER) if os.path.isdir(path) else []
    owner = _marker(path)
    resumable = recipe in RESUMING_RECIPES and (
        owner == recipe or (owner is None and os.path.exists(os.path.join(path, "checkpoints", "checkpoint"))))
    if entries and not resumable and not FLAGS.overwrite:
        raise UserInputError(f"--{flag}={path} is not empty ({', '.join(entries[:3])}{', ...' * (len(entries) > 3)})"
                             f" and holds no run of {recipe} to resume: pass --overwrite to replace its files, "
                             f"or choose another --{flag}")
    created = not os.path.exists(path)
    os.makedirs(path, exist_ok=True)
    if owner != recipe:
        with open(os.path.join(path, RUN_MARKER), "w", encoding="utf-8") as f:
            f.write(recipe + "\n")
    if not entries and owner is None:
        logs.AFTER_MAIN.append(lambda succeeded: succeeded or _unclaim(path, created))


def _within(inner, outer):
    inner, outer = os.path.realpath(inner), os.path.realpath(outer)
    return os.path.commonpath([inner, outer]) == outer


def _marker(path):
    try:
        with open(os.path.join(path, RUN_MARKER), encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return None


def _unclaim(path, created):
    """After a failed run: removes the marker, the empty directories made under it (and the directory, if the
    run created it) when no other file was written there."""
    walk = list(os.walk(path, topdown=False))
    if [os.path.join(root, name) for root, _, files in walk for name in files] != [os.path.join(path, RUN_MARKER)]:
        return
    os.remove(os.path.join(path, RUN_MARKER))
    for root, _, _ in walk:
        if root != path or created:
            os.rmdir(root)


def jit_compile(strategy):
    """--jit_compile ("auto" when unset: the model's compile() chooses), except for multi_worker_mirrored on
    CPU, where XLA cannot compile the collectives."""
    if FLAGS.jit_compile is not False and isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        if not tf.config.list_logical_devices("GPU"):
            if FLAGS.jit_compile:
                logger.warning("--jit_compile is off for multi_worker_mirrored on CPU (no XLA CPU collectives)")
            return False
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
    if FLAGS.vocab_file:
        if not os.path.isfile(FLAGS.vocab_file):
            raise FileNotFoundError(f"--vocab_file={FLAGS.vocab_file}: no such file")
        return FLAGS.vocab_file
    if FLAGS.init_checkpoint:
        from keras_bert.checkpoints import find_vocab_file

        found = find_vocab_file(FLAGS.init_checkpoint)
        if found:
            return found
        raise ValueError(f"--init_checkpoint={FLAGS.init_checkpoint} has no vocab.txt beside it; pass --vocab_file")
    from keras_bert.data.default_corpus import default_vocab_file

    return default_vocab_file(lower_case=FLAGS.do_lower_case)


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
    """A BertEncoder: loaded from --init_checkpoint if given, else fresh from the config flags."""
    from keras_bert.tasks.finetuning import build_encoder

    config = None if FLAGS.init_checkpoint else bert_config(vocab_size)
    with flag_errors("init_checkpoint"):
        return build_encoder(FLAGS.init_checkpoint, config, FLAGS.dtype)


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


# ===============================================================================================================
# Fine-tuning recipes (run_classifier, run_squad, run_ner, run_multiple_choice, extract_features)
# ===============================================================================================================


def define_finetuning_flags(output_dir, learning_rate=5e-5, train_batch_size=32, max_seq_length=128):
    """The shared flags (as `define_flags`) plus those of the paper's fine-tuning scripts: --output_dir
    (alias of --model_dir), --eval_batch_size, --num_train_epochs, --warmup_proportion, --do_train/eval/predict."""
    define_flags(model_dir=output_dir, learning_rate=learning_rate, train_batch_size=train_batch_size,
                 max_seq_length=max_seq_length)
    flags.DEFINE_alias("output_dir", "model_dir")
    flags.DEFINE_integer("eval_batch_size", 32, "Batch size of evaluation and prediction.")
    flags.DEFINE_float("num_train_epochs", 3.0, "Passes over the training data (fractions allowed).")
    flags.DEFINE_float("warmup_proportion", 0.1, "Fraction of the train steps with linear warmup (used when "
                       "--num_warmup_steps is 0).")
    flags.DEFINE_bool("do_train", True, "Fine-tune on the training data.")
    flags.DEFINE_bool("do_eval", True, "Score the evaluation data; writes eval_results.json.")
    flags.DEFINE_bool("do_predict", False, "Predict the test data; writes the predictions file.")
    flags.DEFINE_integer("lora_rank", 0, "LoRA: freeze the encoder and train rank-R updates of its projections "
                         "(plus the task head); the saved model has them merged. 0: full fine-tuning.",
                         lower_bound=0)


def flag_files(flag):
    """The files that flag `flag` (comma-separated files/globs) names; errors say which flag."""
    from keras_bert.data.pretraining import expand_patterns

    try:
        return expand_patterns(FLAGS[flag].value)
    except (FileNotFoundError, ValueError) as e:
        raise type(e)(f"--{flag}={FLAGS[flag].value}: {e}") from None


def require_data_files(eval_file="eval_file"):
    """Each --do_train/--do_eval/--do_predict needs its --train_file/--<eval_file>/--predict_file (SQuAD
    scores its --predict_file: `eval_file="predict_file"`)."""
    for step, flag in (("train", "train_file"), ("eval", eval_file), ("predict", "predict_file")):
        if FLAGS[f"do_{step}"].value and not FLAGS[flag].value:
            raise ValueError(f"--do_{step} needs --{flag}")


def saved_preprocessor(model_class=None):
    """The preprocessor a `.keras` --init_checkpoint was trained with (vocab, casing, sequence length), or
    None (another format, or a model without one). Flags given beside it must agree with it: a contradicting
    --vocab_file or --do_lower_case is refused naming both values; so is --max_seq_length when the saved
    model is a `model_class` (the task continues), which then defaults to the model's."""
    from keras_bert.export.preprocessing import check_agrees
    from keras_bert.models.pretrained import saved_preprocessing
    from keras_bert.text import BertPreprocessor, BertTokenizer

    with flag_errors("init_checkpoint"):
        class_name, own = saved_preprocessing(FLAGS.init_checkpoint) if FLAGS.init_checkpoint else (None, None)
    if own is None:
        return None
    source = f"--init_checkpoint={FLAGS.init_checkpoint}"
    if FLAGS["vocab_file"].present:
        given = BertTokenizer(vocab_file(), lower_case=own.tokenizer.lower_case)
        with flag_errors("vocab_file", "init_checkpoint"):
            check_agrees(own, BertPreprocessor(given, own.seq_length))
    if FLAGS["do_lower_case"].present and FLAGS.do_lower_case != own.tokenizer.lower_case:
        raise ValueError(f"--do_lower_case={FLAGS.do_lower_case} but {source} was trained with "
                         f"lower_case={own.tokenizer.lower_case}")
    if model_class is None or class_name != model_class.__name__:
        return own
    if FLAGS["max_seq_length"].present and FLAGS.max_seq_length != own.seq_length:
        raise ValueError(f"--max_seq_length={FLAGS.max_seq_length} but {source} was trained with "
                         f"seq_length={own.seq_length}")
    FLAGS.max_seq_length = own.seq_length
    return own


def finetuning_tokenizer(model_class=None):
    """The BertTokenizer of the run: a `.keras` --init_checkpoint's own (`saved_preprocessor`; its sequence
    length too when it holds a `model_class`), else the one of --vocab_file (default: beside
    --init_checkpoint) and --do_lower_case."""
    from keras_bert.text import BertTokenizer

    own = saved_preprocessor(model_class)
    if own is not None:
        return own.tokenizer
    return BertTokenizer(vocab_file(), lower_case=FLAGS.do_lower_case)


def build_task_model(tokenizer, model_class, make_model):
    """The task model of --init_checkpoint (`keras_bert.tasks.finetuning.build_task_model`: a fine-tuned
    `model_class` continues as it is, else `make_model(encoder)`), or `make_model` on a fresh encoder of the
    config flags. Call it inside `strategy.scope()`. Checks the vocab and --max_seq_length against it."""
    from keras_bert.tasks import finetuning

    config = None if FLAGS.init_checkpoint else bert_config(tokenizer.vocab_size)
    with flag_errors("init_checkpoint"), remat_scope():
        model = finetuning.build_task_model(model_class, make_model, FLAGS.init_checkpoint, config, FLAGS.dtype)
    config = model.encoder.config
    with flag_errors("init_checkpoint", "vocab_file"):
        finetuning.check_vocab_size(config, tokenizer.vocab_size, tokenizer.vocab_file)
    with flag_errors("max_seq_length"):
        finetuning.check_seq_length(config, FLAGS.max_seq_length)
    if model.preprocessor is None:  # the run's text preprocessing, so `serve` and `predict` take raw text
        from keras_bert.text import BertPreprocessor

        model.preprocessor = BertPreprocessor(tokenizer, FLAGS.max_seq_length)
    if FLAGS.lora_rank and FLAGS.do_train:
        model.enable_lora(FLAGS.lora_rank)
    return model


def finetuning_steps(num_train_examples):
    """(steps_per_epoch, num_train_steps, num_warmup_steps) from the batch size, epochs and warmup flags."""
    from keras_bert.tasks.finetuning import finetuning_steps as steps

    return steps(num_train_examples, FLAGS.train_batch_size, FLAGS.num_train_epochs, FLAGS.warmup_proportion,
                 FLAGS.num_warmup_steps)


def compile_task(model, strategy, loss, metrics=None, num_train_examples=None, loss_weights=None):
    """Compiles with the flags' optimizer scheduled over `num_train_examples` (None: not for training)."""
    optimizer = "sgd"  # evaluate/predict only: never stepped
    if num_train_examples:
        _, num_train_steps, num_warmup_steps = finetuning_steps(num_train_examples)
        optimizer = build_optimizer(num_train_steps, num_warmup_steps)
    model.compile(optimizer=optimizer, loss=loss, loss_weights=loss_weights, metrics=metrics,
                  jit_compile=jit_compile(strategy), steps_per_execution=FLAGS.steps_per_execution,
                  gradient_accumulation_steps=FLAGS.gradient_accumulation_steps)


def without_padding(dataset, per_token_labels=False):
    """`dataset` (batches of inputs or (inputs, *labels)) cut to --pad_to_multiple_of; unchanged when 0."""
    from keras_bert.data import padding

    return padding.trim_dataset(dataset, FLAGS.pad_to_multiple_of, per_token_labels)


def fit_task(model, train_data, num_train_examples):
    """model.fit for --num_train_epochs over `train_data` (a finite tf.data of batches; repeated here)."""
    from keras_bert.training import FailOnNaN, StopAtStep

    steps_per_epoch, num_train_steps, _ = finetuning_steps(num_train_examples)
    logger.info("fine-tuning: %d examples, %d steps (%d per epoch)", num_train_examples, num_train_steps,
                steps_per_epoch)
    return model.fit(train_data.repeat(), epochs=-(-num_train_steps // steps_per_epoch),
                     steps_per_epoch=steps_per_epoch, callbacks=[FailOnNaN(), StopAtStep(num_train_steps)],
                     verbose=2)


def save_task_model(model, strategy, labels=None, tokenizer=None):
    """Writes the fine-tuned model to <output_dir>/model.keras (and its label list to labels.json) on the
    chief; returns the path. The model carries `labels` and a preprocessor of `tokenizer` and
    --max_seq_length, so the .keras alone predicts on raw text and exports."""
    from keras_bert.checkpoints import save_without_optimizer
    from keras_bert.tasks.labels import write_labels
    from keras_bert.text import BertPreprocessor

    if tokenizer is not None:
        model.preprocessor = BertPreprocessor(tokenizer, FLAGS.max_seq_length)
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
    print("Eval results: " + ", ".join(f"{k} = {_plain(v):.4f}" if isinstance(_plain(v), float) else f"{k} = {v}"
                                       for k, v in sorted(results.items())))
