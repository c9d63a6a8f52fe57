"""Fixtures shared by several test modules."""

import pytest


@pytest.fixture
def one_torch_thread():
    """Small tensors: one torch thread is faster, and keeps a busy machine's cores for other
    work (``pytestmark = pytest.mark.usefixtures("one_torch_thread")`` in a module)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def fake_clocks(monkeypatch):
    """``fake_clocks(module, wall_step, cpu_step)``: ``module.time`` becomes clocks that move
    ``wall_step``/``cpu_step`` seconds at each reading, so every timed call takes exactly that
    long (timing accounts are tested without measuring speed); returns the clocks' readings."""
    from types import SimpleNamespace
    clock = {"wall": 0.0, "cpu": 0.0}

    def reading(key, step):
        def read():
            clock[key] += step
            return clock[key]
        return read

    def install(module, wall_step: float, cpu_step: float) -> dict:
        monkeypatch.setattr(module, "time", SimpleNamespace(
            perf_counter=reading("wall", wall_step), process_time=reading("cpu", cpu_step)))
        return clock
    return install


@pytest.fixture()
def app():
    """The web app (``sevenrocks_env.web``) with room for 8 games."""
    from sevenrocks_env.web.api import create_app
    from sevenrocks_env.web.games import GameStore

    return create_app(GameStore(max_games=8))


@pytest.fixture()
def client(app):
    """Starlette's test client of :func:`app`."""
    from starlette.testclient import TestClient

    with TestClient(app, raise_server_exceptions=True) as test_client:
        yield test_client


@pytest.fixture
def vector():
    """``benchmarks/vector_speed.py`` as a module (``test_benchmarks_audit_vector_rates.py`` and
    ``_table``)."""
    from test_benchmarks_tables import script

    return script("vector_speed")


@pytest.fixture(scope="module")
def collected():
    """60 labels of the stand-in teacher, with values and match ids (the labels-file tests:
    ``test_distill_labels_checks.py`` and ``_several``; ``test_distill.py`` has its own)."""
    from distill_stand_ins import Highest, tiny_student

    from training import distill

    return distill.collect(tiny_student(), Highest(), 60, num_envs=8, seed=3, log=lambda *_: None)


@pytest.fixture
def evaluation_clock(monkeypatch):
    """``training.train``'s clock, moved on 5 minutes by each evaluation (the bar's minutes
    left: ``test_training.py``, ``test_session59_mutants.py``).  Returns ``(offset, postfixes)``:
    the clock's offset (a one-item list to set) and every text the progress bar was given
    (tqdm skips redrawing updates that come fast: its output may not show each one)."""
    import time
    import types

    import tqdm

    import training.train as train_module
    postfixes = []

    class RecordingBar(tqdm.tqdm):
        def set_postfix_str(self, text="", refresh=True):
            postfixes.append(text)
            return super().set_postfix_str(text, refresh)

    monkeypatch.setattr(tqdm, "tqdm", RecordingBar)  # (train() imports it when it runs)
    offset, real = [0.0], train_module.evaluate_and_log
    monkeypatch.setattr(train_module, "time", types.SimpleNamespace(
        time=lambda: time.time() + offset[0], strftime=time.strftime))

    def slow_evaluation(*args, **kwargs):
        offset[0] += 300.0
        return real(*args, **kwargs)

    monkeypatch.setattr(train_module, "evaluate_and_log", slow_evaluation)
    return offset, postfixes
