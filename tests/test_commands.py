"""`keras-bert COMMAND` / `python -m keras_bert COMMAND`: the listing in-process, and a built wheel installed
into a fresh virtual environment, run from an empty directory."""

import os
import re
import shutil
import subprocess
import sys
import sysconfig

import pytest

import keras_bert_commands as commands

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Modules of recipes/ and export/ that are not commands.
HELPERS = ("common", "flags", "logs", "run_dir")


def test_every_script_is_a_command():
    table = commands.commands()
    for package in commands.SCRIPT_PACKAGES:
        for name in os.listdir(os.path.join(REPO, package)):
            stem, ext = os.path.splitext(name)
            if ext == ".py" and stem not in HELPERS and stem != "__init__":
                assert table[stem][0] == package, stem
    assert not set(HELPERS) & set(table)
    assert table["save_keras_hub"][1] == ("Writes a keras_bert model as a KerasHub preset directory, for "
                                          "`keras_hub.models.*.from_preset`")


@pytest.mark.parametrize("argv", [["keras-bert"], ["keras-bert", "--help"], ["keras-bert", "-h"],
                                  ["keras-bert", "--helpfull"]])  # was: unknown command "--helpfull"
def test_listing(argv, capsys):
    assert commands.main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: keras-bert COMMAND [flags]")
    listed = re.findall(r"^  (\w+) +(.+)$", out, re.M)
    assert [name for name, _ in listed] == sorted(commands.commands())
    squad = "Fine-tunes BERT for extractive question answering on SQuAD v1.1 / v2.0 JSON files"
    assert ("run_squad", squad) in listed


def test_unknown_command(capsys):
    assert commands.main(["keras-bert", "run_classifer", "--do_train"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown command 'run_classifer'; `keras-bert --help` lists the commands: ")
    assert "run_classifier" in err and err.count("\n") == 1


def test_every_command_runs_as_logs_run_main():
    """`keras-bert X` runs `logs.run(module.main)` of the imported module `recipes.X`: what each script's
    `__main__` block does, so the two ways run the same thing."""
    import ast

    for name, (package, _) in commands.commands().items():
        with open(os.path.join(REPO, package, f"{name}.py"), encoding="utf-8") as f:
            tree = ast.parse(f.read())
        (block,) = [node for node in tree.body
                    if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)]
        assert [ast.unparse(line) for line in block.body] == ["logs.run(main)"], name


def test_a_script_runs_by_its_path_from_anywhere(tmp_path):
    """`python recipes/X.py`: Python puts recipes/ on sys.path, not the checkout; `recipes` and `keras_bert`
    are the installed packages (setup.py), with no path set up by the script or the environment."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KERAS_BERT_VERBOSE")}
    ran = subprocess.run([sys.executable, os.path.join(REPO, "recipes", "build_vocab.py"), "--helpfull"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr  # was: ModuleNotFoundError: No module named 'recipes'
    assert "--vocab_size" in ran.stdout
    assert ran.stderr == ""  # TensorFlow loaded inside keras_bert's quiet import: no C++ start-up line


def _venv_path(python, key):
    code = f"import sysconfig; print(sysconfig.get_paths()[{key!r}])"
    return subprocess.run([python, "-c", code], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(python, keras-bert script, env) of a fresh venv holding only the built wheel; the dependencies are
    those of the environment running the tests, seen through a .pth file."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"  # a copy: building writes build/ and *.egg-info beside setup.py
    for name in ("keras_bert", "keras_bert_servability", "recipes", "export"):
        shutil.copytree(os.path.join(REPO, name), source / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("setup.py", "keras_bert_commands.py"):
        shutil.copy(os.path.join(REPO, name), source / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "-w", str(tmp / "dist"), str(source)], check=True)
    (wheel,) = (tmp / "dist").glob("keras_bert_tf-*.whl")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = os.path.join(venv, "Scripts" if os.name == "nt" else "bin", os.path.basename(sys.executable))
    site = _venv_path(python, "purelib")
    ours = sysconfig.get_paths()
    with open(os.path.join(site, "test_dependencies.pth"), "w", encoding="utf-8") as f:
        f.write("\n".join(dict.fromkeys([ours["purelib"], ours["platlib"]])) + "\n")
    # --force-reinstall: the dependencies' site-packages may hold this checkout's editable install
    subprocess.run([sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps",
                    "--force-reinstall", "--no-index", str(wheel)], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "KERAS_BERT_VERBOSE")}
    return python, os.path.join(_venv_path(python, "scripts"), "keras-bert"), site, env


def _run(command, cwd, env):
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_installed_wheel_from_an_empty_directory(installed, tmp_path):
    python, keras_bert, site, env = installed
    empty = tmp_path / "empty"
    empty.mkdir()
    where = _run([python, "-c", "import importlib.util as u; print(*(u.find_spec(n).origin for n in "
                  "('keras_bert', 'recipes', 'export')))"], empty, env)
    # keras_bert and the script packages beside it, from the new venv
    expected = [os.path.join(site, name, "__init__.py") for name in ("keras_bert", "recipes", "export")]
    assert where.stdout.split() == expected, where.stderr

    listing = _run([keras_bert, "--help"], empty, env)
    assert listing.returncode == 0, listing.stderr
    assert all(f"  {name} " in listing.stdout for name in commands.commands())

    helpfull = _run([keras_bert, "run_classifier", "--helpfull"], empty, env)
    assert helpfull.returncode == 0, helpfull.stderr  # was 1, absl's status for it
    assert "--task_name" in helpfull.stdout and "--init_checkpoint" in helpfull.stdout
    as_module = _run([python, "-m", "keras_bert", "build_vocab", "--helpfull"], empty, env)
    assert as_module.returncode == 0, as_module.stderr
    assert "--vocab_size" in as_module.stdout
    assert "0000 00:00:" not in as_module.stderr  # the quiet logs set up before TensorFlow loaded

    (empty / "corpus.txt").write_text("the cat sat on the mat\nthe dog ate the cat food\n", encoding="utf-8")
    built = _run([keras_bert, "build_vocab", "--input_files=corpus.txt", "--output_file=vocab.txt",
                  "--vocab_size=40"], empty, env)
    assert built.returncode == 0, built.stderr
    assert "0000 00:00:" not in built.stderr
    tokens = (empty / "vocab.txt").read_text(encoding="utf-8").split()
    assert tokens[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert {"the", "cat", "##t"} <= set(tokens)
    assert sorted(os.listdir(empty)) == ["corpus.txt", "vocab.txt"]


    # An export script whose library half (keras_bert/export/servability) is found in the installed layout.
    servable = _run([keras_bert, "check_servable", "--export_dir=nothing/1", "--text=hi"], empty, env)
    assert servable.returncode == 1
    assert servable.stderr.strip() == ("error: [Errno 2] No such file or directory: "
                                       "'nothing/1/saved_model.pb' (given as --export_dir=nothing/1)")


def test_every_command_and_benchmark_imports_only_modules_that_exist():
    """What each command script and benchmark imports from this project (also inside functions) resolves,
    read from its source, not run (the scripts define flags of the same names, so they cannot all be
    imported in one process): a script left importing a module that moved fails its every run."""
    import ast
    import importlib
    import importlib.util

    project = ("keras_bert", "recipes", "export", "keras_bert_commands")
    missing = []
    scripts = [(name, os.path.join(REPO, package, f"{name}.py"))
               for name, (package, _) in commands.commands().items()]
    scripts += [(name, os.path.join(REPO, "benchmarks", name)) for name in
                sorted(os.listdir(os.path.join(REPO, "benchmarks"))) if name.endswith(".py")]
    project += ("benchmarks",)
    for name, path in scripts:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module.split(".")[0] in project:
                module = importlib.import_module(node.module)
                missing += [f"{name}: from {node.module} import {alias.name}" for alias in node.names
                            if not hasattr(module, alias.name)
                            and importlib.util.find_spec(f"{node.module}.{alias.name}") is None]
            elif isinstance(node, ast.Import):
                missing += [f"{name}: import {alias.name}" for alias in node.names
                            if alias.name.split(".")[0] in (*project, "preamble")
                            and importlib.util.find_spec(alias.name) is None]
    assert not missing, missing
