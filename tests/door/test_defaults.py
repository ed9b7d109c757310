"""One default per concept: every training recipe's flag defaults are the library's
(`keras_bert.training.defaults`), as are `compile()`'s optimizer and the distiller's (was: run_classifier
--learning_rate=2e-5 beside compile()'s 5e-5, dev accuracy 0.66 against 0.80 on the same 300 texts).
Pre-training's are its own concept (PRETRAINING)."""

import pytest

from keras_bert.tasks.squad.task import SquadSettings
from keras_bert.training.defaults import DISTILLATION, FINETUNING, PRETRAINING
from tests.door.test_flags import _base, _inputs

# flag -> the TrainingDefaults field it defaults to
FIELDS = {"learning_rate": "learning_rate", "train_batch_size": "batch_size", "eval_batch_size": "batch_size",
          "max_seq_length": "max_seq_length", "warmup_proportion": "warmup_proportion",
          "num_warmup_steps": "num_warmup_steps", "num_train_epochs": "num_train_epochs",
          "num_train_steps": "num_train_steps", "weight_decay": "weight_decay",
          "clip_global_norm": "clip_global_norm"}
RECIPES = {"run_classifier": FINETUNING, "run_ner": FINETUNING, "run_multiple_choice": FINETUNING,
           "run_squad": FINETUNING, "extract_features": FINETUNING, "distill": DISTILLATION,
           "pretrain": PRETRAINING}
OWN = {("run_squad", "max_seq_length"): SquadSettings.max_seq_length}  # a task's own setting: its windows


def _flag_defaults(run_in_process, monkeypatch, tmp_path, recipe):
    """{flag: default} of the training flags `recipe` defines, read once its command line has parsed (its
    main is not run)."""
    from absl import flags

    from recipes import logs

    seen = {}

    def instead_of_main(main, argv):
        seen.update({name: flags.FLAGS[name].default for name in FIELDS if name in flags.FLAGS})

    monkeypatch.setattr(logs, "call_main", instead_of_main)
    status, stderr = run_in_process(recipe, *_base(recipe, _inputs(tmp_path), tmp_path / "out"))
    assert status is None, stderr
    return seen


@pytest.mark.parametrize("recipe", sorted(RECIPES))
def test_every_recipe_flag_defaults_to_the_library(run_in_process, monkeypatch, tmp_path, recipe):
    defaults = _flag_defaults(run_in_process, monkeypatch, tmp_path, recipe)
    assert {"learning_rate", "train_batch_size"} <= set(defaults), defaults
    expected = {name: OWN.get((recipe, name), getattr(RECIPES[recipe], FIELDS[name])) for name in defaults}
    assert defaults == expected


def test_the_concepts_differ_where_they_should():
    assert FINETUNING.learning_rate == 5e-5 and FINETUNING.warmup_proportion == 0.1  # the paper, Trainer
    assert (FINETUNING.batch_size, FINETUNING.num_train_epochs, FINETUNING.max_seq_length) == (32, 3.0, 128)
    assert PRETRAINING.learning_rate == 1e-4  # the paper's pre-training rate, counted in steps, not epochs
    assert PRETRAINING.num_train_steps and not PRETRAINING.num_train_epochs
    assert DISTILLATION.learning_rate == 1e-4 and DISTILLATION.batch_size == FINETUNING.batch_size


def test_the_library_compiles_with_the_same_defaults(tiny_config):
    from keras_bert.distillation import TaskDistiller, make_student
    from keras_bert.models.encoder import BertEncoder
    from keras_bert.tasks.classification.model import BertClassifier
    from keras_bert.training.optimization import create_optimizer

    classifier = BertClassifier(BertEncoder(tiny_config), num_classes=2)
    classifier.compile()
    assert classifier._schedule == (FINETUNING.learning_rate, FINETUNING.warmup_proportion)
    assert float(classifier.optimizer.learning_rate) == pytest.approx(FINETUNING.learning_rate)
    assert classifier.optimizer.weight_decay == FINETUNING.weight_decay
    assert classifier.optimizer.clip_global_norm == FINETUNING.clip_global_norm
    distiller = TaskDistiller(classifier, make_student(classifier, layers=1))
    distiller.compile()
    assert float(distiller.optimizer.learning_rate) == pytest.approx(DISTILLATION.learning_rate)
    optimizer = create_optimizer(1e-3, 10)
    assert (optimizer.weight_decay, optimizer.clip_global_norm) == (FINETUNING.weight_decay,
                                                                     FINETUNING.clip_global_norm)
