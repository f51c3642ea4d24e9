"""Decoding speed of the embedded model with and without the slot grammar (issue 12, item 5).

    python -m benchmarks.grammar_speed [--samples 4] [--problems bpp_online tsp_construct]

For each problem one completion-style prompt (operator e1 over the baseline) is decoded ``--samples``
times in three modes: ``free`` (no grammar), ``mask`` (the prompt's grammar through `GrammarMask`, what
runs use) and ``llama_grammar`` (llama-cpp-python's own ``grammar=``, which checks the whole vocabulary at
every step).  The prompt is evaluated once beforehand, so the figures are generated tokens per second of
decoding alone (llama-cpp-python reuses the evaluated prompt).  Prints JSON; the machine's load average is
included because the figures scale with it. Results: `benchmarks/results/grammar_speed.json` (stdout, redirected).
"""

from __future__ import annotations

import argparse
import json
import os
import time


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=4)
    ap.add_argument("--problems", nargs="+", default=["bpp_online", "tsp_construct"])
    ap.add_argument("--max-tokens", type=int, default=96)
    a = ap.parse_args(argv)
    import llama_cpp
    from llama_cpp import LogitsProcessorList

    from hifo.agents.llm.grammar import GrammarMask
    from hifo.agents.llm.local import LocalGGUFClient
    from hifo.agents.prompting import ParentView, render_operator
    from hifo.evaluators import get_evaluator

    client = LocalGGUFClient("gemma-270m", n_threads=1)  # the slot grammar is for the base model
    llm = client._model()[0]
    out: dict = {"load_average": os.getloadavg(), "samples": a.samples}
    for problem in a.problems:
        ev = get_evaluator(problem)
        base = ParentView(ev.template.baseline_source(), "baseline", 1.0, -1.0)
        pr = render_operator("completion", "e1", evaluator=ev, parents=[base, base], principles=[], directive="",
                             grammar=True)
        text, gbnf = pr.messages[0]["content"], pr.messages[0]["grammar"]
        llm(text, max_tokens=1, temperature=0.0)  # evaluate the prompt once
        row = {}
        for mode in ("free", "mask", "llama_grammar"):
            tokens, secs, full = 0, 0.0, 0
            for seed in range(a.samples):
                kw: dict = dict(max_tokens=a.max_tokens, temperature=0.7, seed=seed, stop=pr.stop)
                mask = None
                if mode == "mask":
                    mask = GrammarMask(llm, gbnf)
                    kw["logits_processor"] = LogitsProcessorList([mask])
                elif mode == "llama_grammar":
                    kw["grammar"] = llama_cpp.LlamaGrammar.from_string(gbnf, verbose=False)
                t0 = time.perf_counter()
                r = llm(text, **kw)
                secs += time.perf_counter() - t0
                tokens += r["usage"]["completion_tokens"]
                if mask is not None:
                    full += mask.full_scans
                    mask.close()
            row[mode] = {"tokens": tokens, "seconds": round(secs, 2), "tokens_per_s": round(tokens / secs, 1)}
            if mode == "mask":
                row[mode]["full_vocabulary_scans"] = full
        out[problem] = row
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
