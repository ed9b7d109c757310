"""One definition per flag concept for every script (recipes/*.py, export/*.py), checked when absl parses.

    from recipes import flags as shared_flags
    shared_flags.define("vocab_file", "do_lower_case", max_seq_length=384)  # keyword: the script's default

Each concept has one type, one help text and one set of checks (ranges, files that must exist, files that
must not be directories); the checks are absl validators, so a bad value stops the script when its command
line is parsed, before any work, with one line `error: <what is wrong> (given as --flag=value)` (`parse`,
the flags parser of `logs.run`). Checks over several flags (`check_together`, e.g. `define_data_files`)
run there too.
"""

import dataclasses
import glob
import math
import os
import sys
from collections.abc import Callable

from absl import flags

from keras_bert.training.defaults import FINETUNING, PRETRAINING

FLAGS = flags.FLAGS
_PROBLEMS = []  # the messages of the checks that failed during this parse, in the order they ran
_TYPED = {}  # flag name -> `--name=value` as the command line being parsed spells it


@dataclasses.dataclass(frozen=True)
class Concept:
    """One flag: its absl type ("string", "integer", "float", "bool", "enum", "list", "multi_string"),
    default, help text, and `checks`, functions of the value returning what is wrong with it (a phrase) or
    None."""

    kind: str
    default: object
    help: str
    checks: tuple = ()
    choices: tuple | Callable = ()  # an enum's; a function returning them where they come from keras_bert


def at_least(low):
    return lambda value: None if value is None or value >= low else f"must be at least {low}"


def above(low):
    return lambda value: None if value is None or value > low else f"must be greater than {low}"


def finite(value):
    """A number that is not inf or nan (checked first on every float concept: `--num_train_epochs=inf` would
    pass `above(0)` and overflow when the steps are counted; nan passes no range and says so poorly)."""
    return None if value is None or math.isfinite(value) else "must be a finite number"


def within(low, high):
    return lambda value: None if value is None or low <= value <= high else f"must be in [{low}, {high}]"


def _local(path):
    return "://" not in path  # gs://, hdfs://: read by tf.io.gfile, not checked here


def existing_file(value):
    """A file that must exist (not a directory)."""
    if not value or not _local(value):
        return None
    if os.path.isdir(value):
        return "is a directory; expected a file"
    return None if os.path.isfile(value) else "no such file"


def existing_dir(value):
    if not value or not _local(value):
        return None
    if os.path.isfile(value):
        return "is a file; expected a directory"
    return None if os.path.isdir(value) else "no such directory"


def existing_path(value):
    """A file or directory, a TF1 checkpoint prefix (`bert_model.ckpt` of `bert_model.ckpt.index`), or a hub
    checkpoint name (`resolve_names` turns it into its local directory)."""
    if not value or not _local(value) or os.path.exists(value) or glob.glob(glob.escape(value) + ".*"):
        return None
    return None if _is_name(value) else "no such file or directory"


def _is_name(value):
    from keras_bert.checkpoints.names import is_checkpoint_name

    return is_checkpoint_name(value)


CHECKPOINT_FLAGS = ("init_checkpoint", "model_path", "teacher")  # paths that may be hub names


def resolve_names():
    """Replaces a hub name given as --init_checkpoint / --model_path by its local directory (from the hub's
    cache or downloaded: `keras_bert.checkpoints.names.local_checkpoint`), so every later reader of the
    flag sees a path. Raises ValueError `<why> (given as --flag=value)` when it cannot be had."""
    for name in CHECKPOINT_FLAGS:
        value = FLAGS[name].value if name in FLAGS else None
        if value and _local(value) and _is_name(value):
            from keras_bert.checkpoints.names import local_checkpoint

            try:
                FLAGS[name].value = local_checkpoint(value)
            except ValueError as e:
                raise ValueError(f"{e} (given as {given(name)})") from None


def matching_files(value):
    """Comma-separated files or globs (a str or absl list), each naming at least one file."""
    patterns = value.split(",") if isinstance(value, str) else (value or [])
    for pattern in (p.strip() for p in patterns if p.strip()):
        if _local(pattern) and not [p for p in glob.glob(pattern) if os.path.isfile(p)]:
            return f"{pattern!r} names no file" if os.path.isdir(pattern) else f"no file matches {pattern!r}"
    return None


def output_file(value):
    """Comma-separated output file names: none may be an existing directory."""
    for path in (p.strip() for p in (value or "").split(",") if p.strip()):
        if os.path.isdir(path):
            return f"{path!r} is a directory; expected a file name"
    return None


def one_of(choices):
    listed = ", ".join(choices)
    return lambda value: None if value is None or value in choices else f"expected one of {listed}"


def one_value(values):
    """A multi_string flag given once (a script that takes one of what other scripts take several)."""
    return None if not values or len(values) == 1 else f"given {len(values)} times; expected one"


def _presets():
    from keras_bert.config import PRESETS

    return sorted(PRESETS)


def writable_dir(value):
    """An output directory (or a list of them): not a file, and itself, or its nearest existing parent,
    writable here."""
    for path in [value] if isinstance(value, str) else value or ():
        if os.path.isfile(path):
            return "is a file, not a directory"
        existing = os.path.abspath(path)
        while not os.path.exists(existing):
            existing = os.path.dirname(existing)
        if not os.access(existing, os.W_OK):
            return f"{existing} is not writable (read-only, or not yours)"
    return None


def not_an_input(output, *inputs):
    """A `check_together` problem: the output of --`output` is, holds or lies inside a local path of one of
    --`inputs` (`keras_bert.outputs.check_inputs`: writing there would replace it)."""
    from keras_bert import outputs
    from keras_bert.errors import UserInputError

    def problem(values):
        sources = {f"--{name}={values[name]}": values[name] for name in inputs
                   if values[name] and os.path.exists(values[name])}
        written = values[output]
        for path in [written] if isinstance(written, str) else written or ():
            try:
                outputs.check_inputs(path, sources, f"--{output}={path}", output)
            except UserInputError as e:
                return str(e)
        return None

    return problem


def quantize_here(value):
    """--quantize: a form this CPU exports (`serving_form.resolve_quantize`: int8_matmul needs VNNI)."""
    from keras_bert.export.serving_form import resolve_quantize

    try:
        resolve_quantize(value, log=False)
    except ValueError as e:
        return str(e)
    return None


POSITIVE = (at_least(1),)
NON_NEGATIVE = (at_least(0),)

CONCEPTS = {
    # Model, vocabulary and text.
    "bert_config_file": Concept("string", None, "bert_config.json of the architecture (Google or HF format).",
                                (existing_file,)),
    "init_checkpoint": Concept("string", None, "Initial weights: Google TF1 checkpoint, Hugging Face "
                               "directory, KerasHub preset, a keras_bert save (.keras or directory), or a "
                               "hub name (bert-base-uncased, org/name, hf://org/name@rev, "
                               "bert_base_en_uncased, kaggle://...).", (existing_path,)),
    "model_path": Concept("string", None, "A .keras model file, or a checkpoint directory or hub "
                          "name (its encoder).",
                          (existing_path,)),
    "vocab_file": Concept("string", None, "WordPiece vocab.txt; default: the model's own, else the vocab.txt "
                          "beside the checkpoint, else the default corpus's learned vocab.",
                          (existing_file,)),
    "do_lower_case": Concept("bool", None, "Lower-case and strip accents (uncased models); default: the "
                             "casing the checkpoint states, else true."),
    "max_seq_length": Concept("integer", FINETUNING.max_seq_length, "Packed sequence length in pieces, "
                              "[CLS] and [SEP] included.", (at_least(3),)),
    "preset": Concept("enum", "tiny", "Architecture when neither --bert_config_file nor --init_checkpoint is "
                      "given; vocab_size comes from the vocab file.", choices=_presets),
    "dtype": Concept("enum", "float32", "The Keras dtype policy the model is built under: mixed_bfloat16 / "
                     "mixed_float16 compute in 16 bits with float32 weights, bfloat16 keeps the weights in "
                     "bf16 too; LayerNorm, softmax, losses and heads stay float32.",
                     choices=("float32", "mixed_bfloat16", "mixed_float16")),
    # Optimization and schedule.
    # (Defaults: the library's, keras_bert/training/defaults.py; pre-training passes its own.)
    "train_batch_size": Concept("integer", FINETUNING.batch_size, "Global batch size (all replicas "
                                "together).", POSITIVE),
    "eval_batch_size": Concept("integer", FINETUNING.batch_size, "Global batch size of evaluation and "
                               "prediction.", POSITIVE),
    "learning_rate": Concept("float", FINETUNING.learning_rate, "Peak learning rate.", (above(0),)),
    "num_warmup_steps": Concept("integer", FINETUNING.num_warmup_steps, "Linear warmup steps.", NON_NEGATIVE),
    "warmup_proportion": Concept("float", FINETUNING.warmup_proportion, "Fraction of the train steps with "
                                 "linear warmup (used when --num_warmup_steps is 0).", (within(0, 1),)),
    "num_train_epochs": Concept("float", FINETUNING.num_train_epochs, "Passes over the training data "
                                "(fractions allowed).", (above(0),)),
    "num_train_steps": Concept("integer", PRETRAINING.num_train_steps, "Total optimizer steps.", POSITIVE),
    "weight_decay": Concept("float", FINETUNING.weight_decay, "Decoupled weight decay (not on LayerNorm and "
                            "biases).", NON_NEGATIVE),
    "clip_global_norm": Concept("float", FINETUNING.clip_global_norm, "Clip the (all-replica) gradient to "
                                "this global norm; 0: off.", NON_NEGATIVE),
    "gradient_accumulation_steps": Concept(
        "integer", 1, "Compute each step's --train_batch_size batch in this many sequential micro-batches "
        "(less memory, same step: gradients summed exactly).", POSITIVE),
    "steps_per_execution": Concept("integer", 1, "Train steps per call into the compiled function.",
                                   POSITIVE),
    "pad_to_multiple_of": Concept(
        "integer", None, "Cut each batch's padding to its longest sequence rounded up to this multiple; "
        "unset: 16, or for --max_seq_length over 128 the multiple of 16 giving at most 8 batch lengths "
        "(384: 48, 512: 64), except on TPU and in pre-training (there unset is 0); 0: pad every batch to "
        "--max_seq_length (static shapes). Training "
        "batches group sequences of similar length (fine-tuning: sorted within windows of 16 shuffled "
        "batches). Each batch length compiles its own XLA step; the log says which ran and what they cost.",
        NON_NEGATIVE),
    "lora_rank": Concept("integer", 0, "LoRA: freeze the encoder and train rank-R updates of its projections "
                         "(plus the task head); the saved model has them merged. 0: full fine-tuning.",
                         NON_NEGATIVE),
    "head": Concept("enum", "checkpoint", "The task head: checkpoint (the trained head of this task that "
                    "--init_checkpoint holds, when it has one; a head of other classes or label names is "
                    "refused) or fresh (a fresh head on the checkpoint's encoder).",
                    choices=("checkpoint", "fresh")),
    "seed": Concept("integer", 42, "Seed for weights init, dropout and data order."),
    "worker_wait_s": Concept("float", 600, "multi_worker_mirrored: seconds to wait for every TF_CONFIG "
                             "worker to start before giving up with an error.", (above(0),)),
    "save_checkpoints_steps": Concept("integer", 200, "Checkpoint (and progress-bar epoch) every this many "
                                      "steps; a killed run resumes from the last.", POSITIVE),
    # Distillation.
    "teacher": Concept("string", None, "The fine-tuned task model to distil: a .keras of run_classifier (or "
                       "of another task model), or a checkpoint holding a trained task head (a Hugging Face "
                       "BertFor*, a KerasHub task preset) or its hub name.", (existing_path,)),
    "student_layers": Concept("integer", None, "Student: the teacher with this many of its layers, "
                              "spread over its depth (first and last kept), the rest of the model copied.",
                              POSITIVE),
    "student_preset": Concept("enum", None, "Student: a fresh encoder of this architecture (the teacher's "
                              "vocab).", choices=("tiny", "mini", "small", "medium", "base", "large")),
    "student_config": Concept("string", None, "Student: a fresh encoder of this bert_config.json (the "
                              "teacher's vocab_size).", (existing_file,)),
    "temperature": Concept("float", 2.0, "Softmax temperature of the distilled outputs.", (above(0),)),
    "alpha": Concept("float", 0.2, "Weight of the gold-label task loss; 1 - alpha weighs the distillation "
                     "terms.", (within(0, 1),)),
    "hidden_weight": Concept("float", 0.0, "Weight of the hidden-state term (student layers vs the teacher "
                             "layers they stand for) beside the output term's 1; 0: off.", NON_NEGATIVE),
    "unlabeled_file": Concept("string", None, "Text the teacher labels for the student: one example a line "
                              "(a pair task: text_a<TAB>text_b).", (existing_file,)),
    "cache_teacher": Concept("bool", False, "Compute the teacher's outputs over the training data once, into "
                             "<output_dir>/teacher_cache.tfrecord (reused by a resumed run, rewritten when "
                             "written for another teacher or other data); the steps do not run the teacher."),
    "augment": Concept("integer", 2, "New texts per training and unlabelled text for the teacher to label "
                       "(words masked / swapped, n-gram spans: distillation.augment_texts); 0: off.",
                       NON_NEGATIVE),
    # Pre-training data.
    "max_predictions_per_seq": Concept("integer", 20, "Masked positions per sequence.", POSITIVE),
    "masked_lm_prob": Concept("float", 0.15, "Fraction of tokens masked.", (within(0, 1),)),
    "short_seq_prob": Concept("float", 0.1, "Probability of a shorter target length.", (within(0, 1),)),
    "do_whole_word_mask": Concept("bool", False, "Mask all the WordPieces of a word together."),
    # Corpora and data sets.
    "input_file": Concept("string", None, "Comma-separated input text files or globs.", (matching_files,)),
    "input_files": Concept("list", None, "Comma-separated text files or globs, one example per line.",
                           (matching_files,)),
    "task_name": Concept("string", None, "A GLUE task (CoLA, SST-2, MRPC, STS-B, QQP, MNLI, QNLI, RTE, WNLI) "
                         "read from --data_dir, or 'custom' (the default) for --train_file/--eval_file/"
                         "--predict_file."),
    "data_dir": Concept("string", None, "GLUE task directory (train.tsv, dev.tsv, test.tsv, ...).",
                        (existing_dir,)),
    "tfds_name": Concept("string", None, "A prepared TFDS dataset (never downloaded), e.g. glue/sst2 or "
                         "wikipedia/20230601.en."),
    "tfds_data_dir": Concept("string", None, "TFDS data_dir holding --tfds_name.", (existing_dir,)),
    # Corpora (vocab learning).
    "vocab_size": Concept("integer", 30522, "Number of tokens in the learned vocab (reserved tokens "
                          "included).", (at_least(6),)),  # the 5 reserved tokens and one more
    "max_lines": Concept("integer", None, "Read at most this many lines (default: all).", POSITIVE),
    "min_frequency": Concept("integer", 2, "A learned piece must occur at least this many times.", POSITIVE),
    # Outputs.
    "output_dir": Concept("string", None, "The directory to write."),
    "output_file": Concept("string", None, "The file to write.", (output_file,)),
    "overwrite": Concept("bool", False, "Replace an existing output (a file, or a non-empty directory that "
                         "holds no resumable run of this recipe) whole; without it such an output is "
                         "refused."),
    # Exports and the served models' inputs.
    "export_dir": Concept("multi_string", None, "SavedModel directory."),
    "version": Concept("integer", None, "Model version number.", POSITIVE),
    "signature": Concept("string", "serving_default", "Signature to run."),
    "quantize": Concept("enum", None, "Post-training quantization of the written model.",
                        choices=("int8", "int8_matmul", "int8_weights", "float16")),
    "text": Concept("multi_string", [], "Raw text, the `text` input of --signature; one per example."),
    "text_b": Concept("multi_string", [], "Second segments, the `text_b` input; one per --text."),
    "input": Concept("multi_string", [], "NAME=TEXT: TEXT fed as the input NAME of --signature (one per "
                     "example; e.g. --input=question=Who? --input=context=...): any input the signature "
                     "takes, by its name."),
    # Windows over long text.
    "stride": Concept("integer", None, "Pieces between the windows of a text longer than --max_seq_length; "
                      "default: half a window.", POSITIVE),
}

_DEFINE = {"string": flags.DEFINE_string, "integer": flags.DEFINE_integer, "float": flags.DEFINE_float,
           "bool": flags.DEFINE_bool, "list": flags.DEFINE_list, "multi_string": flags.DEFINE_multi_string}
_UNSET = object()


def define(*names, **defaults):
    """Defines the concepts `names` with their shared defaults and `defaults` (name=this script's default)."""
    for name in names:
        define_one(name)
    for name, default in defaults.items():
        define_one(name, default)


def define_one(name, default=_UNSET, help=None, choices=None, alias_of=None):  # noqa: A002  (absl's word)
    """Defines concept `name` (`default`: this script's); `help` replaces its text where the script resolves
    the default its own way; `choices` narrows an enum's to those this script takes; `alias_of`: the flag
    is another name of that one (as --output_dir of --model_dir in the fine-tuning recipes)."""
    concept = CONCEPTS[name]
    default = concept.default if default is _UNSET else default
    text = help or concept.help
    if alias_of:
        flags.DEFINE_alias(name, alias_of, module_name=_script())
        return
    if concept.kind == "enum":
        listed = choices or (concept.choices() if callable(concept.choices) else concept.choices)
        flags.DEFINE_enum(name, default, list(listed), text, module_name=_script())
    else:
        _DEFINE[concept.kind](name, default, text, module_name=_script())
    check(name, *((finite,) if concept.kind == "float" else ()), *concept.checks)


def _script():
    return sys.argv[0]  # the module absl's --help lists a running script's own flags under


def check(name, *problems):
    """Registers `problems` (functions of --`name`'s value returning what is wrong, or None) as validators."""
    for problem in problems:
        flags.register_validator(name, _checker(problem, [name]))


def check_together(names, problem, shown=None):
    """Registers `problem` ({name: value} -> what is wrong, or None) over the flags `names`; its error shows
    the flags `shown` (default: all of `names`)."""
    flags.register_multi_flags_validator(names, _checker(problem, shown or names))


def glue_data_problem(values):
    """A `check_together` problem over --task_name, --data_dir (and --tfds_name where a script has it): a GLUE
    task needs its data directory."""
    task = values["task_name"]
    if task and task.lower() != "custom" and not values["data_dir"] and not values.get("tfds_name"):
        return f"--task_name={task} needs --data_dir (the GLUE task's directory)"
    return None


def _checker(problem, names, show_value=True):
    def checker(value):
        wrong = problem(value)
        if wrong:
            message = wrong if isinstance(value, dict) else f"--{names[0]}: {wrong}"
            _PROBLEMS.append(f"{message} (given as {given(*names)})" if show_value else message)
            raise flags.ValidationError(_PROBLEMS[-1])
        return True

    return checker


def given(*names):
    """`--a=1, --b=x` for the flags `names`: as typed on the command line being parsed, else as they are now
    (a bool as `--flag` / `--noflag`)."""
    return ", ".join(_TYPED.get(name) or FLAGS[name].serialize() or f"--{name}=" for name in names)


def _typed(argv):
    """{flag name: `--name=value` as the last `--name=value` of `argv` spells it}."""
    typed = {}
    for arg in argv[1:]:
        if arg == "--":
            break
        if arg.startswith("-") and "=" in arg:
            name = arg.lstrip("-").split("=", 1)[0]
            typed[name] = f"--{name}={arg.split('=', 1)[1]}"
    return typed


def required(*names):
    """Each of `names` must be given."""
    for name in names:
        flags.register_validator(name, _checker(lambda value: None if value not in (None, "", []) else
                                                "is required", [name], show_value=False))


def define_data_files(help_by_flag, eval_file="eval_file", optional=False):
    """--train_file, --`eval_file` and --predict_file (files that exist; help texts `help_by_flag`), each
    needed by its --do_train / --do_eval / --do_predict (SQuAD scores its --predict_file:
    `eval_file="predict_file"`); `optional`: only when one of them is given (other data flags exist)."""
    files = list(dict.fromkeys(("train_file", eval_file, "predict_file")))
    for name in files:
        flags.DEFINE_string(name, None, help_by_flag[name], module_name=_script())
        check(name, existing_file)
    for step, name in (("train", "train_file"), ("eval", eval_file), ("predict", "predict_file")):
        check_together([f"do_{step}", *files], _needs(step, name, files, optional), shown=[f"do_{step}"])


def _needs(step, name, files, optional):
    def problem(values):
        wanted = values[f"do_{step}"] and (not optional or any(values[f] for f in files))
        return f"--do_{step} needs --{name}" if wanted and not values[name] else None

    return problem


SERVED_INPUTS = ("text", "text_b", "input")


def define_served_inputs():
    """--text, --text_b and --input=NAME=TEXT: a served model's inputs by the names its signature gives them
    (`served_inputs`); each NAME=TEXT, one value of each input per example, checked when parsed."""
    define(*SERVED_INPUTS)
    check("input", _named)
    check_together(list(SERVED_INPUTS), _one_per_example)


def served_inputs():
    """{input name: [str]} of --text, --text_b and --input (`define_served_inputs`), in the order given."""
    inputs = {name: list(FLAGS[name].value) for name in SERVED_INPUTS[:2] if FLAGS[name].value}
    for value in FLAGS.input:
        name, _, text = value.partition("=")
        inputs.setdefault(name, []).append(text)
    return inputs


def _named(values):
    bad = next((value for value in values or () if not value.partition("=")[0] or "=" not in value), None)
    return None if bad is None else f"{bad!r} is not NAME=TEXT (NAME an input of the signature)"


def _one_per_example(values):
    counts = {name: len(values[name]) for name in SERVED_INPUTS[:2] if values[name]}
    for value in values["input"] or ():
        name = value.partition("=")[0]
        counts[name] = counts.get(name, 0) + 1
    if len(set(counts.values())) <= 1:
        return None
    return "one value of each input per example; got " + ", ".join(f"{n} x{c}" for n, c in counts.items())


def define_fields(cls):
    """One flag per field of the dataclass `cls` (e.g. a task's rules), with the field's default and the help
    of its metadata (`keras_bert.models.options.option`); integers must be positive."""
    kinds = {int: "integer", bool: "bool", float: "float"}
    for field in dataclasses.fields(cls):
        kind = kinds[field.type]
        _DEFINE[kind](field.name, field.default, field.metadata["help"], module_name=_script())
        if kind == "integer":
            check(field.name, at_least(1))


def fields_value(cls):
    """The `cls` instance of the flags `define_fields(cls)` defined."""
    return cls(**{field.name: FLAGS[field.name].value for field in dataclasses.fields(cls)})


def define_options(classes):
    """The flags of every field of the serving Options dataclasses `classes`, one per field name (the help of
    its first declaration): an enum where the field states `choices`, a nested dataclass's fields
    (`define_fields`) where it states `fields`. `given_options` reads them back."""
    kinds = {bool: "bool", int: "integer", float: "float", str: "string"}
    defined = set()
    for cls in classes:
        for field in dataclasses.fields(cls):
            if field.name in defined:
                continue
            defined.add(field.name)
            meta = field.metadata
            if meta.get("fields"):
                define_fields(meta["fields"])
            elif meta.get("choices"):
                flags.DEFINE_enum(field.name, field.default, list(meta["choices"]), meta["help"],
                                  module_name=_script())
            else:
                kind = next(kind for type_, kind in kinds.items() if type_ in _types(field.type))
                _DEFINE[kind](field.name, field.default, meta["help"], module_name=_script())
                if kind == "integer":
                    check(field.name, at_least(1))


def _types(annotation):
    """The types of a field annotation (`int | None` -> (int, NoneType))."""
    return getattr(annotation, "__args__", (annotation,))


def given_options(classes, values=None):
    """{field name: value} of the option flags `define_options(classes)` defined that the command line gave
    (a nested dataclass: its instance, when any of its flags was given), and `values` ({name: value}: a
    script's own resolution of a flag, e.g. a default read off the model) over them."""
    given = {}
    for cls in classes:
        for field in dataclasses.fields(cls):
            nested = field.metadata.get("fields")
            if nested and any(FLAGS[f.name].present for f in dataclasses.fields(nested)):
                given[field.name] = fields_value(nested)
            elif not nested and FLAGS[field.name].present:
                given[field.name] = FLAGS[field.name].value
    given.update({name: value for name, value in (values or {}).items() if value is not None})
    return given


HELP_FLAGS = {"-?", "-h", "--help", "--helpshort", "--helpfull", "--helpxml"}


def parse(argv):
    """absl's flags parser for `logs.run`: parses `argv` and runs every check; a bad flag prints one line
    `error: ... (given as --flag=value)` to stderr and exits with status 1, before the script does
    anything."""
    del _PROBLEMS[:]
    _TYPED.clear()
    _TYPED.update(_typed(argv))
    for flag in FLAGS.flags_by_module_dict().get("recipes.common", []):
        FLAGS.register_key_flag_for_module(_script(), flag)  # --help lists what every run takes too
    try:
        remaining = FLAGS(argv)
        resolve_names()
        return remaining
    except SystemExit as e:  # absl's --help / --helpfull print, then exit with 1
        if e.code == 1 and set(argv[1:]) & HELP_FLAGS:
            sys.exit(0)
        raise
    except flags.Error as e:
        print(f"error: {parse_error_message(e)}", file=sys.stderr, flush=True)
        sys.exit(1)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr, flush=True)
        sys.exit(1)


def parse_error_message(error):
    """The one-line message of absl's parse error `error`: a check's own message, else absl's reworded."""
    if _PROBLEMS:
        return _PROBLEMS[0]
    message = str(error).splitlines()[0]
    if message.startswith("flag --") and ": " in message:  # "flag --x=abc: invalid literal for int() ..."
        setting, reason = message.removeprefix("flag ").split(": ", 1)
        return f"{setting.split('=', 1)[0]}: {reason} (given as {setting})"
    return message
