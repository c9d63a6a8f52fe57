"""The page's legend states R5 as docs/rules.md does: a sum of 0 is a multiple of 5 but scores
nothing, so the legend must say "positive" (it once said only "a multiple of 5")."""

from __future__ import annotations

import re
from pathlib import Path

PAGE = Path(__file__).resolve().parent.parent / "sevenrocks_env" / "web" / "static" / "index.html"


def test_the_legend_says_only_a_positive_multiple_of_5_scores():
    footer = re.search(r"<footer>(.*?)</footer>", PAGE.read_text(), re.S).group(1)
    words = " ".join(footer.split())
    assert "a positive multiple of 5" in words
    assert "a sum of 0 scores nothing" in words
