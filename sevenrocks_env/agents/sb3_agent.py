"""A Stable-Baselines3 model as an arena agent: the agent spec ``sb3:PATH``.

    sevenrocks arena sb3:checkpoints/sb3/maskable_ppo.zip heuristic --pairs 200
    sevenrocks play --opponents sb3:checkpoints/sb3/maskable_ppo.zip

``PATH`` is a zip saved by sb3-contrib's ``MaskablePPO.save`` from a model trained on the
Gymnasium single-agent view (:mod:`sevenrocks_env.single_agent`, e.g.
``examples/sb3_maskable_ppo.py``).  The agent gets what that model was trained on: the
observation ``{"observation": float32[238], "action_mask": int8[113]}`` of the seat to move, with
the mask also passed as ``action_masks`` so the model can only choose a legal action.  A forced
move (a single legal action, R6) is returned without asking the model.  Play is deterministic
(the most likely action) unless ``deterministic=False``.

**Trust.**  An SB3 zip holds pickled Python objects (cloudpickle), and loading one can run any
code it carries.  Unlike ``ckpt:PATH`` (tensors only, loaded with ``weights_only=True``),
``sb3:PATH`` must only be used with files you trust, such as models you trained yourself; see
docs/security.md.  Needs the ``[sb3]`` extra (sb3-contrib).
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import numpy as np

from ..checks import checked_seed, shown
from ..observation import OBS_SIZE, checked_inputs
from ..policy_file import CheckpointError, existing_file
from ..tiles import NUM_ACTIONS

#: The file size at which a model is refused before it is read (the shipped-size MLPs are < 10 MB).
MAX_MODEL_BYTES = 1 << 30


class SB3Agent:
    """A trained SB3 model (``MaskablePPO`` or its policy) as an
    :class:`~sevenrocks_env.agents.base.Agent`."""

    def __init__(self, model, name: str = "sb3", deterministic: bool = True):
        self.model = model
        self.name = name
        self.deterministic = deterministic

    def seed(self, seed: int | None) -> None:
        """Deterministic play has no randomness (and SB3's seeding would touch global RNGs);
        ``seed`` is checked all the same, as every agent's."""
        checked_seed(seed)

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        observation, mask = checked_inputs(observation, action_mask)
        legal = np.flatnonzero(mask)
        if len(legal) == 1:
            return int(legal[0])
        obs = {"observation": observation, "action_mask": mask.astype(np.int8)}
        action, _ = self.model.predict(obs, action_masks=mask, deterministic=self.deterministic)
        return int(action)


def zip_holds(file, name: str) -> bool:
    """Whether the zip ``file`` has an entry ``name`` (or ``.../name``) among its first 1,000:
    a torch.save file holds ``data.pkl``, an SB3 model ``policy.pth``."""
    try:
        with zipfile.ZipFile(file) as archive:
            return any(entry == name or entry.endswith("/" + name)
                       for entry in archive.namelist()[:1000])
    except (OSError, zipfile.BadZipFile, ValueError):
        return False


def load_sb3_agent(path: str, seed: int | None = None) -> SB3Agent:
    """``sb3:PATH``: load a MaskablePPO zip on the CPU and check that it was trained on this
    env's spaces.  Raises ``ValueError`` naming what is wrong.  Only for trusted files (module)."""
    if not path:
        raise ValueError("sb3 spec needs a path: sb3:PATH (a MaskablePPO .zip)")
    try:
        file = existing_file(Path(path).expanduser())
    except CheckpointError as error:
        raise ValueError(f"sb3:{path}: {error}") from None
    if not os.access(file, os.R_OK):
        raise ValueError(f"sb3:{path}: not readable")
    if file.stat().st_size > MAX_MODEL_BYTES:
        raise ValueError(f"sb3:{path}: larger than {MAX_MODEL_BYTES >> 20} MB")
    if not zipfile.is_zipfile(file):
        raise ValueError(f"sb3:{path}: not a zip file (an SB3 model is saved as .zip)")
    try:
        from sb3_contrib import MaskablePPO
    except ImportError:
        raise ValueError("sb3: agents need sb3-contrib: pip install -e \".[sb3]\"") from None
    try:
        model = MaskablePPO.load(file, device="cpu")
    except Exception as error:  # a corrupt or foreign zip: name the file, not a deep traceback
        hint = ("; it is a torch.save file: a sevenrocks policy loads with ckpt:PATH"
                if zip_holds(file, "data.pkl") else
                "; sb3: reads sb3-contrib's MaskablePPO models only (a model of another "
                "algorithm, PPO, A2C or DQN, has no action masks: train with MaskablePPO, "
                "examples/sb3_maskable_ppo.py)"
                if "MaskableActorCriticPolicy" in str(error) else "")
        raise ValueError(f"sb3:{path}: cannot load as a MaskablePPO model "
                         f"({type(error).__name__}: {str(error)[:120]}){hint}") from None
    problem = _space_problem(model)
    if problem:
        raise ValueError(f"sb3:{path}: {problem}")
    agent = SB3Agent(model, name=f"sb3:{file.name}")
    agent.seed(seed)
    return agent


def _space_problem(model) -> str | None:
    """Why ``model`` was not trained on the single-agent view's spaces, or ``None``."""
    spaces = getattr(model.observation_space, "spaces", None)
    if spaces is None or set(spaces) != {"observation", "action_mask"}:
        return (f"trained on observations {_space_text(model.observation_space)}, not this "
                f"env's Dict(observation, action_mask)")
    if spaces["observation"].shape != (OBS_SIZE,) or spaces["action_mask"].shape != (NUM_ACTIONS,):
        return (f"trained on observation {spaces['observation'].shape} and mask "
                f"{spaces['action_mask'].shape}; this sevenrocks has ({OBS_SIZE},) and "
                f"({NUM_ACTIONS},)")
    if getattr(model.action_space, "n", None) != NUM_ACTIONS:
        return (f"trained on actions {_space_text(model.action_space)}, not "
                f"Discrete({NUM_ACTIONS})")
    return None


def _space_text(space) -> str:
    """A space in a few words: its kind, shape and dtype (a Box's repr prints its bounds, two
    arrays of every value: kilobytes in a one-line message)."""
    kind, n = type(space).__name__, getattr(space, "n", None)
    if n is not None:
        return f"{kind}({shown(n)})"[:100]
    shape, dtype = getattr(space, "shape", None), getattr(space, "dtype", None)
    return f"{kind}(shape={shape}, dtype={dtype})"[:100]


__all__ = ["MAX_MODEL_BYTES", "SB3Agent", "load_sb3_agent"]
