"""The door tests run scripts in this process with the recipe tests' fixture."""

from tests.recipes.conftest import run_in_process  # noqa: F401
