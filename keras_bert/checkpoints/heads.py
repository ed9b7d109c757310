"""A task's heads in other libraries' formats, as data: `HuggingFaceHead` (a transformers `BertFor*`)
and `KerasHubHead` (a KerasHub task preset). The converters (huggingface.py, keras_hub.py) read and write
the heads declared here and import no task: each task folder states its heads in its spec.py
(`TaskSpec.huggingface`, `TaskSpec.keras_hub`), and keras_bert/tasks/registry.py, which keras_bert's
__init__ imports, `declare`s them.
"""

import dataclasses
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


# task kind -> (HuggingFaceHead or None, KerasHubHead or None), filled by keras_bert/tasks/registry.py.
_DECLARED = {}


def declare(kind, huggingface=None, keras_hub=None):
    """States the heads of the task whose models have `task_kind` `kind` (None: the format has none)."""
    _DECLARED[kind] = (huggingface, keras_hub)


def heads_of(kind):
    """(HuggingFaceHead or None, KerasHubHead or None) of the task models of `task_kind` `kind`."""
    return _DECLARED.get(kind, (None, None))


def huggingface_heads():
    """{BertFor* architecture: (task kind, HuggingFaceHead)} of every declared task."""
    return {head.architecture: (kind, head) for kind, (head, _) in _DECLARED.items() if head}


def keras_hub_heads():
    """{task.json registered_name: (task kind, KerasHubHead)} of every declared task."""
    return {head.task: (kind, head) for kind, (_, head) in _DECLARED.items() if head}
