# Two commands do everything on a fresh machine:  make train   and   make test
PYTHON     ?= python3
VENV       ?= .venv
# A CPU build of torch by default; override, e.g. make train TORCH_SPEC="torch==2.14.1"
TORCH_SPEC ?= torch==2.13.0
PIP_FLAGS  ?=
CONFIG     ?= configs/default.yaml
PY          = $(VENV)/bin/python

.PHONY: install test train bench clean

$(VENV)/.installed: pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q $(PIP_FLAGS) "$(TORCH_SPEC)"
	$(PY) -m pip install -q $(PIP_FLAGS) -e ".[train,test,bench]"
	touch $@

install: $(VENV)/.installed

test: install
	$(PY) -m pytest -q

train: install
	$(PY) -m training.train --config $(CONFIG)

bench: install
	$(PY) benchmarks/env_speed.py

clean:
	rm -rf $(VENV) runs .pytest_cache .hypothesis
