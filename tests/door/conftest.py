"""The door tests run scripts in this process as the recipe tests do."""

from tests.recipes.conftest import run_in_process  # noqa: F401  (the fixture, shared)
