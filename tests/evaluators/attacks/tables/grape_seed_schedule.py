"""Table of ``grape_seed_schedule``: for each published ``grape_anchor`` test run (training seeds 2 and 3), keyed by
its length, budget and the first mini-batch loss the slot is shown (step 0's, not anchored: a two-step run gives it),
the better of "no anchors" and "anchors on the last ``budget`` steps", each replayed by the evaluator's own scorer on
that very run, as a model that had replayed the published runs would carry (2 x 2 training runs, ~25 s on one core)."""

from hifo.evaluators.registry import get_evaluator
from hifo.problems._repro import one_torch_thread
from hifo.problems.grape import train


def table(ev) -> dict[str, str]:
    public = get_evaluator("grape_anchor")
    public.public_seeds = True
    out = {}
    for inst in public.load_instances("test"):
        with one_torch_thread():  # as the sandboxed run computes it (GrAPEAnchor.solve: one torch thread)
            run, _ = train("grape", inst.model, 2, inst.seed, anchor_rule=lambda *a: False, budget=inst.budget,
                           log_every=0)
        schedules = {"none": [], "back_loaded": list(range(inst.steps - inst.budget, inst.steps))}
        loss = {name: public.score(inst, {"anchors": a})["test_loss"] for name, a in schedules.items()}
        out[f"{inst.steps}:{inst.budget}:{float(run.losses[0])!r}"] = min(loss, key=loss.get)
    return out
