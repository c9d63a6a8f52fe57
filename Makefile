# Two commands do everything on a fresh machine:  make train   and   make test
PYTHON     ?= python3
VENV       ?= .venv
# Ray RLlib pins an older gymnasium than the main environment uses, so it gets its own venv.
VENV_RLLIB ?= .venv-rllib
# torch==2.13.0 is a CPU build on this project's machines; override, e.g. TORCH_SPEC="torch==2.14.1"
TORCH_SPEC ?= torch==2.13.0
# pip flags for the torch install only; on plain PyPI ask for the CPU wheel with
#   TORCH_FLAGS="--index-url https://download.pytorch.org/whl/cpu"
TORCH_FLAGS ?=
PIP_FLAGS  ?=
CONFIG     ?= configs/default.yaml
TRAIN_ARGS ?=
PY          = $(VENV)/bin/python
PY_RLLIB    = $(VENV_RLLIB)/bin/python
# Which torch a venv was installed with (a checksum of TORCH_SPEC and TORCH_FLAGS): another spec
# or flags on a later `make` reinstalls torch, where the install marker alone ignored them.
TORCH_ID   := $(shell printf '%s' '$(TORCH_SPEC) $(TORCH_FLAGS)' | cksum | cut -d' ' -f1)
# pip keeps an installed torch that satisfies the spec (torch==2.13.0 from another index, CUDA
# or CPU): when the marker is new ($? names it) the torch install is forced
REINSTALL_TORCH = $(if $(filter %/.torch-$(TORCH_ID),$?),--force-reinstall)
# OpenSpiel 2.0.2 has wheels for 3.11 and 3.12 only; say so before pip fails on another Python.
CHECK_PYTHON = @command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON): no such command; \
this project needs Python 3.11 or 3.12: make ... PYTHON=python3.12" >&2; exit 1; }
CHECK_PYTHON += ; $(PYTHON) -c 'import sys; sys.exit(sys.version_info[:2] not in ((3, 11), (3, 12)))' \
	|| (echo "error: $(PYTHON) is Python $$($(PYTHON) -c 'import platform; print(platform.python_version())'); \
this project needs 3.11 or 3.12: make ... PYTHON=python3.12" >&2; exit 1)

.PHONY: help install install-rllib chromium test train smoke serve bench exploit clean

help:
	@echo "make train          install (.venv) and train with $(CONFIG) (about 25 min on 2 cores)"
	@echo "make test           install (.venv, .venv-rllib, chromium) and run the whole test suite"
	@echo "make install        only the main venv ($(VENV)); TORCH_SPEC / TORCH_FLAGS pick torch"
	@echo "make install-rllib  only the RLlib venv ($(VENV_RLLIB))"
	@echo "make chromium       Debian's chromium for the browser tests"
	@echo "make smoke          a seconds-long training run"
	@echo "make serve          the web page to play the bots"
	@echo "make bench          the speed benchmarks (env_speed, vector_speed)"
	@echo "make exploit        the best responses of issue 11 (about 2.5 h)"
	@echo "make clean          remove the venvs and caches (not runs/, checkpoints/ or games/)"

$(VENV)/.installed: pyproject.toml Makefile $(VENV)/.torch-$(TORCH_ID)
	$(CHECK_PYTHON)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q $(PIP_FLAGS) --upgrade pip
	$(PY) -m pip install -q $(PIP_FLAGS) $(TORCH_FLAGS) $(REINSTALL_TORCH) "$(TORCH_SPEC)"
	$(PY) -m pip install -q $(PIP_FLAGS) -e ".[train,test,bench,sb3,web,web-test,torchrl,openspiel]"
	touch $@

$(VENV_RLLIB)/.installed: pyproject.toml Makefile $(VENV_RLLIB)/.torch-$(TORCH_ID)
	$(CHECK_PYTHON)
	$(PYTHON) -m venv $(VENV_RLLIB)
	$(PY_RLLIB) -m pip install -q $(PIP_FLAGS) --upgrade pip
	$(PY_RLLIB) -m pip install -q $(PIP_FLAGS) $(TORCH_FLAGS) $(REINSTALL_TORCH) "$(TORCH_SPEC)"
	$(PY_RLLIB) -m pip install -q $(PIP_FLAGS) -e ".[rllib,test]"
	touch $@

# the torch marker of a venv: made anew (the old one removed) when TORCH_SPEC or TORCH_FLAGS change
# (an explicit rule: each target is made on its own, where a two-target pattern rule is one recipe)
$(VENV)/.torch-$(TORCH_ID) $(VENV_RLLIB)/.torch-$(TORCH_ID):
	@mkdir -p $(@D) && rm -f $(@D)/.torch-* && touch $@

install: $(VENV)/.installed

install-rllib: $(VENV_RLLIB)/.installed

# The browser test drives Debian's Chromium (Playwright's own browser download does not work here).
chromium:
	@test -x /usr/bin/chromium || (apt-get update && apt-get install -y chromium)

# The whole suite in the main venv, then the RLlib tests in theirs.
test: install install-rllib chromium
	$(PY) -m pytest -q
	$(PY_RLLIB) -m pytest -q tests/test_rllib.py tests/test_rllib_inputs.py \
		tests/test_rllib_example.py tests/test_rllib_mutants.py

train: install
	$(PY) -m training.train --config $(CONFIG) $(TRAIN_ARGS)

# A seconds-long training run: checks that the trainer works on this machine.
smoke: install
	$(PY) -m training.train --config configs/smoke.yaml --force

# Play against the bots in the browser: open the printed address.
serve: install
	$(PY) -m sevenrocks_env.web

bench: install
	$(PY) benchmarks/env_speed.py --seconds 5 --repeats 3
	$(PY) benchmarks/vector_speed.py --seconds 3 --compile

# Exploitability test (issue 11): best responses trained against the shipped policy and against
# heuristic, then the arena on fresh deals (~2.5 h on 2 cores).
exploit: install
	$(PY) benchmarks/best_response.py --opponent ckpt:shipped --steps 2000000 --seed 1 --pairs 500 --deal-seed 7001 --workers 2 --out runs/best_response
	$(PY) benchmarks/best_response.py --opponent heuristic --steps 2000000 --seed 1 --pairs 500 --deal-seed 7001 --workers 2 --out runs/best_response

clean:
	rm -rf $(VENV) $(VENV_RLLIB) .venv-compat .pytest_cache .hypothesis build *.egg-info
