"""Trained policies: the network, ``build_model`` and ``load_policy`` (and, re-exported from
:mod:`sevenrocks_env.masked_categorical`, the masked action distribution they play from).

This module is what users need to *play* a checkpoint; it never imports the trainer (``training/``).
``import sevenrocks_env`` does not import it (torch is only needed once a policy is loaded).

    from sevenrocks_env.policy import load_policy
    agent = load_policy("checkpoints/shipped/sevenrocks_ppo.pt")   # an Agent, on CPU
    action = agent.act(observation, action_mask)

Checkpoint files are plain dicts of tensors and plain Python values, read with
``torch.load(weights_only=True)``, so opening a downloaded checkpoint can never execute code; the
file's size and the network it declares are bounded, and every tensor's shape is checked against
the declared network before the network is built (``docs/security.md``; the file checks are in
:mod:`sevenrocks_env.policy_file`, whose names this module re-exports).  A policy agent's
settings (device, temperature, seed) are checked in :mod:`sevenrocks_env.policy_settings`, whose
names this module re-exports too.
``load_policy("shipped")`` (agent spec ``ckpt:shipped``) is the policy installed with the package.
Keys every checkpoint has (the trainer adds optimizer, RNG and run state for ``--resume``):

| key            | meaning                                                                  |
|----------------|--------------------------------------------------------------------------|
| `format`       | ``CHECKPOINT_FORMAT``                                                    |
| `obs_version`  | :data:`sevenrocks_env.observation.OBS_VERSION` the policy was trained on |
| `obs_size`     | observation length (238)                                                 |
| `num_actions`  | 113 (112 placements + knock)                                             |
| `model_config` | ``{"hidden_sizes": [...], "action_features": version, "value_head": bool, "action_scorer": "bilinear"/"mlp", "scorer_sizes": [...]}``: rebuilds :class:`PolicyNet` (``value_head`` false: shipped without one; no ``action_scorer``: bilinear, as before it existed) |
| `model`        | the network's ``state_dict``                                             |
| `global_step`  | training decisions seen                                                  |
"""

from __future__ import annotations

import functools

import numpy as np
import torch
from torch import nn

from .batched import layout
from .checks import checked_seed, shown
from .masked_categorical import MASKED_LOGIT, NOT_FINITE, MaskedCategorical
from .observation import OBS_SIZE, action_mask, checked_inputs, encode
from .policy_features import ActionFeatures
from .policy_file import (ACTION_SCORERS, CHECKPOINT_FORMAT, HIDDEN_SIZES, MAX_CHECKPOINT_BYTES,
                          MAX_HIDDEN_LAYERS, MAX_HIDDEN_WIDTH, SHIPPED, CheckpointError,
                          are_hidden_sizes, check_model_config, read_checkpoint, resolve_path, shipped_path)
from .policy_scorer import DEFAULT_SIZES as DEFAULT_SCORER_SIZES, PlacementScorer, layer_init, \
    loading_weights, scorer_shapes
from .policy_settings import (TEMPERATURE_RANGE, checked_temperature, generator_seed,
                              policy_device, sampling_name)
from .rules import Match, apply_action, legal_actions
from .tiles import KNOCK, NUM_ACTIONS

NO_VALUE_HEAD = ("this policy has no value head: it was trained with the oracle critic, whose "
                 "values are not shipped (the policy's own value head was never trained)")


class PolicyNet(nn.Module):
    """Shared MLP trunk with a policy head (113 logits) and a value head (team's expected return).

    Input is one seat's observation vector (seat-relative, so one network serves all four seats).
    With ``action_features`` the logits also get a per-action term: :class:`ActionFeatures`
    computes, from the observation alone, what each placement would do (end sum after it, the
    points it scores, the number it leaves open, the tile's weight), and the trunk decides how
    much each of those counts in the current situation (a bilinear score, one weight vector per
    state).  Nothing beyond the observation is used, so the policy plays through the env as is.
    ``action_features`` is the feature version (``ActionFeatures.SIZES``; ``True`` means version
    1, what checkpoints from before versions stored) or ``0``/``False`` for none.

    ``action_scorer="mlp"`` replaces the bilinear term with a small network scoring each legal
    placement from [a projection of the trunk's output (64), its action features, an embedding
    of its tile (16) and of its slot (4)] through ReLU layers ``scorer_sizes`` to one number,
    added to the placement's logit where the bilinear term goes (the knock keeps its
    ``policy_head`` logit alone).  It can learn what the features do not say linearly (which
    feature matters when, per tile); its last layer starts near 0 (gain 0.01), so the initial
    policy is near uniform, and its cost grows with the number of legal placements only.

    The value head is trained only with the trainer's ``critic: shared``; a policy trained with
    the oracle critic (``training/critic.py``) is exported without it (``model_config
    ["value_head"]`` false): :func:`build_model` then puts :class:`MissingValueHead` in its
    place, :meth:`value` raises, and :meth:`forward`'s values are NaN.
    """

    def __init__(self, hidden_sizes=(256, 256), obs_size: int = OBS_SIZE,
                 num_actions: int = NUM_ACTIONS, action_features: int = ActionFeatures.DEFAULT,
                 action_scorer: str = "bilinear", scorer_sizes=DEFAULT_SCORER_SIZES):
        super().__init__()
        if action_scorer not in ACTION_SCORERS:
            raise ValueError(f"action_scorer must be one of {ACTION_SCORERS}, got "
                             f"{action_scorer!r}")
        if action_scorer == "mlp" and not int(action_features):
            raise ValueError("action_scorer 'mlp' needs action features (action_features >= 1)")
        self.action_scorer = action_scorer
        if not are_hidden_sizes(hidden_sizes, plain=False):
            raise ValueError(f"hidden_sizes must be {HIDDEN_SIZES}, got {shown(hidden_sizes)}")
        self.hidden_sizes = [int(h) for h in hidden_sizes]
        self.trunk = mlp(obs_size, self.hidden_sizes)
        width = self.hidden_sizes[-1]
        self.policy_head = layer_init(nn.Linear(width, num_actions), 0.01)  # near-uniform start
        self.value_head = layer_init(nn.Linear(width, 1), 1.0)
        version = int(action_features)  # True -> 1
        self.action_features = ActionFeatures(version) if version else None
        if action_scorer == "mlp":
            self.scorer = PlacementScorer(width, self.action_features.size, scorer_sizes)
        elif self.action_features is not None:
            self.feature_weights = layer_init(nn.Linear(width, self.action_features.size), 0.01)

    def forward(self, obs: torch.Tensor, mask: torch.Tensor | None = None,
                features: tuple[torch.Tensor, torch.Tensor] | None = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(logits [B, 113], value [B])``; the logits are not masked yet.

        With action features, ``mask`` says which actions get their per-action term (only legal
        ones matter; computing just those is what keeps this fast; no mask: every placement).
        ``features`` may pass :meth:`legal_features` computed once (the trainer does, per rollout).
        """
        return self.heads(self.trunk(obs), obs, mask, features)

    def heads(self, hidden: torch.Tensor, obs: torch.Tensor, mask: torch.Tensor | None = None,
              features: tuple[torch.Tensor, torch.Tensor] | None = None
              ) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`forward` from the trunk's output ``hidden`` on: a trainer that also reads the
        trunk (an auxiliary loss, ``training/hand_guess.py``) computes it once."""
        logits = self.policy_head(hidden)
        if self.action_features is not None:
            actions, values = self.legal_features(obs, mask) if features is None else features
            if self.action_scorer == "mlp":
                term = self.scorer(hidden, actions, values)                  # [B, K]
            else:
                weights = self.feature_weights(hidden)                       # [B, F]
                term = (values * weights.unsqueeze(1)).sum(-1)               # [B, K]
            logits = logits.scatter_add(1, actions, term)
        if isinstance(self.value_head, MissingValueHead):
            return logits, torch.full(logits.shape[:1], float("nan"), device=logits.device)
        return logits, self.value_head(hidden).squeeze(-1)

    def legal_features(self, obs: torch.Tensor, mask: torch.Tensor | None = None
                       ) -> tuple[torch.Tensor, torch.Tensor]:
        """Action features of each row's placements, padded: ``(actions [B, K], values [B, K, F])``
        (padding points at the knock with zero features, so it adds nothing)."""
        if mask is None:
            mask = torch.ones(obs.shape[0], KNOCK, dtype=torch.bool, device=obs.device)
        placements = mask[:, :KNOCK].bool()
        rows, actions = torch.nonzero(placements, as_tuple=True)
        counts = layout.legal_counts(placements).long()
        width = max(int(counts.max()) if len(counts) else 0, 1)
        starts = torch.cumsum(counts, 0) - counts
        position = torch.arange(len(rows), device=obs.device) - starts[rows]
        padded_actions = torch.full((obs.shape[0], width), KNOCK, dtype=torch.long,
                                    device=obs.device)
        padded_actions[rows, position] = actions
        padded = torch.zeros(obs.shape[0], width, self.action_features.size, device=obs.device)
        padded[rows, position] = self.action_features(obs, rows, actions)
        return padded_actions, padded

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        """The value head alone (no logits needed)."""
        return self.value_head(self.trunk(obs)).squeeze(-1)

    def model_config(self) -> dict:
        config = {"hidden_sizes": list(self.hidden_sizes),
                  "action_features": 0 if self.action_features is None
                  else self.action_features.version}
        if self.action_scorer == "mlp":
            config["action_scorer"] = "mlp"
            config["scorer_sizes"] = list(self.scorer.sizes)
        if isinstance(self.value_head, MissingValueHead):
            config["value_head"] = False
        return config


class MissingValueHead(nn.Module):
    """Stands in for the value head of a policy shipped without one: calling it raises."""

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        raise RuntimeError(NO_VALUE_HEAD)


def expected_shapes(hidden_sizes, action_features: int, value_head: bool = True,
                    obs_size: int = OBS_SIZE, num_actions: int = NUM_ACTIONS,
                    action_scorer: str = "bilinear",
                    scorer_sizes=DEFAULT_SCORER_SIZES) -> dict:
    """Parameter name -> shape of the :class:`PolicyNet` a ``model_config`` describes, computed
    without building it (a test checks it against ``PolicyNet.state_dict()``)."""
    shapes, width = {}, obs_size
    for index, size in enumerate(hidden_sizes):
        shapes[f"trunk.{2 * index}.weight"], shapes[f"trunk.{2 * index}.bias"] = (size, width), \
            (size,)
        width = size
    shapes["policy_head.weight"], shapes["policy_head.bias"] = (num_actions, width), (num_actions,)
    if value_head:
        shapes["value_head.weight"], shapes["value_head.bias"] = (1, width), (1,)
    if action_features and action_scorer == "mlp":
        shapes.update(scorer_shapes(width, ActionFeatures.SIZES[action_features], scorer_sizes))
    elif action_features:
        size = ActionFeatures.SIZES[action_features]
        shapes["feature_weights.weight"], shapes["feature_weights.bias"] = (size, width), (size,)
    return shapes


def mlp(width: int, hidden_sizes) -> nn.Sequential:
    """ReLU layers of the given widths on a ``width``-long input (CleanRL's initialisation)."""
    layers: list[nn.Module] = []
    for size in hidden_sizes:
        layers += [layer_init(nn.Linear(width, size), np.sqrt(2)), nn.ReLU()]
        width = size
    return nn.Sequential(*layers)


def build_model(data: dict, path="checkpoint") -> PolicyNet:
    """The :class:`PolicyNet` described by a validated checkpoint dict, with its weights.

    The declared network is bounded and every tensor's name, shape and dtype is checked against
    it (:func:`expected_shapes`) before the network is built, so a small file cannot make this
    allocate more than its own weights."""
    hidden, features, value_head, scorer = check_model_config(data["model_config"], path)
    weights = data["model"]
    if not all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in weights.items()):
        raise CheckpointError(f"{path}: 'model' must map parameter names to tensors")
    expected = expected_shapes(hidden, features, value_head, **scorer)
    if set(weights) != set(expected):
        odd = sorted(set(weights) ^ set(expected))
        raise CheckpointError(f"{path}: weights do not fit the network it describes (missing or "
                              f"unexpected: {', '.join(shown(k) for k in odd[:3])})")
    for key, shape in expected.items():
        tensor = weights[key]
        if (tensor.layout != torch.strided or tuple(tensor.shape) != shape
                or tensor.dtype != torch.float32):
            raise CheckpointError(f"{path}: {key} is {tensor.dtype} {tuple(tensor.shape)} "
                                  f"({tensor.layout}), the network it describes needs dense "
                                  f"float32 {shape}")
        if not torch.isfinite(tensor).all():
            raise CheckpointError(f"{path}: non-finite weights in {key}")
    with loading_weights():  # every weight is overwritten below
        model = PolicyNet(hidden, action_features=features, **scorer)
    if not value_head:
        model.value_head = MissingValueHead()
    model.load_state_dict(weights)
    if value_head and trained_with_oracle_critic(data):  # its value head was never trained
        model.value_head = MissingValueHead()
    _check_outputs(model, path)
    return model


def trained_with_oracle_critic(data: dict) -> bool:
    """Whether a checkpoint's run trained with the oracle critic (its ``config``): the policy's
    own value head then kept its initial weights, and is no value head to use (a policy file
    exported from such a run has none: ``training.checkpoint.policy_only``)."""
    config = data.get("config")
    return isinstance(config, dict) and config.get("critic") == "oracle"


def probe_positions() -> tuple[torch.Tensor, torch.Tensor]:
    """``(observations [12, 238], masks [12, 113])``, new tensors at each call: the positions
    a loaded network is tried on -- four deals, each at its opening and after 6 and 14 moves of
    a fixed legal line, so the seats on turn, hands and layouts differ (:func:`_check_outputs`)."""
    observations, masks = _probes()
    return torch.tensor(observations), torch.tensor(masks)


@functools.cache
def _probes() -> tuple[np.ndarray, np.ndarray]:
    observations, masks = [], []
    for deal in range(4):
        match = Match.new(deal)
        for move in range(15):
            if move in (0, 6, 14):
                observations.append(encode(match, match.turn))
                masks.append(action_mask(match, match.turn))
            legal = legal_actions(match)
            apply_action(match, legal[(7 * move + deal) % len(legal)])
    observations, masks = np.stack(observations), np.stack(masks).astype(bool)
    observations.flags.writeable = masks.flags.writeable = False
    return observations, masks


def _check_outputs(model: PolicyNet, path) -> None:
    """:class:`CheckpointError` when ``model`` gives non-finite logits at any of
    :func:`probe_positions`, or legal-action logits down at the mask's ``MASKED_LOGIT``: weights
    that are finite but overflow (1e37, say), or a bias of -1e9, would otherwise load and play
    action 0 or fail at some later decision.  (Several positions: a network whose
    units are all inactive at one position gives finite logits there whatever its weights.)"""
    observations, masks = probe_positions()
    with torch.inference_mode():
        logits, _ = model(observations, masks)
    if not bool(torch.isfinite(logits[masks]).all()):
        raise CheckpointError(f"{path}: the network's outputs are not finite (its weights "
                              "overflow)")
    if not bool((logits[masks] > MASKED_LOGIT / 2).all()):  # (a trained one's are within +-100)
        raise CheckpointError(f"{path}: the network's logits for legal actions reach the "
                              f"mask's scale ({MASKED_LOGIT:g} for illegal ones): it could not "
                              "tell a legal move from an illegal one")


class PolicyAgent:
    """An :class:`~sevenrocks_env.agents.base.Agent` backed by a :class:`PolicyNet`.

    ``deterministic=True`` (default) plays the most probable legal action; otherwise it samples
    from the masked distribution with its own seeded generator, the logits divided by
    ``temperature`` first (below 1 sharper, above 1 flatter; the most probable action is the
    same at any temperature).  Agent spec ``sample:policy=PATH[,temperature=T]``.
    """

    def __init__(self, model: PolicyNet, name: str = "policy", deterministic: bool = True,
                 device: str = "cpu", temperature: float = 1.0):
        self.temperature = checked_temperature(temperature, deterministic)
        self.device = policy_device(device)
        self.model = model.to(self.device).eval()
        self.name = name
        self.deterministic = bool(deterministic)  # (checked by checked_temperature)
        self._generator = torch.Generator()
        self.seed(None)  # unseeded, a sampling agent draws afresh (seed 0 repeated every run)

    def distribution(self, logits: torch.Tensor, mask: torch.Tensor) -> MaskedCategorical:
        """The masked distribution this agent plays from, at its temperature."""
        return MaskedCategorical(logits if self.temperature == 1.0 else logits / self.temperature,
                                 mask)

    def seed(self, seed: int | None) -> None:
        """``seed``: a non-negative int (any size) or ``None``, as every agent's
        (:func:`~sevenrocks_env.checks.checked_seed`; ``TypeError``/``ValueError`` otherwise)."""
        seed = checked_seed(seed)
        if seed is None:  # a fresh draw, as the other agents do (0 made every unseeded sampling
            # agent repeat the same moves, run after run)
            seed = int(np.random.SeedSequence().generate_state(1, dtype=np.uint64)[0])
        self._generator.manual_seed(generator_seed(seed))

    @torch.inference_mode()
    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        observation, mask = checked_inputs(observation, action_mask)
        legal = np.flatnonzero(mask)
        if len(legal) == 1:
            return int(legal[0])
        # copies (238 floats): a read-only array of the caller's was a UserWarning from torch
        obs = torch.tensor(observation, device=self.device)
        mask_t = torch.tensor(mask, device=self.device).unsqueeze(0)
        logits, _ = self.model(obs.unsqueeze(0), mask_t)
        if not bool(torch.isfinite(logits[mask_t]).all()):  # argmax of NaN would be action 0
            raise RuntimeError(f"{self.name}: the network's outputs for legal actions are not "
                               "finite (broken or overflowing weights)")
        dist = self.distribution(logits, mask_t)
        if self.deterministic:
            action = int(dist.mode()[0])
        else:
            action = int(dist.sample(self._generator)[0])
        return action


def load_policy(path, device: str = "cpu", deterministic: bool = True,
                temperature: float = 1.0) -> PolicyAgent:
    """An agent playing the policy stored at ``path`` (agent spec ``ckpt:path``; ``"shipped"``:
    the policy installed with the package; sampling: ``sample:policy=path``); raises
    :class:`CheckpointError` (a ``ValueError``) for an unusable file; ``TypeError`` or
    ``ValueError`` naming ``path`` or ``device`` for arguments no file could fix."""
    temperature = checked_temperature(temperature, deterministic)   # before the file is read
    device = policy_device(device)
    data = read_checkpoint(path)
    model = build_model(data, path)
    name = f"ckpt:{path}" if deterministic else sampling_name(path, temperature)
    return PolicyAgent(model, name=name, deterministic=deterministic, device=device,
                       temperature=temperature)


__all__ = ["ACTION_SCORERS", "ActionFeatures", "CHECKPOINT_FORMAT", "CheckpointError",
           "MASKED_LOGIT", "MAX_CHECKPOINT_BYTES", "MAX_HIDDEN_LAYERS", "MAX_HIDDEN_WIDTH",
           "MaskedCategorical", "NOT_FINITE",
           "MissingValueHead", "PolicyAgent", "PolicyNet", "SHIPPED", "TEMPERATURE_RANGE",
           "build_model", "checked_temperature", "expected_shapes", "generator_seed",
           "load_policy", "policy_device", "read_checkpoint", "resolve_path", "sampling_name",
           "shipped_path"]
