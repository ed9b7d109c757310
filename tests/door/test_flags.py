"""Every script x every bad flag value it takes, refused when absl parses the command line: exit status 1,
one line `error: --flag: ... (given as --flag=value)`, in far less time than a run that starts TensorFlow
work takes, no output created and no input changed. The scripts run in this process (`run_in_process`)."""

import os
import time

import pytest

FINETUNING = ("run_classifier", "run_squad", "run_ner", "run_multiple_choice", "extract_features")
TRAINING = ("pretrain", *FINETUNING)
# The scripts that train with the optimizer and batch flags of the fine-tuning recipes.
TUNING = (*FINETUNING, "distill")
# A parse-time refusal takes well under a second here; a run that imports TensorFlow takes ~10-20 s
# as a process on this 2-core machine, so 5 s is a bound that holds under load and still fails for work.
BOUND_S = 5.0


def _inputs(root):
    """Input files every case may name (they exist, so only the bad flag is wrong); returns their paths."""
    os.makedirs(root / "data", exist_ok=True)
    paths = {}
    for name, text in (("corpus.txt", "a line\n"), ("model.keras", "not read\n"), ("vocab.txt", "[PAD]\n")):
        (root / "data" / name).write_text(text)
        paths[name] = str(root / "data" / name)
    return paths


def _base(script, paths, out):
    """The valid flags `script` needs besides the bad one."""
    data = paths["corpus.txt"]
    return {
        "pretrain": [f"--model_dir={out}"],
        "run_classifier": [f"--output_dir={out}", f"--train_file={data}", f"--eval_file={data}"],
        "run_squad": [f"--output_dir={out}", f"--train_file={data}", f"--predict_file={data}",
                      "--max_seq_length=64"],
        "run_ner": [f"--output_dir={out}", f"--train_file={data}", f"--eval_file={data}"],
        "run_multiple_choice": [f"--output_dir={out}", f"--train_file={data}", f"--eval_file={data}"],
        "distill": [f"--output_dir={out}", f"--teacher={paths['model.keras']}", "--student_layers=1",
                    f"--train_file={data}"],
        "extract_features": [f"--output_dir={out}", f"--input_file={data}", f"--output_file={out}/f.jsonl"],
        "build_vocab": [f"--input_files={data}", f"--output_file={out}/vocab.txt"],
        "create_pretraining_data": [f"--input_file={data}", f"--output_file={out}/train.tfrecord"],
        "extend_vocab": [f"--init_checkpoint={paths['model.keras']}", f"--input_files={data}",
                         f"--output_dir={out}"],
        "quickstart": [f"--run_dir={out}"],
        "export.export_saved_model": [f"--model_path={paths['model.keras']}", f"--export_dir={out}"],
        "export.save_keras_hub": [f"--model_path={paths['model.keras']}", f"--output_dir={out}"],
        "export.check_servable": [f"--export_dir={out}"],
        "export.client": ["--model=bert", "--text=a"],
    }[script]


# (flag=value, the scripts that take the flag, what the line says). {missing}, {dir} and {data} are paths.
BAD = [
    ("--train_batch_size=0", (*TRAINING, "distill", "quickstart"), "must be at least 1"),
    ("--eval_batch_size=0", (*TRAINING, "distill"), "must be at least 1"),
    ("--num_train_epochs=-1", TUNING, "must be greater than 0"),
    ("--num_train_epochs=0", TUNING, "must be greater than 0"),
    ("--num_train_epochs=inf", TUNING, "must be a finite number"),  # (was: an OverflowError traceback)
    ("--num_train_epochs=nan", TUNING, "must be a finite number"),
    ("--learning_rate=nan", (*TRAINING, "distill"), "must be a finite number"),
    ("--weight_decay=inf", (*TRAINING, "distill"), "must be a finite number"),
    ("--learning_rate=-0.1", (*TRAINING, "distill"), "must be greater than 0"),
    ("--num_warmup_steps=-1", (*TRAINING, "distill"), "must be at least 0"),
    ("--warmup_proportion=1.5", TUNING, "must be in [0, 1]"),
    ("--weight_decay=-1", (*TRAINING, "distill"), "must be at least 0"),
    ("--gradient_accumulation_steps=0", TRAINING, "must be at least 1"),
    ("--steps_per_execution=0", (*TRAINING, "distill"), "must be at least 1"),
    ("--worker_wait_s=0", (*TRAINING, "distill"), "must be greater than 0"),
    ("--save_checkpoints_steps=0", ("pretrain", "distill"), "must be at least 1"),
    ("--teacher={missing}", ("distill",), "no such file or directory"),
    ("--student_layers=0", ("distill",), "must be at least 1"),
    ("--student_config={dir}", ("distill",), "is a directory; expected a file"),
    ("--temperature=0", ("distill",), "must be greater than 0"),
    ("--alpha=1.5", ("distill",), "must be in [0, 1]"),
    ("--hidden_weight=-1", ("distill",), "must be at least 0"),
    ("--unlabeled_file={missing}", ("distill",), "no such file"),
    ("--augment=-1", ("distill",), "must be at least 0"),
    ("--num_train_steps=0", ("pretrain", "quickstart"), "must be at least 1"),
    ("--max_seq_length=1", (*TRAINING, "create_pretraining_data", "quickstart", "export.export_saved_model"),
     "must be at least 3"),
    ("--max_seq_length=abc", (*TRAINING, "create_pretraining_data", "export.export_saved_model"),
     "invalid literal for int() with base 10: 'abc'"),
    ("--masked_lm_prob=2", ("pretrain", "create_pretraining_data"), "must be in [0, 1]"),
    ("--max_predictions_per_seq=0", ("pretrain", "create_pretraining_data"), "must be at least 1"),
    ("--vocab_file={missing}", (*TRAINING, "create_pretraining_data", "export.export_saved_model"),
     "no such file"),
    ("--vocab_file={dir}", (*TRAINING, "create_pretraining_data", "export.export_saved_model"),
     "is a directory; expected a file"),
    ("--bert_config_file={missing}", TRAINING, "no such file"),
    ("--init_checkpoint={missing}", (*TRAINING, "extend_vocab"), "no such file or directory"),
    ("--model_path={missing}", ("export.export_saved_model", "export.save_keras_hub"),
     "no such file or directory"),
    ("--train_file={dir}", ("run_classifier", "run_squad", "run_ner", "run_multiple_choice", "distill"),
     "is a directory; expected a file"),
    ("--train_file={missing}", ("run_classifier", "run_squad", "run_ner", "run_multiple_choice", "distill"),
     "no such file"),
    ("--predict_file={dir}", ("run_classifier", "run_squad", "run_ner", "run_multiple_choice"),
     "is a directory; expected a file"),
    ("--input_file={dir}", ("extract_features", "create_pretraining_data"), "names no file"),
    ("--input_file={missing}", ("extract_features", "create_pretraining_data"), "no file matches"),
    ("--data_dir={missing}", ("run_classifier", "distill"), "no such directory"),
    ("--tfds_data_dir={missing}", ("run_classifier", "pretrain"), "no such directory"),
    ("--vocab_size=5", ("build_vocab", "quickstart"), "must be at least 6"),
    ("--preset=huge", (*TRAINING, "quickstart"), "value should be one of"),
    ("--export_dir={dir}", ("export.export_saved_model",), "given 2 times; expected one"),
    ("--signature=texts", ("export.export_saved_model",), "expected one of text, text_pair, token_ids"),
    ("--input=question", ("export.client", "export.check_servable"), "'question' is not NAME=TEXT"),
    ("--input_files={missing}", ("build_vocab", "pretrain", "extend_vocab"), "no file matches"),
    ("--output_file={dir}", ("build_vocab", "create_pretraining_data", "extract_features"),
     "is a directory; expected a file name"),
    ("--max_lines=0", ("build_vocab", "extend_vocab"), "must be at least 1"),
    ("--min_frequency=0", ("build_vocab", "extend_vocab"), "must be at least 1"),
    ("--doc_stride=0", ("run_squad", "export.export_saved_model"), "must be at least 1"),
    ("--n_best_size=0", ("run_squad", "export.export_saved_model"), "must be at least 1"),
    ("--max_answer_length=-3", ("run_squad", "export.export_saved_model"), "must be at least 1"),
    ("--stride=0", ("run_ner", "export.export_saved_model"), "must be at least 1"),
    ("--lora_rank=-1", FINETUNING, "must be at least 0"),
    ("--pad_to_multiple_of=-8", TRAINING, "must be at least 0"),
    ("--calibration_file={dir}", ("export.export_saved_model",), "is a directory; expected a file"),
    ("--dtype=float64", (*TRAINING, "distill", "quickstart", "export.export_saved_model"),
     "value should be one of"),
    ("--atol=-1", ("export.check_servable",), "must be at least 0"),
    ("--version=0", ("export.export_saved_model", "export.client"), "must be at least 1"),
    ("--port=70000", ("export.client",), "must be in [1, 65535]"),
    ("--timeout=0", ("export.client",), "must be greater than 0"),
]
CASES = [pytest.param(script, setting, expected, id=f"{script}-{setting}")
         for setting, scripts, expected in BAD for script in scripts]


def _tree(path):
    return {os.path.join(root, name): os.path.getmtime(os.path.join(root, name))
            for root, _, files in os.walk(path) for name in files}


@pytest.mark.parametrize("script, setting, expected", CASES)
def test_a_bad_flag_is_one_line_before_any_work(run_in_process, tmp_path, monkeypatch, script, setting,
                                                expected):
    monkeypatch.chdir(tmp_path)  # a default output path (runs/...) would land here
    paths = _inputs(tmp_path)
    out = tmp_path / "out"
    setting = setting.format(missing=tmp_path / "data" / "missing.txt", dir=tmp_path / "data",
                             data=paths["corpus.txt"])
    before = _tree(tmp_path)
    start = time.perf_counter()
    status, stderr = run_in_process(script, *_base(script, paths, out), setting)
    seconds = time.perf_counter() - start
    name = setting.split("=", 1)[0]
    assert status == 1, stderr
    assert stderr.count("\n") == 1 and stderr.startswith(f"error: {name}: "), stderr
    assert expected in stderr and stderr.endswith(f" (given as {setting})\n"), stderr
    assert seconds < BOUND_S, f"{seconds:.1f} s: work started before the flags were checked"
    assert _tree(tmp_path) == before and not out.exists()


# Flags that must come together, refused at parse time too (the line shows the flag that asked).
TOGETHER = [
    ("run_squad", ["--nodo_eval", "--do_predict", "--predict_file="], "--do_predict needs --predict_file",
     "--do_predict"),
    ("run_ner", ["--do_eval", "--eval_file="], "--do_eval needs --eval_file", "--do_eval"),
    ("run_multiple_choice", ["--do_train", "--train_file="], "--do_train needs --train_file", "--do_train"),
    ("pretrain", ["--num_train_steps=10", "--num_warmup_steps=20"],
     "--num_warmup_steps=20 exceeds the 10 train steps", "--num_warmup_steps=20, --num_train_steps=10"),
    ("run_classifier", ["--task_name=MRPC", "--train_file=", "--eval_file="],
     "--task_name=MRPC needs --data_dir (the GLUE task's directory)", "--task_name=MRPC"),
    ("distill", ["--student_preset=tiny"], "give one of --student_layers, --student_preset, --student_config",
     "--student_layers=1, --student_preset=tiny, --student_config="),
    ("distill", ["--task_name=SST-2"], "--task_name=SST-2 needs --data_dir (the GLUE task's directory)",
     "--task_name=SST-2"),
    ("export.export_saved_model", ["--format=tfhub", "--quantize=int8"], "--quantize and --dtype are for "
     "--format=serving exports", "--format=tfhub, --quantize=int8, --dtype=float32"),
]


@pytest.mark.parametrize("script, flags, message, shown", TOGETHER,
                         ids=[f"{case[0]}-{case[1][-1]}" for case in TOGETHER])
def test_flags_that_go_together(run_in_process, tmp_path, script, flags, message, shown):
    paths = _inputs(tmp_path)
    status, stderr = run_in_process(script, *_base(script, paths, tmp_path / "out"), *flags)
    assert (status, stderr) == (1, f"error: {message} (given as {shown})\n")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("script, flag", [("build_vocab", "--output_file"), ("extend_vocab", "--output_dir"),
                                          ("export.export_saved_model", "--export_dir"),
                                          ("export.save_keras_hub", "--output_dir")])
def test_a_required_flag_left_out(run_in_process, tmp_path, script, flag):
    argv = [a for a in _base(script, _inputs(tmp_path), tmp_path / "out") if not a.startswith(flag + "=")]
    assert run_in_process(script, *argv) == (1, f"error: {flag}: is required\n")


def test_an_unknown_flag_is_one_line(run_in_process, tmp_path):
    argv = _base("run_ner", _inputs(tmp_path), tmp_path / "out")
    status, stderr = run_in_process("run_ner", *argv, "--trian_file=x")
    assert status == 1 and stderr.count("\n") == 1
    assert stderr.startswith("error: Unknown command line flag 'trian_file'")


SCRIPTS = ("recipes", "export")


def flag_definitions(files):
    """{flag name: ["path:line"]} of every absl DEFINE_* call with a literal name in `files` ({path:
    source})."""
    import ast

    found = {}
    for path, source in files.items():
        for node in ast.walk(ast.parse(source)):
            name = getattr(getattr(node, "func", None), "attr", "")
            if isinstance(node, ast.Call) and name.startswith("DEFINE") and node.args and isinstance(
                    node.args[0], ast.Constant):
                found.setdefault(node.args[0].value, []).append(f"{path}:{node.lineno}")
    return found


def _script_sources():
    import glob

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    paths = [p for folder in SCRIPTS for p in sorted(glob.glob(os.path.join(root, folder, "*.py")))]
    return {os.path.relpath(p, root): open(p, encoding="utf-8").read() for p in paths}


def test_every_flag_is_defined_once():
    """A flag name is defined in one place: recipes/flags.py's CONCEPTS (shared by name through `define`), or
    the one script that alone takes it."""
    from recipes import flags as shared_flags

    definitions = flag_definitions(_script_sources())
    twice = {name: where for name, where in definitions.items()
             if len(where) > 1 or name in shared_flags.CONCEPTS}
    assert not twice, f"flags defined in more than one place (make them recipes/flags.py concepts): {twice}"


def test_the_definition_count_catches_a_second_definition():
    found = flag_definitions({"recipes/a.py": 'flags.DEFINE_string("output_dir", None, "x")\n',
                              "export/b.py": 'import absl\nabsl.flags.DEFINE_list("output_dir", [], "y")\n'})
    assert found == {"output_dir": ["recipes/a.py:1", "export/b.py:2"]}
