"""Which earlier object a repeat request asks for (pure apart from the random source).

uniform: every object requested before is equally likely (PolyMix-1's model; the earliest
objects end up most requested because they are candidates longest). zipf:A: the object first
requested k-th has weight 1/k^A, sampled in O(1) by inverting the continuous bounded power law.
"""

from __future__ import annotations

import math
import random

# The one default, of `./spe load --popularity` and a lab's [workload].popularity: PolyMix-1's, as the rest of the
# load's model (docs/workloads.md); a lab file that wants Zipf says so (configs/labs/default.toml does).
DEFAULT_POPULARITY = "uniform"


def parse_popularity(text: str) -> tuple[str, float]:
    if text == "uniform":
        return "uniform", 0.0
    if text.startswith("zipf:"):
        alpha = float(text[5:])
        if alpha <= 0:
            raise ValueError("zipf exponent must be positive")
        return "zipf", alpha
    raise ValueError(f"popularity must be uniform or zipf:A, not {text!r}")


def zipf_index(n: int, alpha: float, u: float) -> int:
    """An index in [0, n) with P(k) roughly proportional to 1/(k+1)^alpha."""
    if n <= 1:
        return 0
    if abs(alpha - 1.0) < 1e-9:
        x = math.exp(u * math.log(n + 1))
    else:
        top = (n + 1) ** (1 - alpha)
        x = (1 + u * (top - 1)) ** (1 / (1 - alpha))
    return min(n - 1, max(0, int(x) - 1))


class History:
    """Objects that may be asked for again, in the order first requested."""

    def __init__(self, model: str = "uniform", alpha: float = 0.0):
        self.model, self.alpha = model, alpha
        self.items: list[str] = []
        self.known: set[str] = set()

    def __len__(self) -> int:
        return len(self.items)

    def add(self, item: str) -> None:
        if item not in self.known:
            self.known.add(item)
            self.items.append(item)

    def pick(self, rng: random.Random) -> str:
        if self.model == "zipf":
            return self.items[zipf_index(len(self.items), self.alpha, rng.random())]
        return self.items[rng.randrange(len(self.items))]
