# make run   set up .venv, migrate, load guidance data, create an admin, serve until Ctrl-C
# make test  install the dev tools, lint, run every test (PYTEST_ARGS="-k auth" narrows it), the
#            ten-minute soak test beside the others
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

# The tests import the settings, which need SECRET_KEY unless DEBUG is true. The soak test (ten
# minutes of a mostly idle worker) runs beside the others rather than after them, in a folder and
# without a cache of its own; its output follows theirs. Status 5 is "no test selected": a
# PYTEST_ARGS that picks none of the soak run's tests is not a failure.
test: lint
	@sh scripts/install-test-deps
	@export DEBUG="$${DEBUG:-true}"; soak_dir=$$(mktemp -d); \
	$(BIN)/python -m pytest -m soak -p no:cacheprovider --basetemp="$$soak_dir/tmp" $(PYTEST_ARGS) \
		>"$$soak_dir/output" 2>&1 & soak=$$!; \
	$(BIN)/python -m pytest -m "not soak" -n 3 --dist loadgroup $(PYTEST_ARGS); others=$$?; \
	wait $$soak; soaked=$$?; \
	echo "--- the soak test (pytest -m soak), run beside the others, exited with $$soaked:"; \
	cat "$$soak_dir/output"; rm -rf "$$soak_dir"; \
	[ $$others = 0 ] && { [ $$soaked = 0 ] || [ $$soaked = 5 ]; }

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
