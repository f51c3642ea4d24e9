"""Identifiable credit (issue 12): the simulation that showed the old rules retiring 87-100 % of the
principles, rerun on the new ones (per-prompt Thompson subsets, a control arm, centred gains,
retirement on a confidence bound)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hifo.knowledge_base import KnowledgeBase, assign_subsets, credit_generation
from hifo.knowledge_base import bandit

GENS, NEW_PER_GEN, OFFSPRING, K, POOL = 5, 3, 8, 3, 9
_counter = iter(range(10**6))


def _text() -> str:
    """A sentence of made-up words no other call shares (so nothing is merged as a near-duplicate)."""
    def word(i: int) -> str:
        out = ""
        for _ in range(4):
            out, i = out + "bcdfghjklmnprstvz"[i % 17] + "aeiou"[(i // 17) % 5], i // 85 + 7
        return out
    n = next(_counter)
    return "Prefer " + " ".join(word(n * 6 + j + 1000) for j in range(6)) + " when packing."


def _run(kb: KnowledgeBase, rng: np.random.Generator, effects: dict[str, float], run: str,
         fail_rate: float, new_effects: list[float]) -> list[list[str]]:
    """One search run as the agent does it: recall a pool, assign a subset per prompt, score the
    children (fitness = noise + sum of the effects of the principles in the prompt; a failure rate),
    credit the generation, add new principles; retire on the confidence bound at the end."""
    shown = []
    for gen in range(GENS):
        pool = kb.recall("toy", k=POOL)
        subsets = assign_subsets([(p.id, p.credit_n, p.credit_sum, p.credit_sq) for p in pool],
                                 OFFSPRING, K, rng)
        shown += subsets
        offspring = []
        for ids in subsets:
            failed = rng.random() < fail_rate
            fit = None if failed else float(rng.normal(0.0, 0.3) + sum(effects[i] for i in ids))
            offspring.append((ids, fit))
        credit_generation(kb, offspring, scale=1.0, key_prefix=f"{run}:{gen}")
        for j in range(NEW_PER_GEN):
            eff = new_effects[(gen * NEW_PER_GEN + j) % len(new_effects)]
            p = kb.add(_text(), problem="toy", provenance={"run_id": run, "generation": gen})
            effects[p.id] = eff
    kb.retire_harmful()
    return shown


@pytest.mark.parametrize("fail_rate", [0.2, 0.4])
def test_one_run_retires_few_and_credit_is_distinct(kb_path, fail_rate):
    rng = np.random.default_rng(7)
    effects: dict[str, float] = {}
    with KnowledgeBase(kb_path) as kb:
        shown = _run(kb, rng, effects, "r1", fail_rate, [0.0])  # neutral principles
        allp = kb.list(status=None)
        used = [p for p in allp if p.uses > 0]
        retired = [p for p in allp if p.status == "retired"]
        assert len(allp) == GENS * NEW_PER_GEN
        assert len(used) >= 9
        assert len(retired) <= 0.2 * len(used)  # the old rules retired 87-100 %
        # principles shown in the same generation get distinct credit
        assert len({round(p.credit_sum, 9) for p in used}) >= 0.8 * len(used)
        # subsets differ between prompts, and every fourth prompt is a control
        assert any(a and b and set(a) != set(b) for a, b in zip(shown, shown[1:]))
        assert all(not s for s in shown[::4])


def test_harmful_retired_helpful_survive_across_runs(kb_path):
    rng = np.random.default_rng(3)
    effects: dict[str, float] = {}
    with KnowledgeBase(kb_path) as kb:
        # alternate helpful (+0.4), harmful (-0.6) and neutral principles
        for r in range(4):
            _run(kb, rng, effects, f"r{r}", 0.3, [0.4, -0.6, 0.0])
        allp = kb.list(status=None)
        harm = [p for p in allp if effects[p.id] < 0 and p.credit_n >= bandit.RETIRE_MIN_USES]
        good = [p for p in allp if effects[p.id] > 0]
        assert harm, "harmful principles were used enough to be judged"
        assert sum(p.status == "retired" for p in harm) >= 0.5 * len(harm)
        assert all(p.status == "active" for p in good)
        # the helpful ones were credited above the harmful ones
        def mean(ps):
            return sum(p.credit_mean for p in ps if p.credit_n) / max(1, sum(1 for p in ps if p.credit_n))
        assert mean(good) > 0 > mean(harm)
        # Thompson sampling favours what helps: good principles are used more than harmful ones
        bad = [p for p in allp if effects[p.id] < 0 and p.uses]
        assert sum(p.uses for p in good) / len(good) > sum(p.uses for p in bad) / len(bad)


def test_centred_gains_and_bounds():
    raw = bandit.raw_scores([1.0, 2.0, None, 3.0], scale=2.0)
    assert raw == [-0.5, 0.0, bandit.FAILURE_GAIN, 0.5]
    g = bandit.centred_gains(raw)
    assert sum(g) == pytest.approx(0.0, abs=1e-12) and g[3] > g[1] > g[0]
    assert bandit.centred_gains([0.3]) == [0.0]
    assert bandit.upper_bound(0, 0.0, 0.0) == math.inf
    assert not bandit.is_harmful(7, -7.0, 7.0)            # too few uses
    assert bandit.is_harmful(8, -4.0, 2.5)               # mean -0.5, tight
    assert not bandit.is_harmful(8, -0.8, 8 * 0.25)      # mean -0.1, sd 0.5: not sure
    subsets = assign_subsets([("a", 0, 0, 0), ("b", 0, 0, 0), ("c", 0, 0, 0)], 8, 2, np.random.default_rng(0))
    assert subsets[0] == [] and subsets[4] == [] and all(len(s) == 2 for i, s in enumerate(subsets) if i % 4)
    assert assign_subsets([], 3, 2, np.random.default_rng(0)) == [[], [], []]


def test_migration_from_v1_keeps_principles(kb_path):
    import sqlite3

    from hifo.knowledge_base import _schema

    kb_path.parent.mkdir(parents=True)
    conn = sqlite3.connect(kb_path)
    for stmt in _schema._split(_schema._DDL_V1):
        conn.execute(stmt)
    conn.execute("INSERT INTO principles (id, text, source, utility, uses, created_at, updated_at) "
                 "VALUES ('p1', 'old text of a principle', 'user', 0.2, 3, 1.0, 1.0)")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    with KnowledgeBase(kb_path) as kb:
        p = kb.get("p1")
        assert (p.uses, p.credit_n, p.credit_sum) == (3, 0, 0.0)
        kb.credit(["p1"], -0.25, won=False)
        assert kb.get("p1").credit_n == 1 and kb.get("p1").credit_sum == pytest.approx(-0.25)


def _run_capped(kb: KnowledgeBase, rng: np.random.Generator, effects: dict[str, float], run: str,
                new_effects: list[float], cap: int, pairs: list[tuple[str, str]]) -> None:
    """`_run` with the per-problem use table filled and the bounded pool enforced at the run's end."""
    for gen in range(GENS):
        got = kb.recall("toy", k=POOL)
        subsets = assign_subsets([(p.id, p.credit_n, p.credit_sum, p.credit_sq) for p in got], OFFSPRING, K, rng)
        offspring = []
        for ids in subsets:
            pairs += [(a, b) for a in ids for b in ids if a < b]
            fit = None if rng.random() < 0.3 else float(rng.normal(0.0, 0.3) + sum(effects[i] for i in ids))
            offspring.append((ids, fit))
        credit_generation(kb, offspring, scale=1.0, key_prefix=f"{run}:{gen}", problem="toy")
        for j in range(NEW_PER_GEN):
            p = kb.add(_text(), problem="seed" if run == "r0" else "toy", provenance={"run_id": run, "generation": gen})
            effects[p.id] = new_effects[(gen * NEW_PER_GEN + j) % len(new_effects)]
    kb.retire_harmful()
    kb.enforce_pool(cap)


def test_bounded_pool_with_probation_keeps_what_helps_across_runs(kb_path):
    from hifo.knowledge_base.pool import PROBATION_USES

    rng = np.random.default_rng(5)
    effects: dict[str, float] = {}
    pairs: list[tuple[str, str]] = []
    cap, runs = 10, 5
    with KnowledgeBase(kb_path) as kb:
        for r in range(runs):
            _run_capped(kb, rng, effects, f"r{r}", [0.4, -0.6, 0.0], cap, pairs)
        allp = {p.id: p for p in kb.list(status=None)}
        inactive = set(kb.inactive())
        # nothing is deleted; the cap moved graduated principles out of recall
        assert len(allp) == runs * GENS * NEW_PER_GEN
        assert inactive and all(allp[i].credit_n >= PROBATION_USES and allp[i].status == "active" for i in inactive)
        in_pool = [p for p in allp.values() if p.status == "active" and p.id not in inactive]
        assert len([p for p in in_pool if p.credit_n >= PROBATION_USES]) <= cap
        # probation: principles added before the last generation of a run were tried soon after
        added_early = [p for p in allp.values() if p.provenance[0].generation < GENS - 1]
        assert sum(p.uses > 0 for p in added_early) >= 0.9 * len(added_early)
        # what helps stays in recall; what harms is retired or out of the pool
        good = [p for p in allp.values() if effects[p.id] > 0 and p.credit_n >= PROBATION_USES]
        harm = [p for p in allp.values() if effects[p.id] < 0 and p.credit_n >= PROBATION_USES]
        assert good and harm
        assert all(p.status == "active" for p in good)
        judged = [p for p in in_pool if p.credit_n >= PROBATION_USES]
        assert sum(effects[p.id] > 0 for p in judged) >= 0.6 * len(judged)  # a third of what was added
        assert not any(effects[p.id] < 0 for p in judged)
        assert sum(p.status == "retired" or p.id in inactive for p in harm) >= 0.8 * len(harm)
        # principles shown together get different credit when their effects differ
        mixed = {(a, b) for a, b in pairs if effects[a] * effects[b] < 0
                 and min(allp[a].credit_n, allp[b].credit_n) >= PROBATION_USES}
        assert len(mixed) >= 5
        right = sum((allp[a].credit_mean > allp[b].credit_mean) == (effects[a] > effects[b]) for a, b in mixed)
        assert right >= 0.8 * len(mixed)
        # learnt on one problem, credited on another: both are recorded
        seeded = next(p for p in good if p.problem == "seed")
        h = kb.helped_on(seeded.id)
        assert h["learnt_on"] == ["seed"] and "toy" in h["helped_on"]
        assert h["used_on"]["toy"]["uses"] == seeded.uses


def test_migration_from_v3_allows_the_seed_source_and_keeps_everything(kb_path):
    """v4 widens the CHECK on principles.source in place (issue 31: seed principles were labelled 'user'):
    rows, provenance and credit of a v3 store survive, and the generic seeds are stored as 'seed'."""
    import sqlite3

    from hifo.knowledge_base import _schema
    from hifo.knowledge_base.seeds import seed_if_empty

    kb_path.parent.mkdir(parents=True)
    conn = sqlite3.connect(kb_path)
    for v in (1, 2, 3):
        for stmt in _schema._split(_schema._MIGRATIONS[v]):
            conn.execute(stmt)
    conn.execute("INSERT INTO principles (id, text, source, utility, uses, created_at, updated_at, credit_n) "
                 "VALUES ('p1', 'old text of a principle', 'user', 0.2, 3, 1.0, 1.0, 2)")
    conn.execute("INSERT INTO provenance (principle_id, key, run_id, generation) VALUES ('p1', 'k', 'r', 4)")
    conn.execute("PRAGMA user_version = 3")
    conn.commit()
    conn.close()
    with KnowledgeBase(kb_path) as kb:
        p = kb.get("p1")
        assert (p.source, p.uses, p.credit_n) == ("user", 3, 2) and p.provenance[0].generation == 4
        with pytest.raises(ValueError):
            kb.add("a principle from nowhere", source="nowhere")
    raw = sqlite3.connect(kb_path)
    assert raw.execute("PRAGMA user_version").fetchone()[0] == _schema.SCHEMA_VERSION == 4
    with pytest.raises(sqlite3.IntegrityError):  # the database itself still refuses unknown sources
        raw.execute("INSERT INTO principles (id, text, source, created_at, updated_at) VALUES ('x', 't', 'bogus', 1, 1)")
    raw.execute("INSERT INTO principles (id, text, source, created_at, updated_at) VALUES ('y', 't', 'seed', 1, 1)")
    raw.rollback()
    raw.close()
    fresh = kb_path.parent / "fresh.sqlite"
    with KnowledgeBase(fresh) as kb:
        assert {kb.get(i).source for i in seed_if_empty(kb)} == {"seed"}
