"""Seeds of the model calls of a run: every call of a run gets a seed no other call of the run gets.

A seed is part of a call's identity (the cache, the cassette, the sampler's randomness). Each kind of
call has a lane of its own, so a re-draw, an error-feedback repair and a runtime repair can never ask
the model the same thing with the same seed as another call (an earlier formula gave a runtime repair
of prompt ``i`` the seed of prompt ``i``'s first re-draw, and read the re-draw's ``d1`` suffix as a
prompt index). Within a lane the seed is ``run_seed * 100_003 + generation * 1_009 + index``, which is
what proposals have always used, so recorded proposal calls keep their seeds.
"""

from __future__ import annotations

import re
import zlib

LANE_WIDTH = 10_200_011  # > generation * 1_009 + index for every generation a run may reach (config: <= 10,000)
MAX_PROMPTS = 1_009  # prompts per generation that keep distinct seeds
MAX_REDRAWS = 10  # config.novelty_redraws is at most 10
LANES = {"propose": 0, "repair": 1, **{f"redraw{k}": 1 + k for k in range(1, MAX_REDRAWS + 1)},
         # runtime repairs of a proposal (try 0) or of re-draw try k, then of ids of another shape
         **{f"runtime_repair{k}": 12 + k for k in range(0, MAX_REDRAWS + 1)}, "runtime_repair_other": 23}
_ID = re.compile(r"g(\d+)-(\d+)(?:d(\d+))?")


def call_seed(run_seed: int, generation: int, index: int, kind: str = "propose", redraw: int = 0) -> int:
    """Seed of call ``index`` of ``generation`` of kind ``propose``, ``repair`` or ``redraw`` (try
    ``redraw`` = 1, 2, ...)."""
    if not 0 <= index < MAX_PROMPTS:
        raise ValueError(f"call index {index} outside 0..{MAX_PROMPTS - 1}")
    lane = LANES[f"redraw{redraw}"] if kind == "redraw" else LANES[kind]
    return int(run_seed) * 100_003 + lane * LANE_WIDTH + int(generation) * 1_009 + int(index)


def runtime_repair_seed(run_seed: int, candidate_id: str) -> int:
    """Seed of the runtime-error repair of ``candidate_id``. Runtime repairs are made for proposals
    (``g{generation}-{index:03d}``) and their re-draws (``...d{try}``): each try has a lane of its own.
    An id of another shape gets a CRC of the id inside a lane of its own (distinct from every other
    kind of call; two such ids of one run could share a seed with probability ~1e-7 per pair)."""
    m = _ID.fullmatch(candidate_id)
    if m and int(m.group(2)) < MAX_PROMPTS and int(m.group(3) or 0) <= MAX_REDRAWS:
        gen, index, k = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
        return int(run_seed) * 100_003 + LANES[f"runtime_repair{k}"] * LANE_WIDTH + gen * 1_009 + index
    offset = zlib.crc32(candidate_id.encode()) % LANE_WIDTH
    return int(run_seed) * 100_003 + LANES["runtime_repair_other"] * LANE_WIDTH + offset
