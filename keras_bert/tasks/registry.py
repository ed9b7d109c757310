"""The task folders, found rather than listed: every package `keras_bert/tasks/<task>/` with a `spec.py`
declares `SPEC`, a `TaskSpec`. Shared code (the serving options, the export CLI's flags, tests/test_house.py)
loops over `specs()` and names no task; the servability check and the client loop over the folders'
`served.py` the same way.
"""

import dataclasses
import importlib
import pkgutil


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """What a task folder declares to shared code.

    Attributes:
        kind: the model class's `task_kind`.
        names: the task's distinctive names (its classes, kind, option fields, served output names): no
            module outside its folder may use them (tests/test_house.py).
        options: the model class's serving `Options` dataclass.
        forms: the raw-input serving forms the task adds to the shared "text" / "text_pair".

    Beside spec.py a folder may hold `served.py`, plain Python that shared code loads by path: its
    `check_answers(inputs, outputs)` returns what is wrong with served answers (str) or None
    (`keras_bert.export.servability`), its `describe(example)` the readable lines of one served example and
    the output names they show, or None (export/client.py).
    """

    kind: str
    names: tuple
    options: type
    forms: tuple = ()


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
