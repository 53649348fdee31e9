# `make run`: set up everything and run the service (web, worker, outbox relay).
# `make test`: set up everything and run the whole test suite.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
WORKERS ?= 1
export DJANGO_SETTINGS_MODULE := config.settings
# Local use: a secret key made once for this checkout (kept in .secret_key,
# never committed) and plain HTTP; production sets SECRET_KEY and leaves HTTPS on.
export SECRET_KEY ?= $(shell test -s .secret_key || $(PYTHON) -c "import secrets; print(secrets.token_urlsafe(50))" > .secret_key; cat .secret_key)
export HTTPS ?= false

.PHONY: setup db run test test-fast apitoken api stop-db reset-db clean train

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# The service's requirements only; `make test` adds the test and development ones.
$(VENV)/.installed: requirements.txt | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.installed-dev: requirements-dev.txt $(VENV)/.installed
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	touch $@

# Start the embedded PostgreSQL (unless DATABASE_URL is set), or say plainly
# why it cannot start (e.g. a .pgdata/ made by an older PostgreSQL).
db: $(VENV)/.installed
	@$(BIN)/python -m config.embedded start

setup: db
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py collectstatic --noinput --verbosity 0

# config/supervise.py starts the web server and the workers, each in a process
# group of its own, so Ctrl-C reaches only make and it: it asks each process
# once (SIGTERM) to stop gracefully and ends quietly when they have.
# make run is local development: its webhook receivers may be http://127.0.0.1.
run: export WEBHOOK_ALLOW_INSECURE ?= true
run: export WEBHOOK_ALLOW_PRIVATE_NETWORKS ?= true
run: setup
	$(BIN)/python manage.py seeddemo --url http://$(HOST):$(PORT)/
	@echo $(PORT) > .port  # where a second terminal's `make -s api` finds the server
	@echo "Pricesheet on http://$(HOST):$(PORT)/  (Ctrl-C stops web, worker and relay)"
	@$(BIN)/python -m config.supervise \
	  '$(BIN)/gunicorn config.wsgi --bind $(HOST):$(PORT) --workers 2 --threads 4 --access-logfile - --log-level warning' \
	  $(foreach i,$(shell seq $(WORKERS)),'$(BIN)/python manage.py runworker --relay')

# pytest-xdist: PYTEST_WORKERS processes run the tests, each on a test database of its own
# (pytest-django names them test_…_gw0, test_…_gw1, …); tests/conftest.py keeps a module whole
# where its tests share a fixture and sends the longest first. Three on two cores: the two soak
# tests mostly wait on their own processes, and the third process keeps the cores busy meanwhile.
# PYTEST_WORKERS=0 runs in one process.
PYTEST_WORKERS ?= 3
XDIST = -n $(PYTEST_WORKERS)

# The browser tests and the chaos soak run first, in one process of their own: Chromium and
# the soak's timed faults both misbehaved beside two other busy test processes on two cores.
# Exit status 5 (no test selected, as for `PYTEST_ARGS=tests/jobs`) is no failure.
SERIAL_MARKERS := browser or soak
test: $(VENV)/.installed-dev db
	@status=0; \
	$(BIN)/python -m pytest -m "$(SERIAL_MARKERS)" $(PYTEST_ARGS) || { s=$$?; [ $$s -eq 5 ] || status=$$s; }; \
	$(BIN)/python -m pytest $(XDIST) -m "not ($(SERIAL_MARKERS))" $(PYTEST_ARGS) || { s=$$?; [ $$s -eq 5 ] || status=$$s; }; \
	exit $$status

# The suite without the browser tests and the chaos soak: the part to run
# after each change (FAST_MARKERS narrows it further).
FAST_MARKERS ?= not browser and not soak
test-fast: $(VENV)/.installed-dev db
	$(BIN)/python -m pytest $(XDIST) -m "$(FAST_MARKERS)" $(PYTEST_ARGS)

# Print a new API token for TOKEN_USER (the demo user by default), with the
# settings `make run` uses: `TOKEN=$$(make -s apitoken)`; a read-only one:
# `TOKEN=$$(make -s apitoken SCOPE=read)`.
TOKEN_USER ?= demo
SCOPE ?= full
apitoken: db
	@$(BIN)/python manage.py createapitoken $(TOKEN_USER) --scope $(SCOPE)

# Print the API's address: the port the last `make run` here listens on
# (kept in .port), else PORT: `API=$$(make -s api)`.
api:
	@echo "http://$(HOST):$$(cat .port 2>/dev/null || echo $(PORT))/api"

# Stop the embedded server this folder's .pgdata/ runs, or say why there is nothing to stop.
stop-db:
	@if [ -x $(BIN)/python ]; then $(BIN)/python -m config.embedded stop; \
	  else echo "No .venv: the embedded database was never set up here."; fi

# Stop the embedded server and delete .pgdata/ (all its data): the next start makes a new one.
reset-db: $(VENV)/.installed
	@$(BIN)/python -m config.embedded reset

clean: stop-db
	rm -rf $(VENV) .pgdata media staticfiles

# `make train`: fit the column model, then the sheet model (it reads the column
# model's probabilities), on the labeled development part of the corpus
# (../shared/corpus); writes catalog/extraction/column_model.json and sheet_model.json.
train: $(VENV)/.installed-dev
	$(BIN)/python bench/corpus/train.py
	$(BIN)/python bench/corpus/train_sheets.py
