"""The core package at the lower end of its supported dependency range.

``pyproject.toml`` promises ``gymnasium>=1.0,<2``, ``pettingzoo>=1.24.3``, ``numpy>=1.24`` and
``pillow>=10.1`` (the board pictures' font size: ``test_env_spaces`` renders ``rgb_array``)
(Ray RLlib pins ``gymnasium==1.2.2``, sb3-contrib accepts ``<2``; see docs/adapters.md).  The
main test run covers the upper end (``make test`` installs the newest allowed releases).  This
test builds a throwaway venv at the lower bounds with pip from the package index (cached in
``.venv-compat/`` between runs) and runs the env and adapter tests there.
"""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOWER = ["numpy==1.24.4", "gymnasium==1.0.0", "pettingzoo==1.24.3", "pillow==10.1.0",
         "pytest>=8", "hypothesis>=6.100"]
VENV = ROOT / ".venv-compat"


def _venv_python() -> Path:
    python = VENV / "bin" / "python"
    marker = VENV / "requirements.txt"
    wanted = "\n".join(LOWER)
    if python.exists() and marker.exists() and marker.read_text() == wanted:
        return python
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True)
    pip = subprocess.run([str(python), "-m", "pip", "install", "-q", *LOWER],
                         capture_output=True, text=True, timeout=900)
    assert pip.returncode == 0, f"pip install {' '.join(LOWER)} failed:\n{pip.stdout}\n{pip.stderr}"
    marker.write_text(wanted)
    return python


def test_core_package_at_the_lower_bounds():
    python = _venv_python()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    versions = subprocess.run(
        [str(python), "-c", "import numpy, gymnasium, pettingzoo, PIL; print(numpy.__version__, "
         "gymnasium.__version__, pettingzoo.__version__, PIL.__version__)"],
        capture_output=True, text=True, env=env, check=True).stdout.split()
    assert versions == ["1.24.4", "1.0.0", "1.24.3", "10.1.0"]
    run = subprocess.run(
        [str(python), "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
         "tests/test_env.py", "tests/test_env_seeding.py", "tests/test_env_spaces.py",
         "tests/test_adapters.py", "tests/test_adapters_api.py"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, f"tests failed at the lower bounds:\n{run.stdout[-4000:]}\n{run.stderr[-2000:]}"
    assert " passed" in run.stdout
