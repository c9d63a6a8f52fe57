"""Stand-ins for the distillation tests (``test_distill.py``, ``test_distill_labels_checks.py``,
``_several``): a small student and a teacher whose choice is a rule a student can learn."""

import numpy as np
import torch

from sevenrocks_env.policy import PolicyNet


def tiny_student() -> PolicyNet:
    """The same small untrained policy every call."""
    torch.manual_seed(0)
    return PolicyNet((32, 32)).eval()


class Highest:
    """A stand-in teacher: the highest legal action (a rule a student can learn)."""

    def action_values_many(self, observations, masks, rngs):
        return [np.flatnonzero(m).tolist() for m in masks]  # value = the action
