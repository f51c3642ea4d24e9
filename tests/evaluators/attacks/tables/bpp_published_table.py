"""Table of ``bpp_published_table``: FunSearch's published Weibull 5k items, as a memorising rule would hold them."""

from hifo.evaluators.registry import get_evaluator


def table(ev) -> list[list[int]]:
    return [list(i.items) for i in get_evaluator("bpp_online").load_instances("weibull_5k")]
