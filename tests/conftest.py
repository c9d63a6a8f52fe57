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
