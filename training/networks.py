"""The trainer's networks: the policy, the oracle critic and their optimizer, on the run's device.

    device = training_device(cfg)                    # ConfigError when the device is not here
    model, critic, guess, optimizer = build_networks(cfg, device)
    warm_start(model, cfg)                           # cfg.init_from's weights, when given
    sharpen(model, 0.25)                             # logits x 4 (warm_start: init_temperature)
    student = widen(model, [512, 512])               # the same policy, with wider layers
"""

from __future__ import annotations

import torch

from sevenrocks_env.batched.inputs import checked_device
from sevenrocks_env.policy import CheckpointError, MissingValueHead, PolicyNet, build_model, \
    checked_temperature, read_checkpoint

from .config import ConfigError, TrainConfig
from .critic import OracleCritic
from .hand_guess import HandGuess
from .ppo import trained_parameters
from .resume import ADAM_BETAS


def training_device(cfg: TrainConfig) -> torch.device:
    """``cfg.device`` as a ``torch.device`` that is on this machine; a :class:`ConfigError`
    naming ``device`` otherwise (a run saved on a GPU machine resumes elsewhere with
    ``--set device=cpu``)."""
    try:
        return checked_device(cfg.device)
    except ValueError as error:
        raise ConfigError(f"{error} (--set device=cpu trains on the CPU)", "device") from None


def build_networks(cfg: TrainConfig, device="cpu"):
    """``(model, critic, guess, optimizer)`` for ``cfg`` on ``device``: the policy, the oracle
    critic or ``None`` (``critic: shared``), the hidden-hand guess head or ``None`` (``hand_coef:
    0``), and one Adam over all their parameters (:func:`trained_parameters`).  The weights are
    drawn on the CPU and then moved, so a seed gives the same initial networks on any device."""
    model = PolicyNet(cfg.hidden_sizes, action_features=cfg.action_features,
                      action_scorer=cfg.action_scorer, scorer_sizes=cfg.scorer_sizes).eval()
    critic = OracleCritic(cfg.hidden_sizes).eval() if cfg.critic == "oracle" else None
    guess = HandGuess(cfg.hidden_sizes[-1]).eval() if cfg.hand_coef > 0 else None
    for network in (model, critic, guess):
        if network is not None:
            network.to(device)
    return model, critic, guess, torch.optim.Adam(trained_parameters(model, critic, guess),
                                                  lr=cfg.learning_rate, eps=1e-5, betas=ADAM_BETAS)


def init_network(init_from: str) -> tuple[PolicyNet, dict]:
    """The policy of the checkpoint ``init_from`` and its network's settings (``model_config``
    without ``value_head``: a warm start takes the trunk and heads, not whether a value head was
    kept); a :class:`ConfigError` naming ``init_from`` when the file is not a policy checkpoint."""
    try:
        source = build_model(read_checkpoint(init_from), init_from)
    except CheckpointError as error:
        raise ConfigError(f"init_from: {error}", "init_from") from error
    network = source.model_config()
    network.pop("value_head", None)
    return source, network


def warm_start(model: PolicyNet, cfg: TrainConfig) -> None:
    """Copy the weights of the policy checkpoint ``cfg.init_from`` into ``model``; a
    :class:`ConfigError` naming ``init_from`` when the file is not a policy checkpoint or its
    network is not the config's."""
    source, theirs = init_network(cfg.init_from)
    ours = model.model_config()
    ours.pop("value_head", None)
    if theirs != ours:
        raise ConfigError(f"init_from: {cfg.init_from} holds a network with {theirs}, this config "
                          f"builds {ours}; set those fields to the checkpoint's", "init_from")
    # a policy file trained with the oracle critic has no value head: ours starts fresh then
    missing, unexpected = model.load_state_dict(source.state_dict(), strict=False)
    assert not unexpected and all(k.startswith("value_head.") for k in missing), missing
    if cfg.init_temperature != 1.0:
        sharpen(model, cfg.init_temperature)


def sharpen(model: PolicyNet, temperature: float) -> None:
    """Divide ``model``'s logits by ``temperature``, in place: the layers whose outputs add up to
    the logits (the policy head, and the bilinear feature weights or the ``mlp`` scorer's last
    layer) are scaled by ``1 / temperature``.  The most probable legal action stays the same; the
    distribution is sharper below 1 (``init_temperature``); a ``ValueError`` for a temperature
    outside :data:`~sevenrocks_env.policy.TEMPERATURE_RANGE`."""
    temperature = checked_temperature(temperature)
    layers = [model.policy_head]
    if model.action_features is not None:
        layers.append(model.scorer.layers[-1] if model.action_scorer == "mlp"
                      else model.feature_weights)
    with torch.no_grad():
        for layer in layers:
            assert isinstance(layer, torch.nn.Linear), layer
            layer.weight.div_(temperature)
            layer.bias.div_(temperature)


def widen(model: PolicyNet, hidden_sizes) -> PolicyNet:
    """A new :class:`PolicyNet` with the trunk layers ``hidden_sizes`` (as many as ``model``'s,
    none narrower) that computes the same logits and values as ``model``: its weights are
    copied, each new unit gets freshly drawn incoming weights (the network's usual
    initialisation) and zero weights out to the units ``model`` had, so the wider network starts
    as the policy it was widened from and its new units learn from there (Net2Net's
    function-preserving widening, with zeros where Net2Net splits units).  A ``ValueError`` for
    other depths or narrower layers."""
    sizes = [int(size) for size in hidden_sizes]
    if len(sizes) != len(model.hidden_sizes) or any(
            new < old for new, old in zip(sizes, model.hidden_sizes)):
        raise ValueError(f"a student of hidden sizes {sizes} cannot start from a network of "
                         f"{model.hidden_sizes}: give as many layers, none narrower")
    config = model.model_config()
    scorer = {key: config[key] for key in ("action_scorer", "scorer_sizes") if key in config}
    wide = PolicyNet(sizes, action_features=config["action_features"], **scorer).to(
        next(model.parameters()).device)
    if config.get("value_head", True) is False:
        wide.value_head = MissingValueHead()
    theirs = model.state_dict()
    linear = {f"{module}.{kind}" for module, layer in wide.named_modules()
              if isinstance(layer, torch.nn.Linear) for kind in ("weight", "bias")}
    with torch.no_grad():
        for name, tensor in wide.state_dict().items():
            old = theirs[name]
            # only a Linear's [out, in] weight and its bias change shape; the rest copy whole
            assert tensor.shape == old.shape or name in linear, name
            tensor[tuple(slice(0, size) for size in old.shape)] = old
            if tensor.dim() == 2 and tensor.shape[1] > old.shape[1]:
                # the old units read nothing from the new ones below them
                tensor[:old.shape[0], old.shape[1]:] = 0
    return wide.eval()
