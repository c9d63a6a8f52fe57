"""The core package without torch (an extra): what needs it says so in one line.

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
