"""The task folders, found rather than listed: every package `keras_bert/tasks/<task>/` with a `spec.py`
declares `SPEC`, a `TaskSpec`. Shared code (the serving options, the export CLI's flags, tests/test_house.py)
loops over `specs()` and names no task; the servability check and the client loop over the folders'
`served.py` the same way. A spec also declares the task's heads in other libraries' formats
(`HuggingFaceHead`, `KerasHubHead`), which the checkpoint converters read and write.
"""

import dataclasses
import importlib
import pkgutil
from collections.abc import Callable


@dataclasses.dataclass(frozen=True)
class HuggingFaceHead:
    """A task's transformers head, read and written by keras_bert/checkpoints/huggingface.py.

    Attributes:
        architecture: the `BertFor*` class that config.json `architectures` names.
        layer: the task model's head Dense layer (its kernel and bias are the head's weights).
        prefix: the state-dict prefix of that layer's `.weight` / `.bias` in transformers' files.
        pooler: False where transformers builds the architecture without BERT's pooler (not written).
        labelled: the head's outputs are classes, named by config.json id2label / label2id (read as the
            head's "num_classes" and "labels").
        unnamed: (config.json values, output count) -> True where the outputs are no named classes (a
            regression): id2label is then not read.
        config: (task model) -> the head's config.json keys beyond id2label, label2id and
            classifier_dropout.
    """

    architecture: str
    layer: str
    prefix: str
    pooler: bool = True
    labelled: bool = False
    unnamed: Callable | None = None
    config: Callable | None = None


@dataclasses.dataclass(frozen=True)
class KerasHubHead:
    """A task's KerasHub task preset (task.json, task.weights.h5's `layers/dense`, preprocessor.json), read
    and written by keras_bert/checkpoints/keras_hub.py.

    Attributes:
        task: task.json's `registered_name` ("keras_hub>..."); module: its keras_hub.src.models.bert module.
        layer: the task model's head Dense layer, stored as task.weights.h5's `layers/dense`.
        read: (task.json "config", task.json's path) -> the head's model arguments (e.g. num_classes,
            dropout); raises CheckpointError naming the file and key it refuses.
        write: (task model) -> task.json "config" entries beyond the backbone and preprocessor.
        preprocessor: (registered_name, module) of the preset's preprocessor.json, or None.
    """

    task: str
    module: str
    layer: str
    read: Callable
    write: Callable
    preprocessor: tuple | None = None


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """What a task folder declares to shared code.

    Attributes:
        kind: the model class's `task_kind`.
        names: the task's distinctive names (its classes, kind, option fields, served output names): no
            module outside its folder may use them (tests/test_house.py).
        options: the model class's serving `Options` dataclass.
        forms: the raw-input serving forms the task adds to the shared "text" / "text_pair".
        huggingface: its `HuggingFaceHead`, or None (no transformers head).
        keras_hub: its `KerasHubHead`, or None (no KerasHub task preset).

    Beside spec.py a folder may hold `served.py`, plain Python that shared code loads by path: its
    `check_answers(inputs, outputs)` returns what is wrong with served answers (str) or None
    (`keras_bert.export.servability`), its `describe(example)` the readable lines of one served example and
    the output names they show, or None (export/client.py).
    """

    kind: str
    names: tuple
    options: type
    forms: tuple = ()
    huggingface: HuggingFaceHead | None = None
    keras_hub: KerasHubHead | None = None

    @property
    def foreign_keys(self):
        """The other formats' names this spec declares (architecture, state-dict prefix, registered
        names): strings its own folder may spell even where they spell another task's name."""
        hf, hub = self.huggingface, self.keras_hub
        return frozenset(((hf.architecture, hf.prefix) if hf else ()) +
                         ((hub.task, hub.module, *(hub.preprocessor or ())) if hub else ()))


def specs():
    """[TaskSpec] of every task folder, in name order (each spec.py imported once)."""
    package = importlib.import_module(__package__)
    found = []
    for module in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if module.ispkg:
            try:
                spec = importlib.import_module(f"{__package__}.{module.name}.spec")
            except ModuleNotFoundError as e:
                if e.name != f"{__package__}.{module.name}.spec":
                    raise
                continue
            found.append(spec.SPEC)
    return found
