"""The door tests run the recipes as tests/recipes does."""

from tests.recipes.conftest import run_in_process, tiny_model  # noqa: F401  (fixtures)
