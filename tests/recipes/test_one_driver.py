"""Every fine-tuning recipe runs through the one driver (`keras_bert.tasks.driver.finetune`): each tiny
recipe is run in this process with the real driver wrapped in a counter, with no stage (its label set read,
its model built and compiled: what the stages then write is tests/recipes/test_run_*.py's)."""

import pathlib

import pytest

from keras_bert.tasks import driver
from keras_bert.tasks.base import Task
from tests.recipes.test_run_classifier import _write_csv
from tests.recipes.test_run_ner import SENTENCES, _write_conll


def _classifier(tmp_path):
    train = _write_csv(tmp_path / "train.csv", [("good day", "pos"), ("bad day", "neg")])
    return [f"--train_file={train}"], ["neg", "pos"]


def _ner(tmp_path):
    return [f"--train_file={_write_conll(tmp_path / 'eng.train', SENTENCES)}"], \
        ["O", "I-LOC", "I-MISC", "I-ORG", "I-PER"]


CASES = {"run_classifier": _classifier, "run_ner": _ner, "run_squad": lambda _: ([], None),
         "run_multiple_choice": lambda _: ([], None)}


def test_the_table_lists_every_finetuning_recipe():
    recipes = pathlib.Path(__file__).resolve().parents[2] / "recipes"
    assert sorted(CASES) == sorted(path.stem for path in recipes.glob("run_*.py") if path.stem != "run_dir")


@pytest.mark.parametrize("recipe", sorted(CASES))
def test_every_finetuning_recipe_runs_the_one_driver(recipe, tmp_path, tiny_model, run_in_process,
                                                     monkeypatch):
    calls = []
    real = driver.finetune

    def counting(task, run):
        calls.append((task, run))
        returned = real(task, run)
        calls.append(returned)
        return returned

    monkeypatch.setattr(driver, "finetune", counting)
    argv, labels = CASES[recipe](tmp_path)
    out = tmp_path / "out"
    status, stderr = run_in_process(recipe, *argv, "--nodo_train", "--nodo_eval", f"--output_dir={out}",
                                    "--eval_batch_size=3", *tiny_model(["good bad day"], max_seq_length=24))
    assert status is None, stderr
    assert len(calls) == 2  # once
    (task, run), (model, results) = calls
    assert isinstance(task, Task) and isinstance(model, task.model_class) and results == {}
    assert (run.output_dir, run.eval_batch_size, run.preprocessor.seq_length) == (str(out), 3, 24)
    assert task.labels == labels and model.labels == labels  # the task's head
    assert model.optimizer is not None  # compiled
    assert not (out / "model.keras").exists() and not (out / "eval_results.json").exists()  # no stage ran
