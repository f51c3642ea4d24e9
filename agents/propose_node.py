"""The ``propose`` node of the search graph (a mixin of :class:`hifo.agents.search.SearchNodes`, kept apart to
keep each file short): the plan of operators and parents, the model calls, novelty before evaluation (a reply whose
code or probe behaviour repeats an earlier candidate is not evaluated but asked again, ``novelty_redraws`` times),
error-feedback repair, and the hyperparameter proposals of the elite's constants."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from hifo.agents import hyper
from hifo.agents.call_seeds import call_seed
from hifo.agents.code import find_constants, normalized_hash
from hifo.agents.distill import _view
from hifo.agents.eoh_selection import choose_parents
from hifo.agents.llm.base import BudgetExceeded, LLMError, ModelUnavailable
from hifo.agents.pipeline import EarlyEvaluations, GenerationClock
from hifo.agents.probe import BehaviourProbe
from hifo.agents.prompting import LLM_OPERATORS, N_PARENTS, render_operator
from hifo.agents.repair_loop import Parsed, fixable, parse_reply, redraw_messages, repair_messages
from hifo.agents.rundb import CandidateRow
from hifo.agents.runtime import RunState, WallTimeSpent, _stop_reason
from hifo.agents.selection import _fit
from hifo.knowledge_base import assign_subsets

if TYPE_CHECKING:
    from hifo.agents.config import RunConfig
    from hifo.agents.runtime import Runtime
    from hifo.evaluators.base import Evaluator


class ProposeNode:
    """Mixed into :class:`hifo.agents.search.SearchNodes` (after :class:`EvaluateNode`, whose wall-clock methods
    the declarations below resolve to)."""

    rt: Runtime
    cfg: RunConfig
    ev: Evaluator
    style: str
    _clock: GenerationClock | None
    _early: EarlyEvaluations | None
    _probe: BehaviourProbe | None | bool
    _baselines_probed: bool
    _last_duplicate: bool
    _last_reply: str
    _last_reason: str
    _n_duplicates: int
    _n_redraws: int
    _n_behaviour: int

    def wall_left(self) -> float | None:
        raise NotImplementedError

    def _wall_reason(self) -> str:
        raise NotImplementedError

    def _pop(self, ids: list[str]) -> list[CandidateRow]:
        raise NotImplementedError

    def probe(self) -> BehaviourProbe | None:
        """The behaviour probe (None: off in the config, or the evaluator declares no probe instances)."""
        if self._probe is False:
            self._probe = (BehaviourProbe.for_evaluator(self.ev, self.rt.scorer.executor)
                           if self.cfg.probe_novelty else None)
        return self._probe if isinstance(self._probe, BehaviourProbe) else None

    def _behaves_like(self, code: str, code_hash: str, cid: str, generation: int) -> str | None:
        """The earlier candidate that ``code`` behaves like on the probe (None: new, or no probe); a new
        behaviour is recorded under ``cid``. A recorded run keeps the verdict in its cassette (agents/probe.py)."""
        probe = self.probe()
        if probe is None:
            return None
        if not self._baselines_probed:  # a candidate that acts as a baseline is no news; probed at the first model
            self._baselines_probed = True  # candidate, not at seeding, so the baselines' evaluations start at once
            for base in self.rt.store.candidates(operator="baseline"):
                if base.code_hash:
                    self._fingerprint_new(probe, base.code, base.code_hash, base.id, 0)
        return self._fingerprint_new(probe, code, code_hash, cid, generation)

    def _fingerprint_new(self, probe: BehaviourProbe, code: str, code_hash: str, cid: str, generation: int) -> str | None:
        fp = probe.verdict(code, code_hash, self.rt.client, cid, wall_left=self.wall_left())
        if fp is None:
            return None
        earlier = self.rt.store.behaviour_of(fp)
        if earlier is None:
            self.rt.store.add_behaviour(fp, cid, generation)
        return earlier

    def _plan(self, state: RunState, rng: np.random.Generator) -> list[tuple[str, list[CandidateRow]]]:
        gen = state["generation"]
        pop = sorted(self._pop(state.get("population", [])), key=lambda c: -_fit(c))
        if gen == 0 or not pop:
            base = self.rt.store.candidates(operator="baseline")
            best_base = sorted([c for c in base if c.status == "evaluated" and c.ok], key=lambda c: -_fit(c))[:1]
            if self.style == "completion":  # a base model continues from the best baseline
                return [("i1", best_base) for _ in range(self.cfg.n_init)]
            if not self.rt.client.model.startswith("local:"):  # a remote chat model: EoH's i1, the task alone
                return [("i1", []) for _ in range(self.cfg.n_init)]
            # the embedded chat model sees a working baseline as a reference: the best one once scored, else
            # (generation 0: the baselines are still being evaluated) the evaluator's first, unscored
            first = [c for c in base if c.id == f"base-{next(iter(self.ev.baselines), 'template_baseline')}"]
            return [("i1", best_base or first) for _ in range(self.cfg.n_init)]
        ops = [o for o in LLM_OPERATORS if o != "i1" and (self.cfg.operators is None or o in self.cfg.operators)]
        w = np.array([state["weights"].get(o, 0.0) if self.cfg.operators is None else 1.0 for o in ops], dtype=float)
        w = w / w.sum()
        # rank-based parent selection, p(rank r) ~ 1 / (r + n), distinct parents; selection = "eoh":
        # EoH's own rule, 1 / (r + 1 + n) with replacement (hifo.agents.eoh_selection)
        rank_w = np.array([1.0 / (r + len(pop)) for r in range(len(pop))])
        rank_w /= rank_w.sum()
        plan = []
        for _ in range(self.cfg.n_offspring):
            op = str(rng.choice(ops, p=w))
            k = min(N_PARENTS[op], len(pop))
            if self.cfg.selection == "eoh":
                idx = choose_parents(len(pop), N_PARENTS[op], rng)
            else:
                idx = [int(j) for j in rng.choice(len(pop), size=k, replace=False, p=rank_w)] if k else []
            plan.append((op, [pop[i] for i in idx]))
        return plan

    def _grammar(self) -> bool:
        """Grammar-constrained decoding: only for the embedded model (whose client applies it) and only
        when the config allows it; the evaluator may still declare no grammar."""
        return self.cfg.grammar and self.style == "completion" and self.rt.client.model.startswith("local:")

    def _call(self, messages: list[dict], seed: int, stop: list[str], temperature: float | None = None) -> Any:
        left = self.wall_left()
        if left is not None and left <= 0:
            raise WallTimeSpent(self._wall_reason())
        temp = self.cfg.temperature if temperature is None else temperature

        def call() -> Any:
            return self.rt.client.complete(messages, n=1, temperature=temp, seed=seed,
                                           max_tokens=self.cfg.max_tokens, stop=stop or None)[0]
        return self._clock.model_call(call) if self._clock is not None else call()

    def _start_early(self, gen: int) -> None:
        """The clock of generation ``gen`` and its early evaluations; what is already pending (the
        baselines at generation 0, a resumed run's leftovers) is submitted first, in evaluate's order."""
        self._clock = GenerationClock(gen)
        cap = self.cfg.max_evaluations
        room = None if cap is None else max(0, cap - self.rt.store.count_evaluated())
        self._early = EarlyEvaluations(self.rt.scorer, self._clock, room)
        left = self.wall_left()
        if left is None or left > 0:
            for c in self.rt.store.pending():
                self._early.start(c.id, c.code)

    def propose(self, state: RunState) -> RunState:
        gen, store = state["generation"], self.rt.store
        if store.marker(f"proposed:{gen}"):
            return {}
        # a batch half-written by a killed process is discarded whole; none of it was evaluated yet
        store.discard_proposals(gen)
        self._start_early(gen)
        rng = np.random.default_rng([self.cfg.seed, gen])
        recalled = [p for p in (self.rt.kb.get(i) for i in state.get("recalled", [])) if p is not None]
        plan = self._plan(state, rng)
        # each prompt its own subset of the pool; every fourth prompt none (the control arm)
        subsets = assign_subsets([(p.id, p.credit_n, p.credit_sum, p.credit_sq) for p in recalled], len(plan),
                                 self.cfg.recall_k, np.random.default_rng([self.cfg.seed, gen, 17]))
        text_of = {p.id: p.text for p in recalled}
        prompts = [render_operator(self.style, op, evaluator=self.ev, parents=[_view(p) for p in parents],
                                   principles=[text_of[i] for i in ids], directive=state.get("directive", ""),
                                   regime=state.get("regime"), grammar=self._grammar())
                   for (op, parents), ids in zip(plan, subsets)]
        stop_reason = None
        replies: dict[int, Any] = {}
        done: set[int] = set()
        nxt = 0
        seen: set[str] = set()
        n_ok = 0
        to_repair: list[tuple[int, str, Parsed, dict]] = []
        to_redraw: list[tuple[int, str, str]] = []  # duplicates (index, reply, why): asked again
        self._n_fixed = self._n_repaired = self._n_repair_new = 0
        self._n_duplicates = self._n_redraws = self._n_behaviour = 0

        def record(i: int) -> None:
            nonlocal n_ok
            if i in replies:
                n_ok += self._record_reply(gen, state, plan[i], prompts[i], subsets[i], i, replies[i], seen,
                                           to_repair, stop_reason is None)
                if self._last_duplicate:
                    to_redraw.append((i, self._last_reply, self._last_reason))

        # an in-process model serves one call at a time: calls in plan order keep a seeded run reproducible
        # (llama.cpp's reused prefix depends on the call before)
        one_at_a_time = self.style == "completion" or self.rt.client.model.startswith("local:")
        workers = 1 if one_at_a_time else min(8, max(1, len(prompts)))
        pool = ThreadPoolExecutor(max_workers=workers)
        try:
            futs = {pool.submit(self._call, pr.messages, call_seed(self.cfg.seed, gen, i), pr.stop): i
                    for i, pr in enumerate(prompts)}
            for f in as_completed(futs, timeout=self.wall_left()):
                try:
                    replies[futs[f]] = f.result()
                except BudgetExceeded as exc:
                    stop_reason = _stop_reason(exc)
                except LLMError as exc:
                    replies[futs[f]] = exc
                done.add(futs[f])
                # record (and start evaluating) replies in plan order as soon as they are in, while
                # the model writes the next ones
                while nxt < len(prompts) and nxt in done:
                    record(nxt)
                    nxt += 1
        except TimeoutError:
            # the wall budget ran out with calls in flight: stop waiting for them (a call cannot be
            # interrupted; its thread finishes on its own and its reply is dropped)
            stop_reason = self._wall_reason()
        finally:
            pool.shutdown(wait=stop_reason is None, cancel_futures=True)
        for i in range(nxt, len(prompts)):  # after a stop: what came in behind a missing reply
            record(i)
        errors = [r for r in replies.values() if isinstance(r, LLMError)]
        if errors and len(errors) == len(replies) and stop_reason is None:
            raise ModelUnavailable(f"all {len(errors)} model calls of generation {gen} failed; the first: "
                                   + " ".join(str(errors[0]).split())[:400])
        if errors:  # the provider's own words on the console, not only in the run store
            self.rt.emit("model_errors", generation=gen, errors=len(errors), calls=len(replies),
                         error=" ".join(str(errors[0]).split())[:300])
        for i, dup_reply, why in to_redraw:  # novelty before evaluation: a duplicate is not evaluated; asked again
            if stop_reason is None:
                got, stop_reason = self._redraw(gen, state, plan[i], prompts[i], subsets[i], i, seen, to_repair,
                                                (dup_reply, why))
                n_ok += got
        for i, text, parsed, common in to_repair:  # error feedback: once per failing reply, in the budget
            if stop_reason is None:
                stop_reason = self._repair_one(plan[i][0], prompts[i], text, parsed, common, seen, i)
        n_hyper = self._propose_hyper(state, rng, seen)
        store.mark(f"proposed:{gen}")
        self.rt.emit("propose", generation=gen, prompts=len(prompts), replies=len(replies), new=n_ok + self._n_repair_new,
                     hyper=n_hyper, repaired=self._n_fixed, feedback_repairs=self._n_repaired,
                     duplicates=self._n_duplicates, behaviour_duplicates=self._n_behaviour, redraws=self._n_redraws,
                     stop_reason=stop_reason)
        return {"stop_reason": stop_reason} if stop_reason else {}

    def _redraw(self, gen: int, state: RunState, planned: tuple[str, list[CandidateRow]], pr: Any, subset: list[str],
                i: int, seen: set[str], to_repair: list, dup: tuple[str, str]) -> tuple[int, str | None]:
        """Ask prompt ``i`` again after its reply duplicated an earlier candidate: another seed, and a
        temperature 0.2 higher per try (at most 1.2), up to ``novelty_redraws`` times or until the code is
        new or fails. Each try is a model call of the run (budget, cassette, cache). Returns (1 when a new
        candidate was added else 0, a stop reason when a budget stopped it). With ``redraw_feedback`` each try
        shows the model the reply that repeated (``dup``: its text, why it is not new) instead of the same prompt."""
        for k in range(1, self.cfg.novelty_redraws + 1):
            temp = min(max(self.cfg.temperature, 0.2) + 0.2 * k, 1.2)
            asked = pr
            if self.cfg.redraw_feedback and dup[0]:  # the repeated program and why it is not new (recorded as asked)
                asked = replace(pr, messages=redraw_messages(self.style, pr.messages, dup[0], dup[1],
                                                             self.ev.template.name, pr.prefix))
            try:
                rep = self._call(asked.messages, call_seed(self.cfg.seed, gen, i, "redraw", k), pr.stop, temp)
            except BudgetExceeded as exc:
                return 0, _stop_reason(exc)
            except LLMError as exc:
                rep = exc
            self._n_redraws += 1
            new = self._record_reply(gen, state, planned, asked, subset, i, rep, seen, to_repair, True,
                                     suffix=f"d{k}")
            if new or not self._last_duplicate:
                return new, None
            dup = (self._last_reply, self._last_reason)
        return 0, None

    def _record_reply(self, gen: int, state: RunState, planned: tuple[str, list[CandidateRow]], pr: Any,
                      subset: list[str], i: int, rep: Any, seen: set[str], to_repair: list, may_repair: bool,
                      suffix: str = "") -> int:
        """Record reply ``i`` (its prompt, its candidate) and start evaluating it; 1 when it is new.
        ``self._last_duplicate`` says whether its code equalled an earlier candidate's."""
        self._last_duplicate = False
        op, parents = planned
        text = rep.text if not isinstance(rep, Exception) else None
        self._last_reply = text or ""
        usage = rep.to_dict() if not isinstance(rep, Exception) else {"error": str(rep)}
        usage.pop("text", None)
        pid = self.rt.store.add_prompt(generation=gen, operator=op, messages=pr.messages, principle_ids=subset,
                                       reply=text, usage=usage)
        common: dict[str, Any] = dict(generation=gen, operator=op, parents=[p.id for p in parents],
                                      cid=f"g{gen}-{i:03d}{suffix}", regime=state.get("regime"), principle_ids=subset,
                                      prompt_id=pid, usage=usage)
        if text is None:
            self.rt.store.add_candidate(code="", code_hash=None, status="invalid",
                                        error=f"model call failed: {rep}", **common)
            return 0
        parsed = parse_reply(text, self.ev, pr)
        if parsed.code is None and self.cfg.repair and fixable(parsed) and may_repair:
            to_repair.append((i, text, parsed, common))
        return self._add_parsed(parsed, common, seen)

    def _add_parsed(self, parsed: Parsed, common: dict, seen: set[str]) -> int:
        """Record one parsed reply as a candidate: invalid, duplicate (rejected before evaluation) or
        pending; returns 1 when it is new and goes to evaluation."""
        store = self.rt.store
        if parsed.code is None:
            store.add_candidate(code=parsed.raw[:4000], code_hash=None, status="invalid", thought=parsed.thought,
                                error=parsed.error, **common)
            return 0
        if parsed.fixes:
            self._n_fixed += 1
            self.rt.emit("repaired", generation=common["generation"], id=common["cid"], fixes=parsed.fixes)
        h = normalized_hash(parsed.code)
        dup = h in seen or store.has_hash(h)
        seen.add(h)
        error = "duplicate of an earlier candidate" if dup else None
        if not dup:
            like = self._behaves_like(parsed.code, h, common["cid"], common["generation"])
            if like is not None:
                dup, error = True, f"duplicate: behaves like {like} on the probe instances"
                self._n_behaviour += 1
        self._last_duplicate, self._last_reason = dup, error or ""
        self._n_duplicates += dup
        store.add_candidate(code=parsed.code, code_hash=h, thought=parsed.thought,
                            status="duplicate" if dup else "pending", error=error, **common)
        if not dup and self._early is not None:
            self._early.start(common["cid"], parsed.code)
        return 0 if dup else 1

    def _repair_one(self, op: str, pr: Any, text: str, parsed: Parsed, common: dict, seen: set[str],
                    i: int) -> str | None:
        """One error-feedback call for a failing reply; the result is its own candidate (operator
        "repair", parent: the failing one). Returns a stop reason when a budget stopped the call."""
        gen = common["generation"]
        messages = repair_messages(self.style, pr.messages, text, parsed, self.ev.template.name, pr.prefix)
        try:
            rep = self._call(messages, call_seed(self.cfg.seed, gen, i, "repair"), pr.stop)
        except BudgetExceeded as exc:
            return _stop_reason(exc)
        except LLMError as exc:
            self.rt.emit("model_errors", generation=gen, errors=1, calls=1, error=" ".join(str(exc).split())[:300])
            return None
        usage = rep.to_dict()
        usage.pop("text", None)
        pid = self.rt.store.add_prompt(generation=gen, operator="repair", messages=messages,
                                       principle_ids=common["principle_ids"], reply=rep.text, usage=usage)
        fixed = parse_reply(rep.text, self.ev, pr)
        self._n_repaired += 1
        self.rt.emit("feedback_repair", generation=gen, id=common["cid"], error=parsed.error, ok=fixed.code is not None)
        child = {**common, "operator": "repair", "parents": [common["cid"]], "cid": common["cid"] + "r",
                 "prompt_id": pid, "usage": usage}
        self._n_repair_new += self._add_parsed(fixed, child, seen)
        return None

    def _propose_hyper(self, state: RunState, rng: np.random.Generator, seen: set[str]) -> int:
        gen, store = state["generation"], self.rt.store
        n = int(round(self.cfg.hyper_lambda * state.get("weights", {}).get("hyper", 0.0)))
        if gen == 0 or n <= 0:
            return 0
        # the best candidate of the whole run that has constants to tune (the population's best
        # may have none: Best Fit's `-(bins - item)` has nothing to tune)
        archive = [c for c in store.candidates(status="evaluated", feasible=True, order="fitness")]
        elite = next((c for c in archive if find_constants(c.code, self.ev.template.name)), None)
        if elite is None:
            return 0
        st = hyper.HyperState(**(store.marker(f"hyper:{elite.code_hash}") or {}))
        added = 0
        for j, code in enumerate(hyper.ask(elite.code, self.ev.template.name, n, st.sigma, rng)):
            h = normalized_hash(code)
            if h in seen or store.has_hash(h):
                continue
            seen.add(h)
            store.add_candidate(generation=gen, operator="hyper", code=code, code_hash=h, parents=[elite.id],
                                cid=f"g{gen}-h{j:02d}",
                                regime=state.get("regime"), thought=f"constants of {elite.id} (sigma={st.sigma:.3g})")
            if self._early is not None:
                self._early.start(f"g{gen}-h{j:02d}", code)
            added += 1
        return added
