"""The recipe tests' fixtures, for the door tests that run a recipe."""

from tests.recipes.conftest import run_in_process  # noqa: F401
