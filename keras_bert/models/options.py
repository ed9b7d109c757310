"""Serving options: each model class names a frozen dataclass (`options_class`) of what it serves beyond its
logits; `Options` holds those every model takes, a task's own subclass (in its folder) adds its fields.

    @dataclasses.dataclass(frozen=True)
    class Options(options.Options):
        stride: int | None = options.option(None, "Pieces between windows.", "a windowed model")

Each field's metadata carries its help (the export CLI's flag help, generated from the fields) and whom it
applies to (the error when another model is given it), and optionally `choices` (an enum flag) or `fields`
(a nested dataclass whose fields are flags of their own). `model_options` routes keyword options to a model
class's Options: this module names no task.
"""

import dataclasses


def option(default, help, applies=None, choices=None, fields=None):  # noqa: A002  (absl's word)
    """A dataclass field of an Options class: `default`, its one-line `help`, `applies` (who takes it, as in
    "an encoder": the error naming it for another model), `choices` (allowed values) and `fields` (a
    dataclass the value is an instance of: its fields become flags)."""
    return dataclasses.field(default=default, metadata={"help": help, "applies": applies, "choices": choices,
                                                        "fields": fields})


def check_choice(name, value, choices, none_ok=False):
    """ValueError naming `name` when `value` is not one of `choices` (or None, with `none_ok`)."""
    if value not in ((None, *choices) if none_ok else choices):
        raise ValueError(f"{name}={value!r}; expected {'None or ' if none_ok else ''}one of {tuple(choices)}")


@dataclasses.dataclass(frozen=True)
class Options:
    """What every model serves with. A model class's `options_class` subclasses this.

    Attributes:
        fixed_length: raw text packed to the full sequence length (a fixed shape: TPU, a batching config
            that wants one); default: each batch to its longest input, rounded up to a multiple of 8.
    """

    fixed_length: bool = option(False, "Pack served text to the full --max_seq_length (a fixed shape, e.g. "
                                "for a batching config that wants one); default: each request to its longest "
                                "input, rounded up to 8.")


def option_classes():
    """Every Options class: this base and its subclasses, those of every task folder included (keras_bert's
    __init__ imports them, through keras_bert/tasks/registry.py)."""
    found, pending = [], [Options]
    while pending:
        cls = pending.pop(0)
        found.append(cls)
        pending.extend(cls.__subclasses__())
    return found


def option_fields():
    """{field name: [(Options class that declares it, dataclasses.Field)]} over `option_classes()`."""
    fields = {}
    for cls in option_classes():
        inherited = {field.name for base in cls.__mro__[1:] if dataclasses.is_dataclass(base)
                     for field in dataclasses.fields(base)}
        for field in dataclasses.fields(cls):
            if field.name not in inherited:
                fields.setdefault(field.name, []).append((cls, field))
    return fields


def model_options(model_name, options_class, form, given):
    """`options_class(**given)` where its fields take `given` ({name: value}); an option of another model's
    Options at its default is dropped, at another value a ValueError says whom it applies to: "nbest=True
    applies to a span labeler served on 'question_context'; this is a BertClassifier with signature
    'text'"; an option of no model is a ValueError listing this model's."""
    if isinstance(given, options_class):
        return given
    if dataclasses.is_dataclass(given):
        raise ValueError(f"options={type(given).__qualname__}(...) are another model's; a {model_name} takes "
                         f"{options_class.__module__}.{options_class.__qualname__}")
    own = {field.name for field in dataclasses.fields(options_class)}
    known = option_fields()
    for name, value in given.items():
        if name in own:
            continue
        if name not in known:
            raise ValueError(f"{name}={value!r} is not a serving option; a {model_name} takes "
                             f"{', '.join(sorted(own))}")
        owners = known[name]
        if all(value == field.default for _, field in owners):
            continue
        applies = " or ".join(dict.fromkeys(field.metadata["applies"] or cls.__qualname__
                                            for cls, field in owners))
        raise ValueError(f"{name}={value!r} applies to {applies}; this is a {model_name} with signature "
                         f"{form!r}")
    return options_class(**{name: value for name, value in given.items() if name in own})
