"""The task folders, listed: each `keras_bert/tasks/<task>/spec.py` declares `SPEC`, a `TaskSpec`,
imported here by name (so tests/test_import_cycles.py sees every edge). Shared code (the export CLI's
flags, tests/test_house.py) loops over `specs()` and names no task. Importing this module (keras_bert's
__init__ does) also declares each task's heads in other formats to the checkpoint converters
(`keras_bert.checkpoints.heads`) and defines each task's serving Options
(`keras_bert.models.options.option_classes`). The folders' `served.py` (the check of their served answers
and their readable lines) are listed here too, for keras_bert.export.servability and export/client.py.
"""

from keras_bert.checkpoints import heads
from keras_bert.tasks.classification import spec as classification
from keras_bert.tasks.multiple_choice import served as multiple_choice_served
from keras_bert.tasks.multiple_choice import spec as multiple_choice
from keras_bert.tasks.ner import served as ner_served
from keras_bert.tasks.ner import spec as ner
from keras_bert.tasks.squad import served as squad_served
from keras_bert.tasks.squad import spec as squad

# {task folder: its TaskSpec}, in folder name order.
SPECS = {module.__name__.split(".")[-2]: module.SPEC
         for module in (classification, multiple_choice, ner, squad)}
for _spec in SPECS.values():
    heads.declare(_spec.kind, _spec.huggingface, _spec.keras_hub)


# The `served.py` of every task folder that has one, in folder name order.
SERVED = (multiple_choice_served, ner_served, squad_served)


def specs():
    """[TaskSpec] of every task folder, in folder name order."""
    return list(SPECS.values())


def served_modules():
    """[module] of every task folder's `served.py` (`TaskSpec`'s docstring says what they hold)."""
    return list(SERVED)
