"""`keras-bert COMMAND [flags]` (or `python -m keras_bert COMMAND`): the recipe and export scripts by name.

A command is a script of the `recipes` or `export` package with a `__main__` block (`logs.run(main)`);
`keras-bert X` imports the module `recipes.X` (or `export.X`) by name and runs `logs.run(module.main)`, as
`python -m recipes.X` does: same flags, same exit status. `keras-bert` alone or `--help` lists them.

The packages `recipes` and `export` are installed beside `keras_bert` (setup.py), so every way of running a
script imports them by name; nothing here changes `sys.path` (docs/scripts.md). Standard library only until a
command runs: the listing reads the scripts' files without importing TensorFlow.
"""

import ast
import importlib
import importlib.util
import os
import sys

SCRIPT_PACKAGES = ("recipes", "export")
PROGRAM = "keras-bert"


def package_dir(package):
    """The folder of the installed script package `package` ("recipes" or "export"), found without importing
    it. Raises FileNotFoundError when it is not installed."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"no {package!r} package beside keras_bert: reinstall keras-bert-tf")
    return spec.submodule_search_locations[0]


def _summary(path):
    """(is a command, first sentence of its docstring) of the script at `path`, read without running it."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    is_main = any(isinstance(node, ast.If) and "__main__" in ast.unparse(node.test) for node in tree.body)
    paragraph = " ".join((ast.get_docstring(tree) or "").split("\n\n")[0].split())
    return is_main, paragraph.split(". ")[0].rstrip(".")


def commands():
    """{command name: (script package, one-line summary)} for every script with a `__main__` block."""
    found = {}
    for package in SCRIPT_PACKAGES:
        folder = package_dir(package)
        for name in sorted(os.listdir(folder)):
            stem, ext = os.path.splitext(name)
            if ext == ".py" and not stem.startswith("_"):
                is_main, line = _summary(os.path.join(folder, name))
                if is_main:
                    found.setdefault(stem, (package, line))
    return found


def usage(table):
    """The text `keras-bert --help` prints: how to call, then one line per command."""
    width = max(map(len, table))
    lines = [f"usage: {PROGRAM} COMMAND [flags]   (or: python -m keras_bert COMMAND [flags])", "",
             "commands (COMMAND --helpfull lists its flags):"]
    lines += [f"  {name:<{width}}  {summary}" for name, (_, summary) in sorted(table.items())]
    return "\n".join(lines)


def main(argv=None):
    """Runs the command named by argv[1] (default sys.argv) with the flags after it; returns an exit
    status only for the listing or an unknown command (a command exits as its script does)."""
    argv = list(sys.argv if argv is None else argv)
    table = commands()
    if len(argv) < 2 or argv[1] in ("-h", "--help", "--helpfull", "--helpshort", "help"):
        print(usage(table))
        return 0
    name = argv[1]
    if name not in table:
        print(f"error: unknown command {name!r}; `{PROGRAM} --help` lists the commands: {', '.join(table)}",
              file=sys.stderr)
        return 2
    package = table[name][0]
    # argv[0] the script's path, as under `python -m recipes.X` (absl's usage line, `logs.recipe_name`)
    sys.argv = [os.path.join(package_dir(package), f"{name}.py"), *argv[2:]]
    logs = importlib.import_module("recipes.logs")
    module = importlib.import_module(f"{package}.{name}")
    return logs.run(module.main)


if __name__ == "__main__":  # python -m keras_bert_commands COMMAND: a command without keras_bert's __main__
    sys.exit(main())
