"""The masked action distribution every policy network plays from (sb3-contrib's maskable
categorical): the trainer, the arena, search and the agents share this one."""

from __future__ import annotations

import torch

#: Logit given to illegal actions: exp() of it underflows to exactly 0 probability.
MASKED_LOGIT = -1e8
NOT_FINITE = "MaskedCategorical: the logits are not finite (a network with NaN or inf outputs)"


class MaskedCategorical:
    """Categorical distribution over the legal actions only (sb3-contrib's maskable distribution).

    Illegal logits are replaced by ``MASKED_LOGIT`` so their probability is exactly 0: they are
    never sampled, and the entropy sums over legal actions only (a seat with one legal action has
    entropy 0).  An action that ``sample``, ``mode`` or ``log_prob`` would return or score
    outside the mask (a row with no legal action, an illegal action given) is a ``ValueError``,
    not a silently illegal move or a log-probability of about -1e8 (one gather to check; a
    check of the mask's rows up front would cost a third of the softmax at 4,096 rows).
    """

    def __init__(self, logits: torch.Tensor, mask: torch.Tensor):
        self.mask = mask.bool()
        self.masked_logits = torch.where(self.mask, logits,
                                         torch.full_like(logits, MASKED_LOGIT))
        # log_softmax and softmax, not ``masked - logsumexp(masked)`` and ``log_probs.exp()``:
        # on CPU, logsumexp and exp over MASKED_LOGIT entries take a slow path (18x and 15x
        # slower at [4096, 113] in torch 2.13)
        self.log_probs = torch.log_softmax(self.masked_logits, dim=-1)

    @property
    def probs(self) -> torch.Tensor:
        return torch.softmax(self.masked_logits, dim=-1)

    def sample(self, generator: torch.Generator | None = None) -> torch.Tensor:
        """One legal action per row, drawn with ``generator`` (on its device) if given."""
        probs = self.probs if generator is None else self.probs.to(generator.device)
        try:
            chosen = torch.multinomial(probs, 1, generator=generator).squeeze(-1)
        except RuntimeError:  # torch's "probability tensor contains either inf, nan or < 0"
            raise ValueError(NOT_FINITE) from None
        return self._legal(chosen.to(self.mask.device))

    def sample_at(self, uniform: torch.Tensor) -> torch.Tensor:
        """One legal action per row, by the inverse of the row's distribution function at
        ``uniform`` (``[rows]``, each in ``[0, 1)``): a draw fixed by numbers the caller chose,
        such as a counter-based hash of where the draw is made
        (:func:`sevenrocks_env.batched.deal.counter_uniform`), so that it depends neither on the
        batch nor on the order of draws.  A uniform outside ``[0, 1)`` (a float32 just below 1
        rounds to 1) is a ``ValueError``: at 1 the last action would be drawn whatever its
        probability."""
        if not bool(((uniform >= 0) & (uniform < 1)).all()):
            raise ValueError("MaskedCategorical.sample_at: the uniforms must lie in [0, 1) "
                             "(float64: a float32 just below 1 rounds to 1)")
        cumulative = self.probs.double().cumsum(-1)
        point = uniform.to(cumulative) * cumulative[..., -1]
        chosen = torch.searchsorted(cumulative, point.unsqueeze(-1), right=True).squeeze(-1)
        return self._legal(chosen.clamp_max(self.mask.shape[-1] - 1))

    def mode(self) -> torch.Tensor:
        return self._legal(self.log_probs.argmax(dim=-1))

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        index = self._legal(actions.long()).unsqueeze(-1)
        return self.log_probs.gather(-1, index).squeeze(-1)

    def _legal(self, actions: torch.Tensor) -> torch.Tensor:
        """``actions``, after checking that the mask allows each of them and that their
        log-probabilities are numbers (a NaN or +inf logit makes the whole row NaN, whose
        argmax is action 0: a legal 0 would be played without a word)."""
        index = actions.unsqueeze(-1)
        legal = self.mask.gather(-1, index)
        finite = torch.isfinite(self.log_probs.gather(-1, index))
        if (legal & finite).all():  # one check, one synchronisation
            return actions
        if not bool(finite.all()):
            raise ValueError(NOT_FINITE)
        if not legal.all():
            rows = torch.nonzero(~legal.squeeze(-1))
            row = rows[0].tolist()
            why = "the row has no legal action, or it was given"
            if bool(self.mask[tuple(row)].any()):
                why = ("it was given, or the logits of the row's legal actions are at or "
                       f"below the mask's {MASKED_LOGIT:g}")
            if not bool(torch.isfinite(self.masked_logits).all()):
                why = "the logits are not finite: a network with NaN or inf outputs"
            raise ValueError(f"MaskedCategorical: action {int(actions[tuple(row)])} in row {row} "
                             f"is not legal there ({why})")
        return actions

    def entropy(self) -> torch.Tensor:
        # p log p is 0 where p is 0: masked actions, and a legal action whose logit is -inf
        # (0 * -inf would be NaN)
        probs = self.probs
        p_log_p = torch.where(self.mask & (probs > 0), probs * self.log_probs,
                              torch.zeros_like(self.log_probs))
        return -p_log_p.sum(-1)


__all__ = ["MASKED_LOGIT", "MaskedCategorical", "NOT_FINITE"]
