# ccarena: `make demo`, `make test`, `make bench`, `make fmt`, `make lint`.
# PYTHON selects the interpreter (and so the environment) to install into.
PYTHON ?= python3
PIP := $(PYTHON) -m pip
# The console script pip installs for that interpreter (found even when its
# directory is not on PATH, or pyenv has not rehashed its shims yet).
CCARENA := $(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_path("scripts"))')/ccarena

.PHONY: demo test bench fmt lint install install-test reproduce-quick sweep-bench bottleneck bench-ns3 bench-instructions bench-memory

install:
	$(PIP) install .

# Ray is optional: its test is skipped where it cannot be installed.
install-test:
	$(PIP) install ".[test,ray]" || $(PIP) install ".[test]"

# A standalone build of the Linux backend's user-space bottleneck
# (target/release/ccarena-bottleneck). Not needed to run: `pip install`
# puts the same program beside `ccarena` as the console script
# `ccarena-bottleneck` (from the extension module).
bottleneck:
	cargo build --release -p ccarena-emu

demo: install
	$(CCARENA) run scenarios/demo.toml

test: install-test
	cargo test --workspace
	$(PYTHON) -m pytest -q -rs
	$(MAKE) lint PYTHON="$(PYTHON)"

bench:
	cargo bench -p ccarena-sim
	$(PYTHON) benches/startup.py

# Instructions and cache misses per packet of a few bench rows, counted by
# cachegrind (valgrind): unlike wall time they do not drift with the day.
bench-instructions:
	$(PYTHON) benches/instructions.py

# Every catalog experiment's quick form that the core can run (the others
# say what they wait for; their exit status 3 does not stop the target).
reproduce-quick: install
	for paper in bbrv2-eval bbrv3-insights bbq mixed-workload; do \
		$(CCARENA) reproduce $$paper --quick || test $$? -eq 3 || exit 1; \
	done

# 100 small runs with --jobs 1 and --jobs 2: the local pool's speed-up.
# Peak memory and wall time of whole runs beside validate's estimate
# (benches/memory.py; about 12 minutes, fig16's full point the longest).
bench-memory: install
	$(PYTHON) benches/memory.py

sweep-bench: install
	$(PYTHON) benches/sweep_speedup.py

# ccarena and ns-3 (Debian's libns3-dev) on the same dumbbell scenarios, whole
# processes timed side by side (benches/ns3_compare.py; --quick for a test).
bench-ns3: install
	$(PYTHON) benches/ns3_compare.py

fmt:
	cargo fmt --all
	$(PYTHON) -m ruff format python tests
	$(PYTHON) -m ruff check --fix python tests

lint:
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings
	$(PYTHON) -m ruff check python tests
	$(PYTHON) -m ruff format --check python tests
	$(PYTHON) -m mypy
