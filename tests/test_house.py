"""The house rules that can be read off the package files (see ../shared/STYLE.md): private Keras internals
only in keras_bert/compat.py, which imports nothing of keras_bert; short module docstrings; short modules."""

import ast
import pathlib

PACKAGE_ROOT = pathlib.Path(__file__).resolve().parent.parent / "keras_bert"
MAX_DOCSTRING_LINES = 30
MAX_MODULE_LINES = 450
# Private Keras / TF names keras_bert/compat.py wraps: no other module may touch them.
COMPAT_ONLY_NAMES = {
    "_flatten_layers", "_kernel", "_int8_call", "_loss_tracker", "_compute_loss", "_convert_input_args",
    "_allow_non_tensor_positional_args", "_backend_update_step", "_apply_weight_decay", "_use_weight_decay",
    "_get_variable_index", "_momentums", "_velocities", "_all_reduce_sum_gradients", "_distribution_strategy",
    "_distributed_tf_update_step", "_distribute_strategy", "_maybe_symbolic_build", "__internal__",
    "_inbound_nodes", "_outputs_struct", "_inputs_struct",
}


def _modules():
    return {str(path.relative_to(PACKAGE_ROOT.parent)): path for path in sorted(PACKAGE_ROOT.rglob("*.py"))}


def _imported_names(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.module


def test_only_compat_imports_keras_src():
    importers = sorted(name for name, path in _modules().items()
                       if any(n == "keras.src" or n.startswith("keras.src.")
                              for n in _imported_names(ast.parse(path.read_text()))))
    assert importers == ["keras_bert/compat.py"], f"modules importing keras.src: {importers}"


def test_private_keras_names_only_in_compat():
    uses = sorted(f"{name}:{node.lineno} {node.attr if isinstance(node, ast.Attribute) else node.name}"
                  for name, path in _modules().items() if name != "keras_bert/compat.py"
                  for node in ast.walk(ast.parse(path.read_text()))
                  if isinstance(node, ast.Attribute) and node.attr in COMPAT_ONLY_NAMES
                  or isinstance(node, ast.FunctionDef) and node.name in COMPAT_ONLY_NAMES)
    assert not uses, f"private Keras/TF internals outside keras_bert/compat.py: {uses}"


def test_compat_imports_only_keras_and_tensorflow():
    names = set(_imported_names(ast.parse((PACKAGE_ROOT / "compat.py").read_text())))
    roots = {name.split(".")[0] for name in names}
    assert roots <= {"keras", "tensorflow"}, f"keras_bert/compat.py imports {sorted(roots)}"


def test_module_docstrings_are_short():
    long = {name: len(doc.splitlines()) for name, path in _modules().items()
            if (doc := ast.get_docstring(ast.parse(path.read_text()), clean=False))
            and len(doc.splitlines()) > MAX_DOCSTRING_LINES}
    assert not long, f"module docstrings over {MAX_DOCSTRING_LINES} lines (move figures to docs/): {long}"


def test_modules_are_short():
    long = {name: n for name, path in _modules().items()
            if (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split along their ideas): {long}"


TASK_NAMES = {"encoder", "pretrainer", "classifier", "span_labeler", "token_classifier", "multiple_choice"}
TASK_CLASSES = {"BertEncoder", "BertPretrainer", "BertClassifier", "BertSpanLabeler", "BertTokenClassifier",
                "BertMultipleChoice"}


def _names_a_task(node):
    if isinstance(node, ast.Constant):
        return node.value in TASK_NAMES
    if isinstance(node, ast.Attribute):
        return node.attr in TASK_CLASSES or node.attr == "task_kind"
    return isinstance(node, ast.Name) and node.id in TASK_CLASSES


def test_export_compares_against_no_task():
    """keras_bert/export/ asks the model what it serves: no comparison or isinstance against a task's name or
    class (adding a task touches the task's own class, not the export)."""
    found = []
    for name, path in _modules().items():
        if not name.startswith("keras_bert/export/"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            operands = []
            if isinstance(node, ast.Compare):
                operands = [node.left, *node.comparators]
            elif (isinstance(node, ast.Call)
                  and getattr(node.func, "id", None) in ("isinstance", "issubclass")):
                operands = node.args[1:]
            operands = [o for operand in operands for o in ast.walk(operand)]
            if any(_names_a_task(o) for o in operands):
                found.append(f"{name}:{node.lineno}")
    assert not found, f"task comparisons in keras_bert/export/: {found}"
