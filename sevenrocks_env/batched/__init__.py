"""The batched engine: B Seven Rocks matches as torch tensors on any device (R1-R8).

``rules`` stays the reference implementation; this package is the second one, tied to it by the
differential tests in ``tests/test_batched_*.py``.

* :mod:`.state`: the state tensors, ``STATE_BYTES`` = 216 bytes per match (an env adds 16 for
  its deal stream, 16 + 120 + 952 for the cached legal set, action mask and observation and
  1,052 for the observation's scratch tensors);
* :mod:`.deal`: counter-based deals, a function of (seed, env, match count, round);
* :mod:`.layout`: pure tensor functions of the rules (placement, end sum, legal mask, deductions);
* :mod:`.engine`: one step of every match, with auto-reset;
* :mod:`.observe`: the ``[B, 238]`` observation of the seats on turn;
* :mod:`.records`: game records from the engine's own numbers;
* :mod:`.greedy`, :mod:`.defensive`: the ``greedy`` agent's move and ``search``'s rollout move;
* :mod:`.worlds`: sampled worlds of many decisions as one state (search);
* :mod:`.history`: each env's public round so far (its start, the actions since; inference);
* :mod:`.sampling`: :func:`random_actions`, a uniformly random legal action per row of a mask
  (and ``random_set_bits``, the same draw from packed legal sets: ``VectorEnv.random_actions``);
* :mod:`.inputs`: checks of what callers pass in (device, tensors, explicit deals);
* :mod:`.vector_env`: :class:`VectorEnv`, the public class (``sevenrocks_v0.vector_env``).
"""

from .sampling import random_actions
from .state import STATE_BYTES, BatchState
from .vector_env import VectorEnv

__all__ = ["STATE_BYTES", "BatchState", "VectorEnv", "random_actions"]
