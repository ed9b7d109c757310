"""The house rules that can be read off the package files (see ../shared/STYLE.md): private Keras internals
only in keras_bert/compat.py, which imports nothing of keras_bert; short module docstrings; short modules."""

import ast
import pathlib
import sys

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


def test_compat_imports_only_keras_tensorflow_and_tf_text():
    """Keras, TensorFlow and tf-text (whose internals it wraps too; all three are install requirements)."""
    names = set(_imported_names(ast.parse((PACKAGE_ROOT / "compat.py").read_text())))
    roots = {name.split(".")[0] for name in names} - set(sys.stdlib_module_names)
    allowed = {"keras", "tensorflow", "tensorflow_text"}
    assert roots <= allowed, f"keras_bert/compat.py imports {sorted(roots)}"


def test_module_docstrings_are_short():
    long = {name: len(doc.splitlines()) for name, path in _modules().items()
            if (doc := ast.get_docstring(ast.parse(path.read_text()), clean=False))
            and len(doc.splitlines()) > MAX_DOCSTRING_LINES}
    assert not long, f"module docstrings over {MAX_DOCSTRING_LINES} lines (move figures to docs/): {long}"


def test_modules_are_short():
    long = {name: n for name, path in _modules().items()
            if (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split along their ideas): {long}"


def _task_names():
    """(task kinds and distinctive names, model class names) of the registry's task folders and of the models
    floor's encoder and the pre-training folder's model (BertEncoder, BertPretrainer)."""
    from keras_bert.models.encoder import BertEncoder
    from keras_bert.tasks import registry
    from keras_bert.tasks.pretraining.model import BertPretrainer

    models = (BertEncoder, BertPretrainer)
    names = {name for spec in registry.specs() for name in (spec.kind, *spec.names)}
    return names | {model.task_kind for model in models}, names | {model.__name__ for model in models}


def _names_a_task(node, names, classes):
    if isinstance(node, ast.Constant):
        return node.value in names
    if isinstance(node, ast.Attribute):
        return node.attr in classes or node.attr == "task_kind"
    return isinstance(node, ast.Name) and node.id in classes


def test_export_compares_against_no_task():
    """keras_bert/export/ asks the model what it serves: no comparison or isinstance against a task's name or
    class (adding a task touches the task's own class, not the export)."""
    names, classes = _task_names()
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
            if any(_names_a_task(o, names, classes) for o in operands):
                found.append(f"{name}:{node.lineno}")
    assert not found, f"task comparisons in keras_bert/export/: {found}"


# The task rule (docs/adding_a_task.md): a task lives in its folder keras_bert/tasks/<task>/, whose spec.py
# declares its distinctive names (`TaskSpec.names`: classes, kind, option fields, served outputs). No module
# of the shared code names a task, nor imports from its folder; keras_bert/__init__.py exports the task
# models, keras_bert/tasks/registry.py lists the folders, and each task's own recipe script (recipes/run_*.py,
# its driver) and tests may name it. A string that a folder's spec declares as another format's key
# (`TaskSpec.foreign_keys`: transformers' "classifier" state-dict prefix of the token and multiple-choice
# heads) may be spelled as a string in that folder only.
REPO_ROOT = PACKAGE_ROOT.parent
SHARED_CODE = ("keras_bert", "export", "recipes/common.py", "recipes/flags.py", "recipes/run_dir.py",
               "recipes/__init__.py", "recipes/logs.py", "keras_bert_commands.py", "tests/harness.py")
EXPORTS = ("keras_bert/__init__.py", "keras_bert/tasks/registry.py")  # the task models; the task folders


def _shared_modules():
    for entry in SHARED_CODE:
        path = REPO_ROOT / entry
        for module in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            name = str(module.relative_to(REPO_ROOT))
            if name not in EXPORTS:
                yield name, module


def _violations_by_module():
    specs, foreign = _task_specs(), _foreign_keys()
    modules = {name: path.read_text() for name, path in _shared_modules()}
    found = {}
    for violation in task_rule_violations(modules, specs, foreign):
        found.setdefault(violation.split(":")[0], []).append(violation)
    return found


def _spoken_names(tree):
    """(line, name, is a string) of every identifier, attribute, keyword, argument, definition, imported
    module or name, and whole string constant of `tree`."""
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Name):
            yield line, node.id, False
        elif isinstance(node, ast.Attribute):
            yield line, node.attr, False
        elif isinstance(node, ast.alias):
            yield line, node.name, False
        elif isinstance(node, ast.keyword | ast.arg) and (node.arg is not None):
            yield line, node.arg, False
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            yield line, node.name, False
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield line, node.module, False
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield line, node.value, True


def _folder(module):
    parts = module.split("/")
    return parts[2] if parts[:2] == ["keras_bert", "tasks"] and len(parts) > 3 else None


def task_rule_violations(modules, specs, foreign=None):
    """["path:line names `name` of task <folder>"] of `modules` ({path: source}) against `specs`
    ({folder: names}): a module in a task's folder may name only that task, and spell as strings the other
    formats' keys its own folder declares (`foreign`: {folder: strings})."""
    found = []
    for name, source in modules.items():
        own = (foreign or {}).get(_folder(name), ())
        for folder, names in specs.items():
            if name.startswith(f"keras_bert/tasks/{folder}/"):
                continue
            banned = set(names)
            package = f"keras_bert.tasks.{folder}"
            for line, spoken, string in _spoken_names(ast.parse(source)):
                if string and spoken in own:
                    continue
                if spoken in banned or spoken == package or spoken.startswith(package + "."):
                    found.append(f"{name}:{line} names `{spoken}` of task {folder}")
    return found


def _task_specs():
    """{task folder: its distinctive names}, as keras_bert/tasks/registry.py lists the folders."""
    from keras_bert.tasks import registry

    return {folder: spec.names for folder, spec in registry.SPECS.items()}


def _foreign_keys():
    """{task folder: the other formats' keys its spec declares (`TaskSpec.foreign_keys`)}."""
    from keras_bert.tasks import registry

    return {folder: spec.foreign_keys for folder, spec in registry.SPECS.items()}


def test_the_registry_lists_every_task_folder():
    """A folder with a spec.py that keras_bert/tasks/registry.py does not import would escape the task rule,
    the converters' heads and the export's flags."""
    from keras_bert.tasks import registry

    folders = sorted(path.parent.name for path in (PACKAGE_ROOT / "tasks").glob("*/spec.py"))
    assert sorted(registry.SPECS) == folders


def test_no_shared_module_names_a_task():
    specs = _task_specs()
    assert len(specs) >= 4 and all(specs.values())
    found = [v for found in _violations_by_module().values() for v in found]
    assert not found, "shared code names a task (move the code into the task's folder and loop over what " \
        "the tasks declare, keras_bert/tasks/registry.py):\n" + "\n".join(found)


def test_the_task_rule_catches_a_violation():
    specs = _task_specs()
    folder, names = next(iter(specs.items()))
    shared = (f"def f(model):\n    return model.{names[0]}, {names[-1]!r}\n"
              f"from keras_bert.tasks.{folder} import x\n")
    found = task_rule_violations({"keras_bert/export/bad.py": shared,
                                  f"keras_bert/tasks/{folder}/ok.py": shared}, specs)
    assert sorted(found) == [f"keras_bert/export/bad.py:2 names `{names[0]}` of task {folder}",
                     f"keras_bert/export/bad.py:2 names `{names[-1]}` of task {folder}",
                     f"keras_bert/export/bad.py:3 names `keras_bert.tasks.{folder}` of task {folder}"]


def test_a_foreign_key_is_spelled_only_where_its_spec_declares_it():
    """transformers spells the token and multiple-choice heads' state-dict prefix "classifier": the folder
    declaring it as a foreign key may write that string; an identifier of that name, or the string in another
    folder or in shared code, is still a violation."""
    specs, foreign = _task_specs(), _foreign_keys()
    clashes = [(folder, other, key) for folder, keys in foreign.items() for key in sorted(keys)
               for other, names in specs.items() if other != folder and key in names]
    assert clashes, "no spec declares a foreign key spelled as another task's name"
    folder, other, key = clashes[0]
    stranger = next(name for name in specs if key not in foreign[name] and name != other)
    declared = f"HEAD = dict(prefix={key!r})\n"
    found = task_rule_violations({f"keras_bert/tasks/{folder}/spec.py": declared,
                                  f"keras_bert/tasks/{folder}/model.py": f"def f(m):\n    return m.{key}\n",
                                  f"keras_bert/tasks/{stranger}/spec.py": declared,
                                  "keras_bert/checkpoints/bad.py": declared}, specs, foreign)
    assert sorted(found) == sorted([f"keras_bert/tasks/{folder}/model.py:2 names `{key}` of task {other}",
                                    f"keras_bert/tasks/{stranger}/spec.py:1 names `{key}` of task {other}",
                                    f"keras_bert/checkpoints/bad.py:1 names `{key}` of task {other}"])
