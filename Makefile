# Two commands do all set-up on a fresh machine: `make quickstart` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
RUN_DIR ?= runs/quickstart
PYTEST_WORKERS ?= 2

.PHONY: install install-test quickstart test lint bench docs clean

# The checkout is installed editable: keras_bert and the script packages `recipes` and `export`
# (`python recipes/X.py` imports `recipes` as `python -m recipes.X` does, docs/scripts.md).
EDITABLE := -e

$(VENV)/.installed: setup.py Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q $(EDITABLE) .
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed setup.py
	$(PY) -m pip install -q $(EDITABLE) '.[test]'
	touch $@

$(VENV)/.installed-bench: $(VENV)/.installed-test setup.py
	$(PY) -m pip install -q $(EDITABLE) '.[test,bench]'
	touch $@

install: $(VENV)/.installed

install-test: $(VENV)/.installed-test

# The main job on the embedded default corpus: vocab -> pre-training -> fine-tuning -> export.
quickstart: $(VENV)/.installed
	$(PY) -m recipes.quickstart --run_dir=$(RUN_DIR)

test: $(VENV)/.installed-test
	$(PY) -m ruff check keras_bert keras_bert_servability recipes export tests benchmarks docs keras_bert_commands.py setup.py
	$(PY) -m pytest -n $(PYTEST_WORKERS) --dist worksteal --durations=15 tests

lint: $(VENV)/.installed-test
	$(PY) -m ruff check keras_bert keras_bert_servability recipes export tests benchmarks docs keras_bert_commands.py setup.py

bench: $(VENV)/.installed-bench
	$(PY) -m benchmarks.run_all

$(VENV)/.installed-docs: $(VENV)/.installed setup.py
	$(PY) -m pip install -q $(EDITABLE) '.[docs]'
	touch $@

# The docs site (mkdocs.yml) into build/site; --strict: a warning (a broken link, a missing API reference
# entry, a docstring naming a parameter the signature lacks) fails the build.
docs: $(VENV)/.installed-docs
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict

clean:
	rm -rf runs .pytest_cache
