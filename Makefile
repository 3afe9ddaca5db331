# ccarena: `make demo`, `make test`, `make bench`, `make fmt`, `make lint`.
# PYTHON selects the interpreter (and so the environment) to install into.
PYTHON ?= python3
PIP := $(PYTHON) -m pip
# The console script pip installs for that interpreter (found even when its
# directory is not on PATH, or pyenv has not rehashed its shims yet).
CCARENA := $(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_path("scripts"))')/ccarena

.PHONY: demo test bench fmt lint install install-test

install:
	$(PIP) install .

# Ray is optional: its test is skipped where it cannot be installed.
install-test:
	$(PIP) install ".[test,ray]" || $(PIP) install ".[test]"

demo: install
	$(CCARENA) run scenarios/demo.toml

test: install-test
	cargo test --workspace
	$(PYTHON) -m pytest -q
	$(PYTHON) -m ruff check python tests

bench:
	cargo bench -p ccarena-sim

fmt:
	cargo fmt --all
	$(PYTHON) -m ruff format python tests
	$(PYTHON) -m ruff check --fix python tests

lint:
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings
	$(PYTHON) -m ruff check python tests
	$(PYTHON) -m ruff format --check python tests
