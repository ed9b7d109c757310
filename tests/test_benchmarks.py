"""benchmarks/ as a tool, read off its files without running a benchmark: no import cycles, no private name
used across modules, the shared helpers in the shared modules, one command-line style whose `--help` works."""

import ast
import importlib
import pathlib

import pytest

from tests.test_import_cycles import cycles, import_graph, module_files

BENCHMARKS_ROOT = pathlib.Path(__file__).resolve().parent.parent / "benchmarks"
SHARED = {"benchmarks", "benchmarks.common", "benchmarks.inputs"}
DRIVER = "benchmarks.run_all"  # reads the other scripts' reports to build one table
MODULES = module_files(BENCHMARKS_ROOT)
SCRIPTS = sorted(name for name, path in MODULES.items() if 'if __name__ == "__main__"' in path.read_text())


def _tree(module):
    return ast.parse(MODULES[module].read_text(), str(MODULES[module]))


def _functions(tree):
    return {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}


def test_every_benchmark_module_is_found():
    assert {"benchmarks.run_all", "benchmarks.serving_peers", "benchmarks.serving_profile"} <= set(SCRIPTS)
    assert not SHARED - {"benchmarks"} & set(SCRIPTS)


def test_no_import_cycles():
    assert cycles(import_graph(MODULES)) == []


def test_scripts_import_only_the_shared_modules():
    graph = import_graph(MODULES)
    wrong = {module: sorted(graph[module] - SHARED) for module in SCRIPTS if module != DRIVER}
    assert {module: names for module, names in wrong.items() if names} == {}
    assert {module: sorted(graph[module]) for module in SHARED if graph.get(module, set()) - SHARED} == {}


def test_no_private_name_crosses_modules():
    found = []
    for module in MODULES:
        tree = _tree(module)
        aliases = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("benchmarks"):
                found += [f"{module}:{node.lineno} {a.name}" for a in node.names if a.name.startswith("_")]
                aliases |= {a.asname or a.name for a in node.names if f"{node.module}.{a.name}" in MODULES}
        found += [f"{module}:{node.lineno} {node.value.id}.{node.attr}" for node in ast.walk(tree)
                  if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                  and node.value.id in aliases and node.attr.startswith("_")]
    assert found == []


def test_cpu_flags_come_from_the_library():
    readers = [module for module in MODULES if "cpu_flags" in _functions(_tree(module))]
    assert readers == []


def test_reported_cpu_flags_are_the_librarys(monkeypatch):
    from benchmarks import common
    from keras_bert import execution

    monkeypatch.setattr(execution, "cpu_flags", lambda: frozenset({"sse2", "amx_int8", "avx2", "amx_bf16"}))
    assert common.reported_cpu_flags() == "avx2 amx_bf16 amx_int8"


@pytest.mark.parametrize("module", SCRIPTS)
def test_script_has_the_one_command_line_style(module):
    tree = _tree(module)
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    assert not {"absl", "absl.app", "absl.flags", "argparse", "sys.argv"} & imported, module
    functions = _functions(tree)
    assert "command_line" in functions, f"{module}: no command_line() building its flags"
    main = functions.get("main")
    assert main is not None and [a.arg for a in main.args.args] == ["argv"], f"{module}: main(argv=None) expected"
    first = ast.unparse(main.body[0])
    assert "command_line().parse_args(argv)" in first or first == "parser = command_line()", module


@pytest.mark.parametrize("module", SCRIPTS)
def test_script_help_works(module, capsys):
    script = importlib.import_module(module)
    with pytest.raises(SystemExit) as exit_info:
        script.main(["--help"])
    assert exit_info.value.code == 0
    summary = script.__doc__.strip().splitlines()[0]
    out = capsys.readouterr().out
    assert out.startswith("usage: ") and summary in " ".join(out.split()), out[:300]
