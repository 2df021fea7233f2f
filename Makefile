# make run   set up .venv, migrate, load guidance data, create an admin, serve until Ctrl-C
# make test  install the dev tools, lint, run every test (PYTEST_ARGS="-k auth" narrows it): the
#            ones that need no service and the ten-minute soak test beside the others
# make test-fast  lint and the tests that need no service (dev cluster, Chromium, sshd, Redis)

VENV := .venv
BIN := $(VENV)/bin
# A Python >= 3.12 for the venv: `make PYTHON=/usr/bin/python3.12 run`, or found by
# scripts/find-python inside the recipe that creates the venv, so that no other target needs one.
PYTHON ?=
# make run DEVCLUSTER=0 skips the local Slurm cluster (docker/devcluster).
DEVCLUSTER ?= 1
PIP_INSTALL := $(BIN)/python -m pip install --disable-pip-version-check --quiet

.PHONY: venv dev run test test-fast lint format clean

venv: $(VENV)/.installed-runtime

dev: $(VENV)/.installed-dev

$(BIN)/python:
	@python='$(PYTHON)'; [ -n "$$python" ] || python=$$(sh scripts/find-python) || exit 1; \
	echo "Creating $(VENV) with $$python"; \
	"$$python" -m venv $(VENV)

# The stamps are newer than the requirements they installed, so pip runs again only after a change.
# scripts/install-runtime installs into the `python` on PATH: the image's, here the venv's.
$(VENV)/.installed-runtime: requirements.txt scripts/install-runtime | $(BIN)/python
	PATH="$(CURDIR)/$(BIN):$$PATH" sh scripts/install-runtime --disable-pip-version-check --quiet
	@touch $@

$(VENV)/.installed-dev: requirements-dev.txt $(VENV)/.installed-runtime
	$(PIP_INSTALL) -r requirements-dev.txt
	@touch $@

# DEBUG defaults to true here: a local run needs no SECRET_KEY and serves static files itself.
run: venv
	@export DEBUG="$${DEBUG:-true}"; \
	$(BIN)/python manage.py migrate --noinput && \
	$(BIN)/python manage.py seed_guidance && \
	$(BIN)/python manage.py seed_templates && \
	$(BIN)/python manage.py ensure_admin && \
	if [ "$(DEVCLUSTER)" != 0 ] && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		docker/devcluster/devcluster up && $(BIN)/python manage.py register_devcluster; \
	else \
		echo "The local Slurm cluster needs root and apt (or was turned off with DEVCLUSTER=0)."; \
	fi && \
	exec $(BIN)/python manage.py serve

# The tests import the settings, which need SECRET_KEY unless DEBUG is true. Two lines at once:
# the tests that wait on the dev cluster, Chromium, servers and workers, one at a time (they share
# the cluster's few GPUs); and beside them, in folders and without caches of their own, the tests
# that need none of these over two processes (-n 2: a test database each), which the waiting leaves
# the CPUs to, and after them the soak test (ten minutes of a mostly idle worker, which must not
# share the CPUs with those two). Their output follows the main run's. Status 5 is "no test
# selected": a PYTEST_ARGS that picks none of a run's tests is not a failure; a `-m` in it
# chooses the main run's tests only (the side runs' own -m, given last, wins there).
SIDE_PYTEST := $(BIN)/python -m pytest -p no:cacheprovider
test: lint
	@sh scripts/install-test-deps
	@export DEBUG="$${DEBUG:-true}"; side=$$(mktemp -d); \
	{ $(SIDE_PYTEST) $(PYTEST_ARGS) -m "not (soak or cluster or browser or service)" -n 2 \
		--basetemp="$$side/quick" >"$$side/quick.out" 2>&1; echo $$? >"$$side/quick.rc"; \
	  $(SIDE_PYTEST) $(PYTEST_ARGS) -m soak --basetemp="$$side/soak" >"$$side/soak.out" 2>&1; \
	  echo $$? >"$$side/soak.rc"; } & side_runs=$$!; \
	$(BIN)/python -m pytest -m "(cluster or browser or service) and not soak" $(PYTEST_ARGS); \
	waiting=$$?; wait $$side_runs; quicked=$$(cat "$$side/quick.rc"); soaked=$$(cat "$$side/soak.rc"); \
	echo "--- the tests that need no service (-n 2), run beside these, exited with $$quicked:"; \
	cat "$$side/quick.out"; \
	echo "--- the soak test (pytest -m soak), run beside these after them, exited with $$soaked:"; \
	cat "$$side/soak.out"; rm -rf "$$side"; \
	for status in $$waiting $$quicked $$soaked; do [ $$status = 0 ] || [ $$status = 5 ] || exit 1; done

# The markers come from the fixtures a test uses (tests/conftest.py); -n spreads the tests over
# the cores (pytest-xdist): most of their time is each test's own database setup.
test-fast: lint
	DEBUG="$${DEBUG:-true}" $(BIN)/python -m pytest -n auto -m "not cluster and not browser and not service" $(PYTEST_ARGS)

# lint-imports checks the layering contracts in pyproject.toml.
lint: dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

format: dev
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:
	rm -rf var $(VENV) staticfiles .pytest_cache .ruff_cache
