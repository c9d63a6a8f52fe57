"""A short atheris run of the record and config fuzzers (``tests/fuzz/``): a fixed seed and a
fixed number of inputs, so a failure reproduces (a time budget with a random seed made one a
chance event); the longer run is in docs/security.md."""

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("atheris")
ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("target", ["fuzz_record.py", "fuzz_config.py"])
def test_fuzzer_finds_nothing_in_a_short_run(target, tmp_path):
    """The record fuzzer seeds its empty corpus folder with real records first."""
    (tmp_path / "artifacts").mkdir()
    (tmp_path / "corpus").mkdir()
    result = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "fuzz" / target), "-seed=1", "-runs=40000",
         "-timeout=10", "-rss_limit_mb=2048", f"-artifact_prefix={tmp_path}/artifacts/",
         str(tmp_path / "corpus")],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Done" in result.stderr and list((tmp_path / "artifacts").iterdir()) == []
    if target == "fuzz_record.py":
        assert len(list((tmp_path / "corpus").iterdir())) >= 4
