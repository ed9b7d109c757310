"""MkDocs hooks of the docs site (mkdocs.yml `hooks:`): the recipes' flag reference, the API coverage check.

- `reference/flags.md` holds the marker `<!-- flags -->`; the build replaces it with one table per command
  of `keras-bert` (name, type, default, help), read from the absl flag definitions the command's module makes
  when imported: the page cannot drift from the flags.
- Every public name (`keras_bert.__all__`, `keras_bert.export.__all__`, `keras_bert.text.__all__`) must have a
  `::: identifier` block on some page under `reference/`, or the build fails naming it.
"""

import glob
import importlib
import os
import re
import sys

from mkdocs.exceptions import PluginError

MARKER = "<!-- flags -->"


def public_names():
    """The dotted names the API reference must document."""
    import keras_bert
    import keras_bert.export
    import keras_bert.text

    names = [f"keras_bert.{name}" for name in keras_bert.__all__]
    names += [f"keras_bert.export.{name}" for name in keras_bert.export.__all__]
    names += [f"keras_bert.text.{name}" for name in keras_bert.text.__all__]
    return names


def documented_names(docs_dir):
    """The identifiers of the `::: identifier` blocks of the reference pages."""
    found = set()
    for path in glob.glob(os.path.join(docs_dir, "reference", "*.md")):
        with open(path, encoding="utf-8") as f:
            found.update(re.findall(r"^::: *([\w.]+)", f.read(), flags=re.M))
    return found


def _cell(text, code=False):
    """`text` as one Markdown table cell (in a code span when `code`: no HTML escapes there)."""
    text = " ".join(str(text).split())
    if not code:
        text = text.replace("&", "&amp;").replace("<", "&lt;")
    return text.replace("|", "\\|")


def command_flags():
    """[(command, summary, [(flag, type, default, help)])] for every `keras-bert` command, each read from
    the flags its module defines when imported (the modules are forgotten between commands, so each
    command's shared flags are its own)."""
    from absl import flags

    import keras_bert_commands

    registry = flags.FLAGS
    base = set(registry)
    table = []
    for command, (package, summary) in sorted(keras_bert_commands.commands().items()):
        importlib.import_module(f"{package}.{command}")
        new = [name for name in registry if name not in base]
        rows, seen = [], set()
        for name in sorted(new):
            flag = registry[name]
            if flag.name in seen:  # a short name of a flag already listed
                continue
            seen.add(flag.name)
            default = flag.default_as_str or ""
            if flag.flag_type() not in ("string", "string enum"):
                default = default.strip("'")
            rows.append((flag.name, flag.flag_type(), default, flag.help or ""))
        table.append((command, summary, rows))
        for name in new:
            delattr(registry, name)
        for module in [m for m in sys.modules if m.split(".")[0] in keras_bert_commands.SCRIPT_PACKAGES]:
            del sys.modules[module]
    return table


def flags_markdown():
    out = []
    for command, summary, rows in command_flags():
        out += [f"## {command}", "", f"`keras-bert {command}`: {_cell(summary)}.", ""]
        if not rows:
            out += ["No flags.", ""]
            continue
        out += ["| flag | type | default | meaning |", "|---|---|---|---|"]
        out += [f"| `--{name}` | {kind} | `{_cell(default, code=True)}` | {_cell(text)} |" if default else
                f"| `--{name}` | {kind} | | {_cell(text)} |" for name, kind, default, text in rows]
        out.append("")
    return "\n".join(out)


def on_config(config):
    missing = sorted(set(public_names()) - documented_names(config["docs_dir"]))
    if missing:
        raise PluginError("the API reference (docs/reference/*.md) has no `::: name` block for: "
                          + ", ".join(missing))
    return config


def on_page_markdown(markdown, page, config, files):
    if MARKER in markdown:
        return markdown.replace(MARKER, flags_markdown())
    return markdown
