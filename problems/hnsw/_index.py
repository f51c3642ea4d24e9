"""A small, faithful HNSW (Malkov & Yashunin 2018) with node deletion.

Insert: a node draws its top layer ``floor(-ln U * mL)`` (``mL = 1 / ln M``), descends greedily
(ef = 1) through the layers above it, then at each of its layers runs ``search_layer`` with
``ef_construction`` and links to ``M`` neighbours chosen by the paper's heuristic (Algorithm 4,
as hnswlib's ``getNeighborsByHeuristic2``); a neighbour whose list overflows ``M_max`` (``2 M`` on
layer 0) is shrunk by the same heuristic. Search: greedy descent to layer 0, then
``search_layer`` with ``ef``. Distances are squared Euclidean; every distance evaluation is counted
(``dist_count``), the deterministic query-cost measure used next to wall time.

Deletion (:meth:`HNSW.delete`) has two modes: ``tombstone`` marks the node (it still routes
searches but is never returned, as hnswlib's ``mark_deleted``), and physical removal, which takes
the node out of every layer and hands the repair of the hole to a *repair rule*
(:mod:`hifo.problems.hnsw._repair`) that sees only the local picture: distances from the deleted
node to its neighbours, their pairwise distances, who linked to whom, and free slots. Reverse
links are kept per layer so a deletion touches only the neighbourhood (no scan of the index).
"""

from __future__ import annotations

import heapq
import math
from typing import Any, Callable

import numpy as np

RepairRule = Callable[..., Any]


class HNSW:
    def __init__(self, dim: int, M: int = 8, ef_construction: int = 64, seed: int = 0) -> None:
        self.dim, self.M, self.M0, self.ef_construction = int(dim), int(M), 2 * int(M), int(ef_construction)
        self.mL = 1.0 / math.log(self.M)
        self.rng = np.random.default_rng(seed)
        self._vec: list[np.ndarray] = []
        self.level: list[int] = []
        self.links: list[dict[int, list[int]]] = []  # per layer: node -> out-neighbours
        self.rev: list[dict[int, set[int]]] = []  # per layer: node -> nodes linking to it
        self.entry: int | None = None
        self.tombstones: set[int] = set()
        self.removed: set[int] = set()
        self.dist_count = 0
        self._X: np.ndarray | None = None

    # ---- basics ---------------------------------------------------------------------
    @property
    def X(self) -> np.ndarray:
        if self._X is None or len(self._X) != len(self._vec):
            self._X = np.asarray(self._vec, dtype=np.float64).reshape(len(self._vec), self.dim)
        return self._X

    def __len__(self) -> int:
        return len(self._vec) - len(self.removed)

    def live(self) -> np.ndarray:
        """Ids of nodes a search may return (neither tombstoned nor removed)."""
        gone = self.removed | self.tombstones
        return np.array([i for i in range(len(self._vec)) if i not in gone], dtype=np.int64)

    def dist(self, q: np.ndarray, ids: list[int] | np.ndarray) -> np.ndarray:
        ids = np.asarray(ids, dtype=np.int64)
        self.dist_count += len(ids)
        diff = self.X[ids] - q
        return np.einsum("ij,ij->i", diff, diff)

    def max_degree(self, layer: int) -> int:
        return self.M0 if layer == 0 else self.M

    def n_edges(self) -> int:
        return sum(len(v) for layer in self.links for v in layer.values())

    def _set_links(self, layer: int, node: int, new: list[int]) -> None:
        old = self.links[layer].get(node, [])
        for v in set(old) - set(new):
            self.rev[layer][v].discard(node)
        for v in set(new) - set(old):
            self.rev[layer].setdefault(v, set()).add(node)
        self.links[layer][node] = list(new)

    # ---- search -----------------------------------------------------------------------
    def search_layer(self, q: np.ndarray, entry: list[tuple[float, int]], ef: int, layer: int,
                     skip_tombstones: bool = False, stop_at: int | None = None) -> list[tuple[float, int]]:
        """The paper's Algorithm 2: the ``ef`` closest nodes found, as sorted (dist, id).
        With ``skip_tombstones`` tombstoned nodes route the search but are not returned. With
        ``stop_at`` the search ends once ``dist_count`` reaches it (a distance-evaluation budget:
        the last expansion is cut to the evaluations left)."""
        visited = {i for _, i in entry}
        cand = list(entry)
        heapq.heapify(cand)
        res = [(-d, i) for d, i in entry if not (skip_tombstones and i in self.tombstones)]
        heapq.heapify(res)
        links = self.links[layer]
        while cand:
            d, c = heapq.heappop(cand)
            if len(res) >= ef and d > -res[0][0]:
                break
            nbrs = [v for v in links.get(c, ()) if v not in visited]
            if stop_at is not None:
                nbrs = nbrs[: max(stop_at - self.dist_count, 0)]
            if not nbrs:
                if stop_at is not None and self.dist_count >= stop_at:
                    break
                continue
            visited.update(nbrs)
            for dv, v in zip(self.dist(q, nbrs).tolist(), nbrs):
                if len(res) < ef or dv < -res[0][0]:
                    heapq.heappush(cand, (dv, v))
                    if skip_tombstones and v in self.tombstones:
                        continue
                    heapq.heappush(res, (-dv, v))
                    if len(res) > ef:
                        heapq.heappop(res)
        return sorted((-d, i) for d, i in res)

    def _descend(self, q: np.ndarray, down_to: int, stop_at: int | None = None) -> list[tuple[float, int]]:
        entry = self.entry
        assert entry is not None  # callers check the index is not empty
        ep = [(float(self.dist(q, [entry])[0]), entry)]
        for layer in range(self.level[entry], down_to, -1):
            ep = self.search_layer(q, ep, 1, layer, stop_at=stop_at)[:1]
        return ep

    def search(self, q: np.ndarray, k: int, ef: int, budget: int | None = None) -> list[int]:
        """Ids of (about) the ``k`` nearest live nodes to ``q``; with ``budget``, at most that many
        distance evaluations for this query (upper layers included)."""
        if self.entry is None:
            return []
        q = np.asarray(q, dtype=np.float64)
        stop_at = None if budget is None else self.dist_count + int(budget)
        ep = self._descend(q, 0, stop_at)
        found = self.search_layer(q, ep, max(ef, k), 0, skip_tombstones=bool(self.tombstones), stop_at=stop_at)
        return [i for _, i in found[:k]]

    # ---- insert -----------------------------------------------------------------------
    def select_heuristic(self, base: np.ndarray, cand: list[tuple[float, int]], m: int) -> list[int]:
        """Algorithm 4 (no candidate extension, no pruned-connection refill), as in hnswlib: keep a
        candidate only if it is closer to ``base`` than to every neighbour kept so far."""
        if len(cand) <= m:
            return [i for _, i in sorted(cand)]
        kept: list[int] = []
        for d, c in sorted(cand):
            if len(kept) >= m:
                break
            if not kept or np.all(self.dist(self.X[c], kept) > d):
                kept.append(c)
        return kept

    def insert(self, x: np.ndarray) -> int:
        x = np.asarray(x, dtype=np.float64).reshape(self.dim)
        node = len(self._vec)
        self._vec.append(x)
        top = int(-math.log(1.0 - self.rng.random()) * self.mL)
        self.level.append(top)
        while len(self.links) <= top:
            self.links.append({})
            self.rev.append({})
        for layer in range(top + 1):
            self.links[layer][node] = []
            self.rev[layer].setdefault(node, set())
        if self.entry is None:
            self.entry = node
            return node
        entry_top = self.level[self.entry]
        ep = self._descend(x, top) if entry_top > top else [(float(self.dist(x, [self.entry])[0]), self.entry)]
        for layer in range(min(top, entry_top), -1, -1):
            W = self.search_layer(x, ep, self.ef_construction, layer)
            nbrs = self.select_heuristic(x, W, self.M)
            self._set_links(layer, node, nbrs)
            cap = self.max_degree(layer)
            for e in nbrs:
                lst = self.links[layer][e] + [node]
                if len(lst) > cap:
                    d = self.dist(self.X[e], lst)
                    lst = self.select_heuristic(self.X[e], list(zip(d.tolist(), lst)), cap)
                self._set_links(layer, e, lst)
            ep = W
        if top > entry_top:
            self.entry = node
        return node

    # ---- delete -----------------------------------------------------------------------
    def delete(self, p: int, rule: RepairRule | str, seed: int = 0) -> list[dict[str, Any]]:
        """Delete node ``p``. ``rule == "tombstone"`` only marks it; otherwise ``p`` leaves every
        layer and ``rule`` (see :func:`hifo.problems.hnsw._repair.local_view`) repairs each
        layer's hole. Returns the per-layer decisions (global ids) for auditing/replay."""
        if p in self.removed or p in self.tombstones:
            raise KeyError(f"node {p} is already deleted")
        if rule == "tombstone":
            self.tombstones.add(p)
            return []
        if rule == "reinsert":
            self._reinsert_neighbours(p)
            return []
        decisions = []
        for layer in range(self.level[p], -1, -1):
            applied = self.delete_layer(p, layer, lambda view, ids: rule(**_copied(view)) if callable(rule) else None,
                                        seed)
            decisions.append({"layer": layer, "additions": applied})
        self.finish_delete(p)
        return decisions

    def delete_layer(self, p: int, layer: int, decide: Callable[..., Any], seed: int = 0) -> list[list[int]]:
        """Unlink ``p`` from ``layer`` and apply ``decide(view, ids)``'s additions (local indices,
        see :mod:`hifo.problems.hnsw._repair`); the edges added, as global ``[u, v]`` pairs."""
        from hifo.problems.hnsw._repair import apply_additions, local_view  # local: no import cycle

        view, ids = local_view(self, p, layer, seed)
        self._unlink(p, layer)
        return apply_additions(self, layer, ids, view["free"], decide(view, ids))

    def _reinsert_neighbours(self, p: int) -> None:
        """Re-insertion repair (a non-local baseline; needs the index, so no slot rule can do it): at
        every layer, every node that linked to ``p`` searches for itself as an insertion would
        (``search_layer`` from its current and ``p``'s neighbours, ``ef_construction``) and fills its
        free slots with the selection heuristic's picks among the nodes found (its existing edges
        are kept, so no node loses an in-edge). Its distance evaluations count in ``dist_count``."""
        for layer in range(self.level[p], -1, -1):
            ins = sorted(self.rev[layer].get(p, set()))
            out = list(self.links[layer].get(p, []))
            self._unlink(p, layer)
            for u in ins:
                seeds = sorted((set(self.links[layer][u]) | set(out)) - {u, p})
                if not seeds:
                    continue
                x = self.X[u]
                entry = list(zip(self.dist(x, seeds).tolist(), seeds))
                have = list(self.links[layer][u])
                W = [(d, v) for d, v in self.search_layer(x, entry, self.ef_construction, layer)
                     if v != u and v not in have]
                room = self.max_degree(layer) - len(have)
                if room > 0 and W:
                    self._set_links(layer, u, have + self.select_heuristic(x, W, room))
        self.finish_delete(p)

    def finish_delete(self, p: int) -> None:
        """Mark ``p`` removed once every layer is unlinked; move the entry point if needed."""
        self.removed.add(p)
        if self.entry == p:
            self._new_entry()

    def _unlink(self, p: int, layer: int) -> None:
        for u in list(self.rev[layer].get(p, ())):
            self._set_links(layer, u, [v for v in self.links[layer][u] if v != p])
        self._set_links(layer, p, [])
        del self.links[layer][p]
        self.rev[layer].pop(p, None)

    def _new_entry(self) -> None:
        for layer in range(len(self.links) - 1, -1, -1):
            if self.links[layer]:
                self.entry = min(self.links[layer])
                return
        self.entry = None


def _copied(view: dict[str, Any]) -> dict[str, Any]:
    """The rule gets its own copies: mutating them cannot change the free slots the index applies."""
    return {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in view.items()}
