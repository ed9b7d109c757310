"""`keras-bert COMMAND [flags]` (or `python -m keras_bert COMMAND`): the recipe and export scripts by name.

A command is a script of `recipes/` or `export/` with a `__main__` block; it runs as `python -m recipes.X`
does (same module names, same preamble, same exit status). `keras-bert` alone or `--help` lists them.

Where the scripts are: a wheel carries them as `keras_bert/_scripts/{recipes,export}` (setup.py's
package_dir), so that no top-level `recipes`/`export` package lands in site-packages; a source checkout has
them beside `keras_bert/`. Either folder goes first on sys.path, so `from recipes import ...` resolves to the
scripts of the keras_bert that runs.

Standard library only (no keras_bert import of its own): the listing stays instant and a command's
preamble runs before TensorFlow loads (the console script loads this file without keras_bert's __init__).
"""

import ast
import importlib
import importlib.util
import os
import runpy
import sys

SCRIPT_PACKAGES = ("recipes", "export")
PROGRAM = "keras-bert"


def scripts_root():
    """The folder holding `recipes/` and `export/` for the keras_bert found on sys.path (its __init__ is not
    run). Raises FileNotFoundError when neither the wheel's folder nor a checkout's has them."""
    package_dir = importlib.util.find_spec("keras_bert").submodule_search_locations[0]
    for root in (os.path.join(package_dir, "_scripts"), os.path.dirname(package_dir)):
        if os.path.isfile(os.path.join(root, "recipes", "logs.py")):
            return root
    raise FileNotFoundError(f"no recipes/ beside or inside {package_dir}: reinstall keras_bert")


def _summary(path):
    """(is a command, first sentence of its docstring) of the script at `path`, read without running it."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    is_main = any(isinstance(node, ast.If) and "__main__" in ast.unparse(node.test) for node in tree.body)
    paragraph = " ".join((ast.get_docstring(tree) or "").split("\n\n")[0].split())
    return is_main, paragraph.split(". ")[0].rstrip(".")


def commands(root=None):
    """{command name: (script package, one-line summary)} for every script with a `__main__` block."""
    root = root or scripts_root()
    found = {}
    for package in SCRIPT_PACKAGES:
        folder = os.path.join(root, package)
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


def _put_first(root):
    if root not in sys.path[:1]:
        sys.path.insert(0, root)


def _located_by_dash_m():
    """True while `python -m keras_bert` locates keras_bert: its __init__ runs before __main__, with
    sys.argv[0] "-m" (the interpreter's own arguments, sys.orig_argv, name the module)."""
    if sys.argv[:1] != ["-m"]:
        return False
    for i, arg in enumerate(sys.orig_argv[1:], 1):
        if arg.startswith("-m"):
            return (arg[2:] or "".join(sys.orig_argv[i + 1:i + 2])) == "keras_bert"
    return False


def quiet_if_command():
    """Under `python -m keras_bert COMMAND`: the command's quiet logs (recipes/logs.py) set up before
    keras_bert's __init__ imports TensorFlow, as the script's preamble does for `python -m recipes.X`."""
    if not _located_by_dash_m():
        return
    root = scripts_root()
    if sys.argv[1:2] and sys.argv[1] in commands(root):
        _put_first(root)
        importlib.import_module("recipes.logs").quiet("__main__")


def main(argv=None):
    """Runs the command named by argv[1] (default sys.argv) with the flags after it; returns an exit
    status only for the listing or an unknown command (a command exits as its script does)."""
    argv = list(sys.argv if argv is None else argv)
    root = scripts_root()
    table = commands(root)
    if len(argv) < 2 or argv[1] in ("-h", "--help", "--helpfull", "--helpshort", "help"):
        print(usage(table))
        return 0
    name = argv[1]
    if name not in table:
        print(f"error: unknown command {name!r}; `{PROGRAM} --help` lists the commands: {', '.join(table)}",
              file=sys.stderr)
        return 2
    _put_first(root)
    sys.argv = [PROGRAM, *argv[2:]]  # runpy sets argv[0] to the script's path, as `python -m recipes.X` does
    runpy.run_module(f"{table[name][0]}.{name}", run_name="__main__", alter_sys=True)
    return 0


quiet_if_command()  # keras_bert's __init__ imports this module first, before TensorFlow
