# Two commands do all set-up:  `make run` (the product) and `make test` (the suite).
# Both create .venv with a Python >= 3.12 (Django 6 needs it) and install the project.

VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

# The first interpreter that is Python >= 3.12: on PATH, or installed by pyenv.
PYTHON ?= $(shell for p in python3.13 python3.12 python3 \
	$$HOME/.pyenv/versions/3.13*/bin/python3 $$HOME/.pyenv/versions/3.12*/bin/python3; do \
	  "$$p" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1 \
	  && { command -v "$$p"; break; }; done)

# Compiled modules are kept (__pycache__, which git ignores), whatever the environment
# says: each of the hundred-odd servers and workers the suite starts would otherwise
# compile the product again (0.2 s of CPU each), and each test process rewrite every test.
unexport PYTHONDONTWRITEBYTECODE

# The suite runs on the real services of this machine unless told otherwise.
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/adstudio
TEST_REDIS_URL ?= redis://127.0.0.1:6379/15
# Test processes (pytest-xdist): one per core and two more, which run while the others
# wait on their servers (on two cores `make test` took 306-307 s with four, 313-325 s with
# three; `make test-fast` the same either way); at most 8 (each takes a Redis database of
# its own, counting down from TEST_REDIS_URL's). 0 runs the tests in pytest's own process.
TEST_PROCESSES ?= $(shell n=$$(( $$(nproc) + 2 )); echo $$(( n > 8 ? 8 : n )))

.PHONY: run test test-fast lint install chat-types

$(STAMP): pyproject.toml
	@test -n "$(PYTHON)" || { echo "Python 3.12 or newer is required (set PYTHON=/path/to/python3.12)"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(PY) manage.py migrate --noinput
	DEBUG=$${DEBUG:-1} $(PY) manage.py collectstatic --noinput --verbosity 0
	DEBUG=$${DEBUG:-1} $(PY) manage.py setup_demo
	@if [ -n "$$CELERY_BROKER_URL" ]; then \
	  trap 'kill 0' EXIT INT TERM; mkdir -p var; \
	  $(VENV)/bin/celery -A adstudio worker \
	    --pool threads --concurrency 8 --loglevel INFO & \
	  DEBUG=$${DEBUG:-1} $(VENV)/bin/uvicorn adstudio.asgi:application --reload --port $${PORT:-8000}; \
	else \
	  DEBUG=$${DEBUG:-1} $(VENV)/bin/uvicorn adstudio.asgi:application --reload --port $${PORT:-8000}; \
	fi

test: $(STAMP)
	DATABASE_URL=$${DATABASE_URL:-$(TEST_DATABASE_URL)} \
	ADSTUDIO_TEST_REDIS_URL=$${ADSTUDIO_TEST_REDIS_URL:-$(TEST_REDIS_URL)} \
	$(PY) -m pytest -n $(TEST_PROCESSES) $(PYTEST_ARGS); status=$$?; \
	if [ $$status -eq 5 ]; then echo "FATAL: pytest collected no tests" >&2; fi; exit $$status

# The inner loop: every test that starts no process of its own (README says which not).
test-fast: $(STAMP)
	DATABASE_URL=$${DATABASE_URL:-$(TEST_DATABASE_URL)} \
	ADSTUDIO_TEST_REDIS_URL=$${ADSTUDIO_TEST_REDIS_URL:-$(TEST_REDIS_URL)} \
	$(PY) -m pytest -n $(TEST_PROCESSES) -m "not slow" $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# clients/adstudio-chat.ts, the chat's TypeScript types, from the server's models (the
# suite fails while it is stale).
chat-types: $(STAMP)
	cd tests/clients && npm ci --no-audit --no-fund --silent
	$(PY) manage.py chat_types | node tests/clients/chat-types.mjs > clients/adstudio-chat.ts
