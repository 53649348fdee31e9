# `make run`: set up everything and run the service (web, worker, outbox relay).
# `make test`: set up everything and run the whole test suite.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
WORKERS ?= 1
export DJANGO_SETTINGS_MODULE := config.settings

.PHONY: setup run test bench stop-db clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: requirements.txt | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	touch $@

setup: $(VENV)/.installed
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py collectstatic --noinput --verbosity 0

run: setup
	$(BIN)/python manage.py seeddemo --url http://$(HOST):$(PORT)/
	@echo "Pricesheet on http://$(HOST):$(PORT)/  (Ctrl-C stops web, worker and relay)"
	@bash -c 'trap "trap - INT TERM EXIT; kill 0 2>/dev/null; wait" INT TERM EXIT; \
	  $(BIN)/gunicorn config.wsgi --bind $(HOST):$(PORT) --workers 2 --threads 4 \
	    --access-logfile - --log-level warning & \
	  for i in $$(seq $(WORKERS)); do $(BIN)/python manage.py runworker --relay & done; \
	  wait'

test: $(VENV)/.installed
	$(BIN)/python -m pytest $(PYTEST_ARGS)

stop-db:
	@if [ -d .pgdata ]; then \
	  $(BIN)/python -c "import pgserver, pathlib; pgserver.get_server(pathlib.Path('.pgdata').resolve(), cleanup_mode='stop').cleanup()"; \
	fi

clean: stop-db
	rm -rf $(VENV) .pgdata media staticfiles
