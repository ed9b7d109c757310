"""No import cycles in keras_bert/: every import (module level and inside functions), read statically, and
`importlib.import_module("name")` / `__import__("name")` calls too; a dynamic import whose name is built from
`__package__`, `__name__` or "keras_bert" cannot be read, so it is refused (import such modules by name)."""

import ast
import json
import os
import pathlib
import subprocess
import sys

PACKAGE_ROOT = pathlib.Path(__file__).resolve().parent.parent / "keras_bert"


def module_files(root=PACKAGE_ROOT):
    """{dotted module name: path} of every .py file under `root` (a package's name is its __init__'s)."""
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _resolve(node, module, is_package):
    """The absolute names an import node may refer to: `from a import b` yields `a.b` (if b is a module)
    and `a`."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        anchor = module.split(".")
        anchor = anchor if is_package else anchor[:-1]
        anchor = anchor[: len(anchor) - (node.level - 1)]
        base = ".".join(anchor + ([base] if base else []))
    return [base] + [f"{base}.{alias.name}" for alias in node.names]


def _dynamic_import(node):
    """The name argument of an `importlib.import_module(...)` or `__import__(...)` call node, else None."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    return node.args[0] if name in ("import_module", "__import__") else None


def _unreadable(argument, package):
    """True for a dynamic import name that is not a string constant and may name a module of `package`."""
    if isinstance(argument, ast.Constant):
        return False
    spoken = [n.id for n in ast.walk(argument) if isinstance(n, ast.Name)]
    strings = [n.value for n in ast.walk(argument) if isinstance(n, ast.Constant)]
    return (any(name in ("__package__", "__name__") for name in spoken)
            or any(isinstance(string, str) and string.startswith(package) for string in strings))


def unreadable_imports(modules):
    """["module:line"] of the dynamic imports of `modules` whose name the graph cannot read (built from
    `__package__`, `__name__` or the package's own name)."""
    return [f"{module}:{node.lineno}" for module, path in modules.items()
            for node in ast.walk(ast.parse(path.read_text(), str(path)))
            if (name := _dynamic_import(node)) is not None and _unreadable(name, module.split(".")[0])]


def import_graph(modules):
    """{module: set of modules of `modules` it imports directly}, from every Import/ImportFrom node and every
    `importlib.import_module` / `__import__` call with a string constant."""
    graph = {}
    for module, path in modules.items():
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            argument = _dynamic_import(node)
            if isinstance(argument, ast.Constant) and argument.value in modules:
                edges.add(argument.value)
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            names = _resolve(node, module, path.name == "__init__.py")
            if isinstance(node, ast.ImportFrom):
                # `from pkg import mod` imports the module mod, `from pkg import name` only pkg.
                named = [n for n in names[1:] if n in modules]
                names = named or names[:1]
            edges.update(n for n in names if n in modules and n != module)
        graph[module] = edges
    return graph


def cycles(graph):
    """The strongly connected components of more than one module (sorted lists), found by Tarjan's
    algorithm."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph[node]):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_finds_a_cycle_through_a_function_level_import(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("from .b import B\n")
    (package / "a.py").write_text("def f():\n    from pkg.sub import b\n")
    (package / "sub" / "b.py").write_text("from .. import a\nB = 1\n")
    (package / "c.py").write_text("import pkg.a\n")
    graph = import_graph(module_files(package))
    assert graph == {"pkg": set(), "pkg.a": {"pkg.sub.b"}, "pkg.c": {"pkg.a"}, "pkg.sub": {"pkg.sub.b"},
                     "pkg.sub.b": {"pkg.a"}}
    assert cycles(graph) == [["pkg.a", "pkg.sub.b"]]


def test_finds_a_cycle_through_importlib(tmp_path):
    """A cycle closed only by `importlib.import_module` is found; a name the graph cannot read is refused."""
    package = tmp_path / "pkg"
    (package / "tasks").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "floor.py").write_text("import importlib\n\n\ndef heads():\n"
                                      "    return importlib.import_module('pkg.tasks.spec').HEAD\n")
    (package / "tasks" / "__init__.py").write_text("")
    (package / "tasks" / "spec.py").write_text("from pkg import floor\nHEAD = 1\n")
    (package / "tasks" / "found.py").write_text(
        "import importlib\n\n\ndef specs(name):\n"
        "    return importlib.import_module(f'{__package__}.{name}.spec'), __import__('pkg.' + name)\n")
    modules = module_files(package)
    assert cycles(import_graph(modules)) == [["pkg.floor", "pkg.tasks.spec"]]
    assert unreadable_imports(modules) == ["pkg.tasks.found:5", "pkg.tasks.found:5"]


def test_keras_bert_imports_every_module_by_name():
    found = unreadable_imports(module_files())
    assert not found, "dynamic imports of a keras_bert module by a computed name (import it by name):\n" + \
        "\n".join(found)


def test_keras_bert_has_no_import_cycles():
    found = cycles(import_graph(module_files()))
    assert not found, "modules that import each other in a cycle:\n" + "\n".join(", ".join(c) for c in found)


FLOORS = ("text", "layers", "data", "checkpoints", "models", "metrics")


def test_floors_import_no_task():
    """The floors below keras_bert/tasks never import it: what a task declares reaches them as data
    (`keras_bert.checkpoints.heads`, the model's own `options_class`)."""
    graph = import_graph(module_files())
    found = sorted(f"{module} imports {target}" for module, targets in graph.items()
                   if module.split(".")[1:2] and module.split(".")[1] in FLOORS
                   for target in targets if target.startswith("keras_bert.tasks"))
    assert not found, "\n".join(found)


# A fresh process: what `import keras_bert` changes beyond defining keras_bert's own modules.
_IMPORT_ONLY = """
import json, sys
path, argv, before = list(sys.path), list(sys.argv), set(sys.modules)
import keras_bert
print(json.dumps({"path_changed": sys.path != path, "argv_changed": sys.argv != argv,
                  "new_top_level": sorted({m.split(".")[0] for m in set(sys.modules) - before})}))
"""


def test_importing_keras_bert_only_defines_it(tmp_path):
    """No sys.path edit, no command module or script package imported, nothing of ours under another name
    (was: keras_bert_commands, recipes.logs and the scripts' folder on sys.path)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    ran = subprocess.run([sys.executable, "-c", _IMPORT_ONLY], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr
    assert ran.stderr == ""  # TensorFlow's C++ start-up lines stay off (keras_bert/native_logs.py)
    found = json.loads(ran.stdout.splitlines()[-1])
    assert not found["path_changed"] and not found["argv_changed"]
    ours = {"keras_bert_commands", "recipes", "export", "servability", "benchmarks", "tests"}
    assert "keras_bert" in found["new_top_level"] and not ours & set(found["new_top_level"]), found
    assert not [m for m in found["new_top_level"] if m.startswith("_served")], found


# Every module that ships (setup.py's packages and module): what no import by name may be replaced with.
SHIPPED = [PACKAGE_ROOT.parent / name for name in
           ("keras_bert", "keras_bert_servability", "recipes", "export", "keras_bert_commands.py")]


def path_tricks(paths):
    """["file:line what"] of every module loaded by file path (`spec_from_file_location`, `runpy`), sys.path
    edit (`sys.path.insert/append/extend`, `sys.path[...] =`) or module planted in `sys.modules[...]`."""
    found = []  # (file, line, what)
    for path in sorted(p for root in paths for p in ([root] if root.is_file() else root.rglob("*.py"))):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            text = ast.unparse(node) if isinstance(node, ast.Attribute | ast.Assign | ast.AugAssign) else ""
            if isinstance(node, ast.Attribute) and (
                    node.attr in ("spec_from_file_location", "run_path", "run_module")
                    or text in ("sys.path.insert", "sys.path.append", "sys.path.extend")):
                found.append((str(path), node.lineno, text))
            elif isinstance(node, ast.Import | ast.ImportFrom) and any(
                    "runpy" in (alias.name, getattr(node, "module", None)) for alias in node.names):
                found.append((str(path), node.lineno, "import runpy"))
            elif isinstance(node, ast.Assign | ast.AugAssign) and any(
                    ast.unparse(t) in ("sys.path", "sys.modules")
                    or ast.unparse(t).startswith(("sys.modules[", "sys.path["))
                    for t in getattr(node, "targets", [getattr(node, "target", None)])):
                found.append((str(path), node.lineno, text.splitlines()[0]))
    return [f"{os.path.relpath(file, PACKAGE_ROOT.parent)}:{line} {what}"
            for file, line, what in sorted(found)]


def test_path_tricks_are_found(tmp_path):
    (tmp_path / "tricks.py").write_text(
        "import importlib.util, runpy, sys\nsys.path.insert(0, 'x')\nsys.modules['tensorflow'] = object()\n"
        "spec = importlib.util.spec_from_file_location('m', 'm.py')\nsys.path += ['y']\n"
        "runpy.run_path('s.py')\n")
    found = [line.rsplit("/", 1)[-1] for line in path_tricks([tmp_path])]
    assert found == ["tricks.py:1 import runpy", "tricks.py:2 sys.path.insert",
                     "tricks.py:3 sys.modules['tensorflow'] = object()",
                     "tricks.py:4 importlib.util.spec_from_file_location", "tricks.py:5 sys.path += ['y']",
                     "tricks.py:6 runpy.run_path"]


def test_shipped_modules_import_by_name_only():
    """No module is loaded by its file path or planted in sys.modules, and sys.path is never edited: each
    module imports under one name, the one it is installed under."""
    found = path_tricks(SHIPPED)
    assert not found, "imports by path, sys.path edits or sys.modules entries:\n" + "\n".join(found)
