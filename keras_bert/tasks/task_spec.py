"""`TaskSpec`: what a task folder declares to shared code, in its spec.py as `SPEC`. The folders are
listed in keras_bert/tasks/registry.py; shared code (the export CLI's flags, tests/test_house.py) loops
over `registry.specs()` and names no task.
"""

import dataclasses

from keras_bert.checkpoints.heads import HuggingFaceHead, KerasHubHead


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

    Beside spec.py a folder may hold `served.py`, listed in `registry.SERVED`: its
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
