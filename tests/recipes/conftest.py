"""Helpers of the recipe tests: a tiny vocab + bert_config.json on disk, and running a recipe as a user
does."""

import importlib
import os
import re
import string
import subprocess
import sys

import pytest

from keras_bert.config import BertConfig

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def write_vocab(path, texts):
    """A vocab.txt with the reserved tokens, ASCII punctuation, every lower-case letter and digit (alone and
    as "##" continuation, so no word is [UNK]) and the words of `texts`."""
    words = sorted({w for text in texts for w in re.findall(r"[a-z0-9]+", text.lower())})
    chars = string.ascii_lowercase + string.digits
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *string.punctuation, *chars,
              *(f"##{c}" for c in chars)]
    tokens += [w for w in words if w not in tokens]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(tokens) + "\n")
    return str(path), len(tokens)


@pytest.fixture
def tiny_model(tmp_path):
    """make(texts) -> flags for a random 2-layer, 32-wide BERT over a vocab of the words of `texts`."""

    def make(texts, max_seq_length=64):
        vocab, size = write_vocab(tmp_path / "vocab.txt", texts)
        config = BertConfig(vocab_size=size, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                            intermediate_size=64, max_position_embeddings=128)
        config_path = str(tmp_path / "bert_config.json")
        config.to_json_file(config_path, fmt="google")
        return [f"--vocab_file={vocab}", f"--bert_config_file={config_path}",
                f"--max_seq_length={max_seq_length}", "--nojit_compile", "--seed=1"]

    return make


# Lines the recipes' default quiet logs must hide (TensorFlow C++ and Python INFO).
LOG_NOISE = re.compile(r"cudart_stub|oneDNN custom operations|builder_impl\.py|functional_saver\.py|"
                       r"XLA service")


def run_recipe(name, *flags, check=True, timeout=900):
    """Runs `python recipes/<name>.py <flags>` in the repository, as a user types it, with the default
    (quiet) logs; returns the CompletedProcess. TensorFlow's INFO lines in its stderr fail the test."""
    env = {k: v for k, v in os.environ.items() if k not in ("TF_CPP_MIN_LOG_LEVEL", "KERAS_BERT_VERBOSE")}
    env["CUDA_VISIBLE_DEVICES"] = ""
    result = subprocess.run([sys.executable, os.path.join("recipes", f"{name}.py"), *flags], cwd=REPO,
                            env=env, capture_output=True, text=True, timeout=timeout)
    if check and result.returncode != 0:
        raise AssertionError(f"recipes.{name} failed ({result.returncode}):\n{result.stdout[-3000:]}\n"
                             f"{result.stderr[-6000:]}")
    noise = [line for line in result.stderr.splitlines() if LOG_NOISE.search(line)]
    assert not noise, f"recipes/{name}.py printed TensorFlow INFO lines:\n" + "\n".join(noise[:5])
    return result


@pytest.fixture
def run_in_process(capsys, monkeypatch):
    """run(name, *flags) -> (exit status, stderr): recipes/<name>.py's main (or export/<x>.py's for name
    "export.<x>") through `logs.call_main`, the wrapper its `__main__` line uses, in this process (no 10 s
    TensorFlow import); what it printed to stdout is then `run.stdout`. The recipe's flags are defined
    afresh, and absl's flags as they were are put back after."""
    from absl import flags

    from recipes import flags as shared_flags
    from recipes import logs

    monkeypatch.delenv("KERAS_BERT_VERBOSE", raising=False)
    values = flags.FLAGS

    def run(name, *argv):
        absl_flags = {flag for module, module_flags in values.flags_by_module_dict().items()
                      if module.startswith("absl") for flag in module_flags}
        saved = {key: values[key] for key in list(values) if values[key] not in absl_flags}
        for key in saved:
            delattr(values, key)
        module_name = name if "." in name else f"recipes.{name}"
        sys.modules.pop(module_name, None)
        monkeypatch.setattr(sys, "argv", [f"{module_name.replace('.', '/')}.py", *argv])
        try:
            module = importlib.import_module(module_name)
            capsys.readouterr()
            try:
                shared_flags.parse(sys.argv)  # as `logs.run` parses: a bad flag is one line and exit status 1
            except SystemExit as stop:
                printed = capsys.readouterr()
                run.stdout = printed.out  # what --help printed
                return stop.code, printed.err
            status = logs.call_main(module.main, [name])
            printed = capsys.readouterr()
            run.stdout = printed.out
            return status, printed.err
        finally:
            logs.AFTER_MAIN.clear()
            sys.modules.pop(module_name, None)
            for key in list(values):
                if values[key] not in absl_flags:
                    delattr(values, key)
            for key, flag in saved.items():
                values[key] = flag

    return run
