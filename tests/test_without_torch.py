"""The core package without torch (an extra), or with a torch older than the tested one: what
needs torch says so in one line.

Each check runs in a fresh interpreter with ``torch`` blocked (``sys.modules["torch"] = None``),
as on a machine where only the core package, or the core and the ``[web]`` extra, is installed.
"""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NO_TORCH = "import sys; sys.modules['torch'] = None\n"


def without_torch(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", NO_TORCH + code], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


def test_the_web_page_offers_the_rule_based_bots_without_torch():
    """docs/web.md: ``pip install -e ".[web]"`` then ``sevenrocks serve``; without torch it said
    "needs the [web] extra" (the web module imported the checkpoint reader, which imports torch)."""
    pytest.importorskip("starlette", reason="needs the [web] extra")
    done = without_torch("from sevenrocks_env.web.api import create_app\n"
                         "from sevenrocks_env.web.games import agent_menu\n"
                         "print([spec for spec, _ in agent_menu()])")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == "['random', 'greedy', 'heuristic', 'search']"


def test_an_sb3_spec_without_torch_is_a_value_error_saying_what_to_install():
    done = without_torch("from sevenrocks_env.agents import make_agent\n"
                         "try:\n    make_agent('sb3:model.zip')\n"
                         "except ValueError as error:\n    print('ValueError:', error)")
    assert done.returncode == 0, done.stderr
    assert 'ValueError: sb3: agents need sb3-contrib and torch: pip install -e ".[sb3]"' \
        in done.stdout


def test_the_batched_arena_without_torch_is_one_line_and_status_2():
    done = without_torch("from sevenrocks_env.arena_cli import main\n"
                         "print('status', main(['heuristic', 'greedy', '--batched', '--pairs', "
                         "'1', '--no-progress']))")
    assert done.returncode == 0, done.stderr
    assert "status 2" in done.stdout
    assert done.stderr.strip().startswith("sevenrocks arena: error: --batched needs torch")
    assert "Traceback" not in done.stderr


def test_load_policy_and_a_checkpoint_spec_without_torch_name_the_extra():
    """`sevenrocks_env.load_policy` was a bare "No module named 'torch'", and `ckpt:` said it
    needed `sevenrocks_env.policy`; each names `.[train]` now."""
    done = without_torch("import sevenrocks_env\n"
                         "try:\n    sevenrocks_env.load_policy('shipped')\n"
                         "except ImportError as error:\n    print('ImportError:', error)\n"
                         "from sevenrocks_env.agents import make_agent\n"
                         "try:\n    make_agent('ckpt:shipped')\n"
                         "except ValueError as error:\n    print('ValueError:', error)")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == ('ImportError: load_policy needs PyTorch (torch is missing): '
                        'pip install -e ".[train]"')
    assert lines[1].startswith('ValueError: checkpoint agents need PyTorch: pip install -e '
                               '".[train]"')


def test_a_subcommand_without_its_extra_names_the_checkout_s_install():
    """It said `pip install 'sevenrocks[train]'`: no such package on PyPI (anyone could take
    the name)."""
    done = without_torch("from sevenrocks_env.cli import main\nprint('status', main(['train']))")
    assert "status 2" in done.stdout, done.stderr
    assert "pip install -e '.[train]'" in done.stderr and "sevenrocks[" not in done.stderr


def test_openspiel_without_pyspiel_names_the_extra():
    words = ('sevenrocks_env.openspiel needs OpenSpiel (pyspiel is missing): '
             'pip install -e ".[openspiel]" (the open-spiel package)')
    done = subprocess.run([sys.executable, "-c", "import sys; sys.modules['pyspiel'] = None\n"
                           "import sevenrocks_env.openspiel"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 1 and f"ImportError: {words}" in done.stderr
    # an agent spec says it once (it added its own, other install command before)
    done = subprocess.run([sys.executable, "-c", "import sys; sys.modules['pyspiel'] = None\n"
                           "from sevenrocks_env.agents import make_agent\n"
                           "try:\n    make_agent('openspiel:ismcts')\n"
                           "except ValueError as error:\n    print(error)"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == f"openspiel agents: {words}", done.stderr


def test_a_torch_before_2_7_without_inductor_error_runs_the_engine_and_policies():
    """``from torch._inductor.exc import InductorError`` at the top of the kernels module (the
    class is new in torch 2.7) made `vector_env` and `load_policy` ImportErrors on the torch
    2.2-2.6 that pyproject allows; it is looked up when a compiled engine is built."""
    done = subprocess.run([sys.executable, "-c",
                           "import torch._inductor.exc as exc\n"
                           "exc.__dict__.pop('InductorError', None)\n"
                           "from sevenrocks_env import load_policy, sevenrocks_v0\n"
                           "venv = sevenrocks_v0.vector_env(num_envs=4)\nvenv.reset(seed=0)\n"
                           "print(load_policy('shipped').name, int(venv.action_mask.sum()))"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[1] == "28"  # 4 openers with 7 tiles: every tile at slot 0
