"""Every public name has a Google-style docstring (Args / Returns) that `help()` shows: import and inspect, no
model is built.

The public names: `keras_bert.__all__`, `keras_bert.export.__all__`, `keras_bert.text.__all__` and
`keras_bert.training.__all__` (with the public functions of the text modules listed there), and the methods
users call on the models (`from_pretrained`, `serve`, `fit`, `evaluate`, `predict`, `save`, `compile`,
`enable_lora`, `quantize`) where keras_bert defines them. Sections are parsed as mkdocstrings' Google style
reads them (docs/reference/*.md renders them): a section header `Args:` alone on its line, its entries
`name: text` one indent deeper.
"""

import ast
import inspect
import pydoc
import re
import textwrap

import keras
import pytest

import keras_bert
import keras_bert.export
import keras_bert.text
import keras_bert.training

MODEL_METHODS = ("from_pretrained", "serve", "fit", "evaluate", "predict", "save", "compile", "enable_lora",
                 "quantize")
SECTION = re.compile(r"^(\s*)(Args|Returns|Yields|Raises|Examples|Example|Note|Notes|Attributes):\s*$")
ENTRY = re.compile(r"^(\*{0,2}\w+)(\s*\([^)]*\))?:(\s|$)")


def public_objects():
    """(qualified name, object) of every public class and function, then the model methods."""
    found, modules = {}, [keras_bert, keras_bert.export]
    while modules:
        module = modules.pop(0)
        names = getattr(module, "__all__", None) or [
            key for key, member in vars(module).items()
            if not key.startswith("_") and inspect.isfunction(member)
            and member.__module__ == module.__name__]
        for name in names:
            value = getattr(module, name)
            if inspect.ismodule(value):
                modules.append(value)
            elif inspect.isclass(value) or inspect.isfunction(value):
                found.setdefault(f"{module.__name__}.{name}", value)
    for value in list(found.values()):
        if inspect.isclass(value) and issubclass(value, keras.Model):
            for method in MODEL_METHODS:
                owner = next((base for base in value.__mro__ if method in vars(base)), None)
                if owner is not None and owner.__module__.startswith("keras_bert"):
                    found.setdefault(f"{owner.__module__}.{owner.__name__}.{method}", getattr(owner, method))
    return sorted(found.items())


PUBLIC = public_objects()
MODELS = sorted({value for _, value in PUBLIC if inspect.isclass(value) and issubclass(value, keras.Model)},
                key=lambda cls: cls.__name__)


def sections(doc):
    """{section name: [its lines, dedented]} of a cleaned docstring."""
    found, current, indent = {}, None, 0
    for line in doc.splitlines():
        header = SECTION.match(line)
        if header:
            current, indent = header.group(2), len(header.group(1))
            found[current] = []
        elif current is not None:
            if line.strip() and len(line) - len(line.lstrip()) <= indent:
                current = None  # text back at the header's indent ends the section
            else:
                found[current].append(line)
    return {name: textwrap.dedent("\n".join(lines)).splitlines() for name, lines in found.items()}


def documented_arguments(lines):
    return {match.group(1).lstrip("*") for line in lines if not line[:1].isspace()
            for match in [ENTRY.match(line)] if match}


def arguments(obj):
    """The parameters a caller passes: all but self / cls / **kwargs (none for an exception class)."""
    if inspect.isclass(obj) and issubclass(obj, BaseException) and "__init__" not in vars(obj):
        return []
    return [parameter.name for parameter in inspect.signature(obj).parameters.values()
            if parameter.name not in ("self", "cls") and parameter.kind is not parameter.VAR_KEYWORD]


def returns_value(function):
    """Whether `function`'s own body (not a nested def) returns something other than None, or yields."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    nodes, found = list(ast.iter_child_nodes(tree.body[0])), False
    while nodes:
        node = nodes.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return True
        if isinstance(node, ast.Return) and node.value is not None and not (
                isinstance(node.value, ast.Constant) and node.value.value is None):
            found = True
        nodes.extend(ast.iter_child_nodes(node))
    return found


def unwrapped(obj):
    obj = inspect.unwrap(getattr(obj, "__func__", obj))
    return obj


def test_the_walk_finds_every_public_name():
    names = {name for name, _ in PUBLIC}
    assert len(PUBLIC) > 60, len(PUBLIC)
    for expected in ("keras_bert.BertClassifier", "keras_bert.export.export_saved_model",
                     "keras_bert.text.BertTokenizer", "keras_bert.text.vocab.load_vocab",
                     "keras_bert.training.create_optimizer",
                     "keras_bert.models.task_compile.TaskCompile.compile",
                     "keras_bert.models.lora.LoraAdaptation.enable_lora",
                     "keras_bert.models.task_base.EncoderTaskModel.from_pretrained"):
        assert expected in names
    assert [cls.__name__ for cls in MODELS] == [
        "BertClassifier", "BertEncoder", "BertMultipleChoice", "BertPretrainer", "BertSpanLabeler",
        "BertTokenClassifier"]


def test_the_section_reader_reads_google_style():
    doc = inspect.cleandoc("""Summary.

        Args:
            first: one line.
            second (int): two
                lines.
            *args: more.

        Returns:
            The value.

        Text after the sections.
        """)
    found = sections(doc)
    assert documented_arguments(found["Args"]) == {"first", "second", "args"}
    assert found["Returns"] == ["The value."]
    # two names on one line are one entry for mkdocstrings: the second is not documented
    assert documented_arguments(["start_id: id of [CLS]. end_id: id of [SEP]."]) == {"start_id"}
    assert returns_value(sections) and not returns_value(test_the_section_reader_reads_google_style)


@pytest.mark.parametrize("name, obj", PUBLIC, ids=[name for name, _ in PUBLIC])
def test_public_name_is_documented(name, obj):
    doc = inspect.getdoc(obj)
    assert doc and len(doc.split()) >= 5, f"{name}: no docstring"
    found = sections(doc)
    wanted = arguments(obj)
    if wanted:
        assert "Args" in found, f"{name}{inspect.signature(obj)}: no Args: section"
        missing = set(wanted) - documented_arguments(found["Args"])
        assert not missing, f"{name}: Args: does not name {sorted(missing)}"
    if not inspect.isclass(obj) and returns_value(unwrapped(obj)):
        assert found.get("Returns") or found.get("Yields"), f"{name}: returns a value but has no Returns:"
    # help() shows it: pydoc's text (what help() prints) holds the summary line
    assert doc.splitlines()[0] in pydoc.render_doc(obj, renderer=pydoc.plaintext)


@pytest.mark.parametrize("model", MODELS, ids=[cls.__name__ for cls in MODELS])
def test_help_of_compile_shows_its_arguments(model):
    text = pydoc.render_doc(model.compile, renderer=pydoc.plaintext)
    assert "learning_rate" in text and "warmup_proportion" in text and "Raises:" in text
