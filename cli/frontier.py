"""The durability/availability frontier of a sweep of settings: what keeps a guarantee, at what price.

Each setting that trades durability for availability or speed is an axis, its values
ordered from the cheapest to the most durable: acks 0 < 1 < all, min.insync.replicas
1 < 2 < ..., unclean.leader.election.enable true < false, flush.messages unset < 1,
replication.factor low < high. A configuration is a point, one value on each axis;
one is *cheaper* than another when it is no more durable on any axis (the product
order: points that differ both ways are not compared, which is what a trade-off is).

A durability guarantee's frontier is the cheapest points that keep it (its keepers'
minimal elements); an availability guarantee's price is the durability given up, so its
frontier is the most durable points that keep it (the maximal ones). Every point one
step further (cheaper for durability, more durable for availability) from a frontier
point is not a keeper, or that point would not be on the frontier: its verdict, with
its trace, is the reason the frontier is where it is. Nothing here assumes a guarantee
is monotone in the settings; the checker's answers decide.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product
from typing import Any, Callable

Point = tuple[int, ...]  # an index into each axis's values


@dataclass(frozen=True)
class Axis:
    field: str  # the ModelConfig field
    key: str  # Kafka's key
    values: tuple[Any, ...]  # cheapest first
    kafka: Callable[[Any], str] = str  # a value in Kafka's words
    tag: Callable[[Any], str] = str  # a value in a folder name


@dataclass(frozen=True)
class Sweep:
    axes: tuple[Axis, ...]
    points: tuple[Point, ...]  # the valid ones (min.insync.replicas at most replication.factor, say)

    def settings(self, point: Point) -> dict[str, Any]:
        """ModelConfig field -> value."""
        return {a.field: a.values[i] for a, i in zip(self.axes, point)}

    def kafka(self, point: Point) -> dict[str, str]:
        """Kafka key -> value, for the axes that vary (the others are said once)."""
        return {a.key: a.kafka(a.values[i]) for a, i in zip(self.axes, point) if len(a.values) > 1}

    def words(self, point: Point) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.kafka(point).items()) or "the one configuration"

    def slug(self, point: Point) -> str:
        """A short name for a folder: every axis, as in ``rf3-acksall-minisr2-clean-flushos``."""
        return "-".join(a.tag(a.values[i]) for a, i in zip(self.axes, point))

    def neighbours(self, point: Point, step: int) -> list[Point]:
        """The valid points one value away on one axis: cheaper (step -1) or more durable (+1)."""
        valid = set(self.points)
        out = []
        for k in range(len(point)):
            moved = point[:k] + (point[k] + step,) + point[k + 1:]
            if moved in valid:
                out.append(moved)
        return out


def make_sweep(axes: tuple[Axis, ...], valid: Callable[[dict[str, Any]], bool]) -> Sweep:
    """Every combination of the axes' values that ``valid`` accepts, cheapest first."""
    points = [p for p in product(*(range(len(a.values)) for a in axes))
              if valid({a.field: a.values[i] for a, i in zip(axes, p)})]
    return Sweep(axes, tuple(sorted(points, key=lambda p: (sum(p), p))))


def no_more_durable(a: Point, b: Point) -> bool:
    """``a`` is at most as durable as ``b`` on every axis."""
    return all(x <= y for x, y in zip(a, b))


def cheapest(points: list[Point]) -> list[Point]:
    """The minimal points: no other point is cheaper on every axis."""
    return [p for p in points if not any(q != p and no_more_durable(q, p) for q in points)]


def most_durable(points: list[Point]) -> list[Point]:
    """The maximal points: no other point is more durable on every axis."""
    return [p for p in points if not any(q != p and no_more_durable(p, q) for q in points)]


@dataclass(frozen=True)
class Frontier:
    keepers: tuple[Point, ...]
    edge: tuple[Point, ...]  # the frontier: cheapest keepers (durability), most durable ones (availability)
    ruled_out: tuple[tuple[Point, Point], ...]  # (frontier point, its neighbour one step beyond it)
    unknown: tuple[Point, ...]  # points whose verdict is not known (the search stopped early)

    @property
    def beyond(self) -> tuple[Point, ...]:
        """The points ruled out, each once (two frontier points can share a neighbour)."""
        return tuple(dict.fromkeys(n for _, n in self.ruled_out))


def frontier(sweep: Sweep, kept: Callable[[Point], bool | None], durable: bool) -> Frontier:
    """``kept(point)``: True, False, or None when the check did not finish."""
    answers = {p: kept(p) for p in sweep.points}
    keepers = [p for p in sweep.points if answers[p]]
    edge = cheapest(keepers) if durable else most_durable(keepers)
    step = -1 if durable else 1
    ruled = tuple((p, n) for p in edge for n in sweep.neighbours(p, step) if answers[n] is False)
    unknown = tuple(p for p in sweep.points if answers[p] is None)
    return Frontier(tuple(keepers), tuple(edge), ruled, unknown)
