"""The model card ``training.ship`` writes: the committed card is generated from its JSON, and
the verdicts against the quality bars weigh the point estimate, the interval and the pairs.
(Shipping refused on bad input, and a distilled policy's card: ``test_hostile_checkpoints.py``.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")  # training.ship loads policies


def test_the_shipped_model_card_is_what_ship_writes_from_its_json():
    """MODEL_CARD.md is generated: the committed one must match its model_card.json and file."""
    from training.model_card import card_markdown

    folder = Path(__file__).resolve().parents[1] / "checkpoints" / "shipped"
    card = json.loads((folder / "model_card.json").read_text())
    assert card["file_bytes"] == (folder / card["file"]).stat().st_size
    assert (folder / "MODEL_CARD.md").read_text() == card_markdown(card)


def test_model_card_verdicts_weigh_pairs_and_interval():
    from training.model_card import verdict

    row = {"pairs": 1000, "win_rate": 0.575, "ci95": [0.544, 0.605]}
    assert verdict(row, 0.55).startswith("met by the point estimate")
    assert verdict(row, 0.50).startswith("met (the whole")
    assert verdict(row, 0.60) == "**not met**"
    assert verdict({**row, "pairs": 200}, 0.50).startswith("not judged")


def test_verdict_a_win_rate_exactly_at_the_bar_meets_it():
    """The bars read "vs greedy >= 65%" (docs/training.md: "≥ 65%"): a point estimate equal to the bar
    meets it (the point estimate decides), so it is not "**not met**"."""
    from training.model_card import verdict

    row = {"pairs": 1000, "win_rate": 0.65, "ci95": [0.62, 0.68]}
    assert verdict(row, 0.65) == "met by the point estimate; the 95% CI reaches below the bar"
    assert verdict(dict(row, win_rate=0.6499), 0.65) == "**not met**"
