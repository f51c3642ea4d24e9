"""OPTWVP instances: the DeCoST generator and a plain JSON format.

The generator follows ``OPTWVPEnv.get_random_problems(hardness="hard")`` of the official DeCoST
code (Gao et al., ICLR 2026; github.com/SwonGao/DeCoST), which takes its time windows from
Da Silva & Urrutia (2010) / Kool et al.'s DPDP:

* ``n`` nodes *including the depot* (node 0), uniform in ``[0, 100]^2``;
* a random permutation of the customers, starting at the depot; ``D_k`` is the travel time
  accumulated along it up to its ``k``-th customer;
* that customer's window opens at ``e = D_k - W/2 + U(0, 1) * W/2`` and closes at
  ``l = e + W/4``. (The official code means to draw ``l`` separately, but its
  ``service_time_windows`` array is an alias of ``time_windows`` and overwrites it with
  ``[e, e + W/4]``; the released data and Gurobi optima use these ``W/4``-wide windows: in
  its 10,000 optimal n=50 solutions the mean service per visited node never exceeds
  ``W/4``.) A window may open before time 0;
* profit rates ``p ~ U(0, 10)`` (the depot's is 0);
* the horizon ``T = 100 * B(n)`` with the official budgets ``B(50) = 10``,
  ``B(100) = 16.5 = 4 + n/8`` and ``B(500) = 50``. Other sizes (e.g. n = 20, which the
  official code does not define) use the formula commented there, ``B(n) = 4 + n/8``.

Randomness comes from ``numpy.random.default_rng(seed)``, so instances are reproducible
here but are not the official torch streams.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

COORD_SCALE = 100.0
PROFIT_MAX = 10.0
DEFAULT_WINDOW = 100.0  # ``--timewindows 100`` of the official scripts and released data
OFFICIAL_BUDGETS = {50: 10.0, 100: 16.5, 500: 50.0}
FORMAT = "optwvp-1"


def horizon_for(n: int) -> float:
    """The route duration limit ``T`` of an ``n``-node instance (see the module docstring)."""
    return COORD_SCALE * OFFICIAL_BUDGETS.get(n, 4.0 + n / 8.0)


@dataclass(frozen=True, eq=False)
class OPTWVPInstance:
    """One OPTWVP instance. Node 0 is the depot; ``tw_open``/``tw_close`` of the depot are
    ``0`` and ``horizon`` (the vehicle leaves at 0 and must be back by the horizon)."""

    name: str
    coords: np.ndarray  # (n, 2)
    profit: np.ndarray  # (n,) profit per unit of service time, 0 at the depot
    tw_open: np.ndarray  # (n,) earliest start of service
    tw_close: np.ndarray  # (n,) latest start of service
    horizon: float
    window: float = DEFAULT_WINDOW
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.coords)
        for key in ("profit", "tw_open", "tw_close"):
            arr = getattr(self, key)
            if np.shape(arr) != (n,):
                raise ValueError(f"{self.name}: {key} must have one entry per node ({n})")
        if np.shape(self.coords) != (n, 2) or n < 1:
            raise ValueError(f"{self.name}: coords must be an (n, 2) array with n >= 1")
        if np.any(np.asarray(self.tw_close) < np.asarray(self.tw_open)):
            raise ValueError(f"{self.name}: a time window closes before it opens")
        if not self.horizon > 0:
            raise ValueError(f"{self.name}: the horizon must be positive")

    @property
    def n(self) -> int:
        return int(len(self.coords))

    @cached_property
    def travel(self) -> np.ndarray:
        """Euclidean travel times (speed 1), ``n x n`` float64."""
        pts = np.asarray(self.coords, dtype=np.float64)
        diff = pts[:, None, :] - pts[None, :, :]
        return np.sqrt(np.einsum("ijk,ijk->ij", diff, diff))

    @property
    def max_service(self) -> np.ndarray:
        """The longest service of each node, ``l_i - e_i`` (0 at the depot)."""
        w = np.asarray(self.tw_close, dtype=float) - np.asarray(self.tw_open, dtype=float)
        w[0] = 0.0
        return w

    @cached_property
    def reachable(self) -> np.ndarray:
        """Customers a route ``0 -> i -> 0`` can visit at all (a necessary condition)."""
        t0 = self.travel[0]
        start = np.maximum(t0, self.tw_open)
        ok = (start <= self.tw_close + 1e-9) & (start + t0 <= self.horizon + 1e-9)
        ok[0] = False
        return ok

    def to_dict(self) -> dict:
        return {"format": FORMAT, "name": self.name, "horizon": float(self.horizon),
                "window": float(self.window), "coords": np.asarray(self.coords).tolist(),
                "profit": np.asarray(self.profit).tolist(), "tw_open": np.asarray(self.tw_open).tolist(),
                "tw_close": np.asarray(self.tw_close).tolist(), "meta": dict(self.meta)}

    @classmethod
    def from_dict(cls, d: dict) -> "OPTWVPInstance":
        if d.get("format", FORMAT) != FORMAT:
            raise ValueError(f"unknown OPTWVP format {d.get('format')!r}")
        arr = lambda key: np.asarray(d[key], dtype=np.float64)  # noqa: E731
        return cls(name=str(d["name"]), coords=arr("coords"), profit=arr("profit"),
                   tw_open=arr("tw_open"), tw_close=arr("tw_close"), horizon=float(d["horizon"]),
                   window=float(d.get("window", DEFAULT_WINDOW)), meta=dict(d.get("meta") or {}))


def generate_instance(n: int, seed: int, window: float = DEFAULT_WINDOW,
                      horizon: float | None = None, name: str | None = None) -> OPTWVPInstance:
    """A seeded DeCoST "hard" instance with ``n`` nodes including the depot."""
    if n < 2:
        raise ValueError("an instance needs the depot and at least one customer")
    rng = np.random.default_rng(seed)
    coords = rng.random((n, 2)) * COORD_SCALE
    perm = 1 + rng.permutation(n - 1)
    order = np.concatenate(([0], perm))
    legs = np.sqrt(((coords[order[1:]] - coords[order[:-1]]) ** 2).sum(axis=1))
    cum = np.cumsum(legs)  # D_k along the permutation
    lower = rng.random(n - 1) * (window / 2) + (cum - window / 2)
    tw_open = np.zeros(n)
    tw_close = np.zeros(n)
    tw_open[perm] = lower
    tw_close[perm] = lower + window / 4  # the width the official data end up with
    T = horizon_for(n) if horizon is None else float(horizon)
    tw_close[0] = T
    profit = rng.random(n) * PROFIT_MAX
    profit[0] = 0.0
    return OPTWVPInstance(name=name or f"optwvp{n}_seed{seed}", coords=coords, profit=profit,
                          tw_open=tw_open, tw_close=tw_close, horizon=T, window=float(window),
                          meta={"permutation": perm.tolist()})


def generate_instances(n: int, count: int, first_seed: int, **kwargs) -> list[OPTWVPInstance]:
    """``count`` instances with seeds ``first_seed, first_seed + 1, ...``."""
    return [generate_instance(n, first_seed + k, **kwargs) for k in range(count)]


def write_json(instances: list[OPTWVPInstance] | OPTWVPInstance, path: str | os.PathLike) -> None:
    """Write one instance (a JSON object) or several (a JSON list of objects)."""
    data = instances.to_dict() if isinstance(instances, OPTWVPInstance) else [i.to_dict() for i in instances]
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(data, fh)


def read_json(path: str | os.PathLike) -> list[OPTWVPInstance]:
    """Instances of a file written by :func:`write_json` (always a list)."""
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    return [OPTWVPInstance.from_dict(d) for d in (data if isinstance(data, list) else [data])]
