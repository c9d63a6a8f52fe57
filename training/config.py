"""The trainer's configuration: one dataclass, a docstring per field, loaded from YAML.

    cfg = load_config("configs/default.yaml", overrides=["learning_rate=1e-4", "seed=3"])

Unknown keys and bad values raise :class:`ConfigError` (a ``ValueError``) naming the key, before
any training starts.  ``describe_fields()`` gives the field docs (used by ``--help``).
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
import typing
from dataclasses import dataclass, field
from pathlib import Path

import yaml


class ConfigError(ValueError):
    """A configuration file or override that cannot be used."""


CRITICS = ("shared", "oracle")


@dataclass
class TrainConfig:
    # -- run --------------------------------------------------------------------------------
    run_name: str = ""
    """Name of the run: TensorBoard logs go to ``<log_dir>/<run_name>/``, checkpoints to
    ``<checkpoint_dir>/<run_name>/``. Empty: ``ppo_seed<seed>_<date-time>``."""
    seed: int = 1
    """Seeds the deals, the torch and numpy generators; same seed, same run."""
    torch_threads: int = 1
    """``torch.set_num_threads``: 1 is fastest for this small network on a shared 2-core CPU."""
    total_steps: int = 3_000_000
    """Training decisions (env steps of the learner seats, forced moves excluded) to collect."""
    max_minutes: float = 0.0
    """Stop early (with a checkpoint and the final evaluation) after this much wall time; 0 = off."""
    log_dir: str = "runs"
    """Root folder of the TensorBoard runs."""
    checkpoint_dir: str = "checkpoints"
    """Root folder of the checkpoints."""
    checkpoint_every: int = 20
    """Write ``step_<n>.pt`` and ``latest.pt`` every this many updates (and at the end)."""
    progress: bool = True
    """Show a tqdm progress bar with the latest evaluation numbers."""

    # -- games ------------------------------------------------------------------------------
    num_matches: int = 128
    """Matches played side by side in one process; one batched forward pass per step."""
    num_steps: int = 64
    """Learner decisions per match per rollout: batch size = num_matches * num_steps."""
    target: int = 250
    """Match target score (R8)."""
    max_rounds: int = 60
    """Rounds after which a training match is cut off (counted as neither win nor loss)."""
    points_scale: float = 0.01
    """Reward per point of score margin: a seat's reward is (own team's score change - the other
    team's) * points_scale, summed between its decisions (deductions included)."""
    win_reward: float = 1.0
    """Extra terminal reward: +win_reward to both winners, -win_reward to both losers."""

    # -- opponents --------------------------------------------------------------------------
    opponents: list[str] = field(default_factory=list)
    """Pool of opponents for some matches: agent specs (``greedy``, ``heuristic``, ``random``,
    ``ckpt:path``) and ``past`` (a frozen earlier snapshot of this run). Empty: pure self-play."""
    opponent_fraction: float = 0.0
    """Fraction of matches where one team is a pool opponent (the other team is the learner)."""
    snapshot_every: int = 10
    """Keep a frozen snapshot of the policy for the ``past`` opponent every this many updates."""
    max_snapshots: int = 5
    """How many recent snapshots the ``past`` opponent samples from."""

    # -- PPO (names as in CleanRL) ----------------------------------------------------------
    hidden_sizes: list[int] = field(default_factory=lambda: [256, 256])
    """Widths of the shared MLP trunk (and of the oracle critic's)."""
    action_features: int = 2
    """Version of the policy's per-action feature layer (``sevenrocks_env.policy_features``:
    1 = points, end sums and replies; 2 = also the chance a seat must knock and own tiles that
    still fit); 0 = none."""
    critic: str = "oracle"
    """Where values come from: ``shared`` = the value head on the policy's trunk (sees the seat's
    observation); ``oracle`` = a separate network that also sees the other seats' hands
    (training only, ``training/critic.py``; the policy still sees only the observation)."""
    learning_rate: float = 2.5e-4
    """Adam learning rate at the start."""
    anneal_lr: bool = True
    """Decay the learning rate linearly to 0 over ``total_steps``."""
    gamma: float = 0.99
    """Discount per own decision of a seat."""
    gae_lambda: float = 0.95
    """GAE lambda."""
    num_minibatches: int = 4
    """Minibatches per epoch."""
    update_epochs: int = 4
    """Passes over each rollout."""
    norm_adv: bool = True
    """Normalise advantages per minibatch."""
    clip_coef: float = 0.2
    """PPO clipping coefficient."""
    clip_vloss: bool = True
    """Clip the value loss as in the PPO paper's code."""
    ent_coef: float = 0.01
    """Entropy bonus coefficient (entropy over legal actions only)."""
    vf_coef: float = 0.5
    """Value loss coefficient."""
    max_grad_norm: float = 0.5
    """Global gradient-norm clip."""
    target_kl: float = 0.0
    """Stop an update's epochs early when approx KL exceeds this; 0 = off."""

    # -- evaluation -------------------------------------------------------------------------
    eval_every: int = 25
    """Evaluate with the arena every this many updates (0 = only at the end)."""
    eval_agents: list[str] = field(default_factory=lambda: ["random", "greedy", "heuristic"])
    """Baselines the policy is evaluated against (agent specs)."""
    eval_pairs: int = 30
    """Duplicate match pairs per baseline in periodic evaluations."""
    final_eval_pairs: int = 200
    """Duplicate match pairs per baseline in the final arena table."""
    eval_seed: int = 12345
    """Arena seed (fixed, so every evaluation plays the same deals)."""

    def validate(self) -> None:
        """Raise :class:`ConfigError` for values that cannot work."""
        positive = ("torch_threads", "total_steps", "checkpoint_every", "num_matches", "num_steps",
                    "target", "max_rounds", "snapshot_every", "max_snapshots", "num_minibatches",
                    "update_epochs", "eval_pairs", "final_eval_pairs")
        for name in positive:
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name} must be > 0, got {getattr(self, name)}")
        for name in ("max_minutes", "points_scale", "win_reward", "learning_rate", "clip_coef",
                     "ent_coef", "vf_coef", "max_grad_norm", "target_kl", "eval_every"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} must be >= 0, got {getattr(self, name)}")
        for name in ("gamma", "gae_lambda", "opponent_fraction"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ConfigError(f"{name} must be in [0, 1], got {getattr(self, name)}")
        if not self.hidden_sizes or any(h <= 0 for h in self.hidden_sizes):
            raise ConfigError(f"hidden_sizes must be positive widths, got {self.hidden_sizes}")
        from sevenrocks_env.policy_features import ActionFeatures
        if self.action_features != 0 and self.action_features not in ActionFeatures.SIZES:
            raise ConfigError(f"action_features must be 0 or one of {sorted(ActionFeatures.SIZES)}, "
                              f"got {self.action_features}")
        if self.critic not in CRITICS:
            raise ConfigError(f"critic must be one of {CRITICS}, got {self.critic!r}")
        if self.opponent_fraction > 0 and not self.opponents:
            raise ConfigError("opponent_fraction > 0 needs a non-empty opponents list")
        from sevenrocks_env.agents import make_agent
        for key in ("opponents", "eval_agents"):
            for spec in getattr(self, key):
                if key == "opponents" and spec == "past":
                    continue
                try:
                    make_agent(spec)
                except ValueError as error:
                    raise ConfigError(f"{key}: {error}") from None
        if self.batch_size % self.num_minibatches:
            raise ConfigError(f"num_matches * num_steps ({self.batch_size}) must be divisible by "
                              f"num_minibatches ({self.num_minibatches})")
        if self.total_steps < self.batch_size:
            raise ConfigError(f"total_steps ({self.total_steps}) is less than one rollout "
                              f"({self.batch_size} = num_matches * num_steps)")

    @property
    def batch_size(self) -> int:
        return self.num_matches * self.num_steps

    @property
    def num_updates(self) -> int:
        return self.total_steps // self.batch_size

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


_FIELDS = {f.name: f for f in dataclasses.fields(TrainConfig)}
_TYPES = typing.get_type_hints(TrainConfig)


def _coerce(name: str, value):
    """``value`` as the field's type, or ConfigError naming the field."""
    kind = _TYPES[name]
    wanted = getattr(kind, "__name__", str(kind))
    bad = ConfigError(f"{name} must be {wanted}, got {value!r}")
    if kind is bool:
        if isinstance(value, bool):
            return value
        raise bad
    if kind is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise bad
    if kind is float:
        if isinstance(value, str):  # YAML 1.1 reads "1e-4" as a string
            try:
                return float(value)
            except ValueError:
                raise bad from None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        raise bad
    if kind is str:
        if isinstance(value, str):
            return value
        raise bad
    item = typing.get_args(kind)[0]  # list[str] / list[int]
    if value is None:
        return []
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, list) or not all(
            isinstance(v, item) and not isinstance(v, bool) for v in value):
        raise ConfigError(f"{name} must be a list of {item.__name__}, got {value!r}")
    return list(value)


def config_from_dict(values: dict, source: str = "config") -> TrainConfig:
    """Build and validate a config; unknown keys are errors (with the valid names listed)."""
    if not isinstance(values, dict):
        raise ConfigError(f"{source}: expected a mapping of key: value, got {type(values).__name__}")
    unknown = sorted(set(values) - set(_FIELDS))
    if unknown:
        raise ConfigError(f"{source}: unknown key(s) {', '.join(unknown)}; valid keys: "
                          f"{', '.join(_FIELDS)}")
    cfg = TrainConfig(**{k: _coerce(k, v) for k, v in values.items()})
    cfg.validate()
    return cfg


def parse_overrides(overrides) -> dict:
    """``["key=value", ...]`` -> dict; values are read as YAML (``3``, ``0.5``, ``[a, b]``)."""
    values = {}
    for text in overrides or ():
        key, sep, raw = text.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set expects key=value, got {text!r}")
        try:
            values[key.strip()] = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError:
            raise ConfigError(f"--set {key}: cannot read value {raw!r}") from None
    return values


def load_config(path=None, overrides=(), base: dict | None = None) -> TrainConfig:
    """Config from a YAML file (or ``base``), then ``key=value`` overrides on top."""
    values = dict(base or {})
    if path is not None:
        path = Path(path)
        try:
            loaded = yaml.safe_load(path.read_text()) or {}
        except OSError as error:
            raise ConfigError(f"cannot read config {path}: {error.strerror}") from None
        except yaml.YAMLError as error:
            raise ConfigError(f"{path} is not valid YAML: {error}") from None
        if not isinstance(loaded, dict):
            raise ConfigError(f"{path}: expected a mapping of key: value")
        values.update(loaded)
    values.update(parse_overrides(overrides))
    return config_from_dict(values, str(path or "config"))


def describe_fields() -> dict[str, str]:
    """Field name -> its docstring (the string right below it in the class body)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(TrainConfig)))
    body = tree.body[0].body
    docs = {}
    for node, following in zip(body, body[1:]):
        if isinstance(node, ast.AnnAssign) and isinstance(following, ast.Expr) and isinstance(
                following.value, ast.Constant) and isinstance(following.value.value, str):
            docs[node.target.id] = " ".join(following.value.value.split())
    return docs
