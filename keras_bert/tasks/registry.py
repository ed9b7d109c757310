"""The task folders, listed: each `keras_bert/tasks/<task>/spec.py` declares `SPEC`, a `TaskSpec`,
imported here by name (so tests/test_import_cycles.py sees every edge). Shared code (the export CLI's
flags, tests/test_house.py) loops over `specs()` and names no task. Importing this module (keras_bert's
__init__ does) also declares each task's heads in other formats to the checkpoint converters
(`keras_bert.checkpoints.heads`) and defines each task's serving Options
(`keras_bert.models.options.option_classes`). The servability check and the client find the folders'
`served.py` by path (keras_bert/export/servability/answers.py).
"""

from keras_bert.checkpoints import heads
from keras_bert.tasks.classification import spec as classification
from keras_bert.tasks.multiple_choice import spec as multiple_choice
from keras_bert.tasks.ner import spec as ner
from keras_bert.tasks.squad import spec as squad

# {task folder: its TaskSpec}, in folder name order.
SPECS = {module.__name__.split(".")[-2]: module.SPEC
         for module in (classification, multiple_choice, ner, squad)}
for _spec in SPECS.values():
    heads.declare(_spec.kind, _spec.huggingface, _spec.keras_hub)


def specs():
    """[TaskSpec] of every task folder, in folder name order."""
    return list(SPECS.values())
