"""`keras-bert COMMAND [flags]` (or `python -m keras_bert COMMAND`): the recipe and export scripts by name.

A command is a script of `recipes/` or `export/` with a `__main__` block; it runs as `python -m recipes.X`
does (the module run as `__main__` by runpy: same module names, same flags, same exit status).
`keras-bert` alone or `--help` lists them.

Where the scripts are: a wheel carries them as `keras_bert/_scripts/{recipes,export}` (setup.py's
package_dir), so that no top-level `recipes`/`export` package lands in site-packages; a source checkout has
them beside `keras_bert/`. A command puts that folder first on sys.path, so `from recipes import ...`
resolves to the scripts of the keras_bert that runs (docs/scripts.md).

Standard library only and outside keras_bert (whose __init__ imports TensorFlow): the listing stays instant,
and `quiet_if_script` sets a script's quiet logs before TensorFlow loads; keras_bert's __init__ and the
`recipes` package import this module first for that.
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


def _dash_m_module():
    """The module `python -m` is locating (its package's __init__ runs before sys.argv[0] is set from "-m":
    the interpreter's own arguments, sys.orig_argv, name it), or None."""
    if sys.argv[:1] != ["-m"]:
        return None
    for i, arg in enumerate(sys.orig_argv[1:], 1):
        if arg.startswith("-m"):
            return arg[2:] or "".join(sys.orig_argv[i + 1:i + 2])
    return None


def _running_a_script(root):
    """True when the program is one of the scripts: `python -m keras_bert COMMAND`, `python -m recipes.X` /
    `export.X`, or `python recipes/X.py` / `export/X.py` (the `__main__` module's file in their folders)."""
    module = _dash_m_module()
    if module == "keras_bert":
        return sys.argv[1:2] != [] and sys.argv[1] in commands(root)
    if module is not None:
        return module.split(".")[0] in SCRIPT_PACKAGES
    main_file = getattr(sys.modules.get("__main__"), "__file__", None)
    folders = {os.path.realpath(os.path.join(root, package)) for package in SCRIPT_PACKAGES}
    return bool(main_file) and os.path.dirname(os.path.realpath(main_file)) in folders


def _quiet():
    importlib.import_module("recipes.logs").quiet("__main__")


def quiet_if_script():
    """A script's quiet logs (recipes/logs.py), set before TensorFlow loads: keras_bert's __init__ and the
    `recipes` package import this module first, whichever a script imports first. Under `python -m
    keras_bert COMMAND` the scripts' folder goes first on sys.path here (`main` runs the command from it)."""
    root = scripts_root()
    if _running_a_script(root):
        if _dash_m_module() == "keras_bert":
            _put_first(root)
        _quiet()


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
    _quiet()
    sys.argv = [PROGRAM, *argv[2:]]  # runpy sets argv[0] to the script's path, as `python -m recipes.X` does
    runpy.run_module(f"{table[name][0]}.{name}", run_name="__main__", alter_sys=True)
    return 0


quiet_if_script()

if __name__ == "__main__":  # python -m keras_bert_commands COMMAND: a command without keras_bert's __init__
    sys.exit(main())
