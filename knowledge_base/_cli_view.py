"""Rendering helpers of ``hifo principles``: the principle table, pool states and where principles helped."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from .principle import Principle
    from .store import KnowledgeBase

STATE_HELP = {  # the State row of `hifo principles show`
    "probation": "probation (too few credited uses to judge; recall favours it so it gets tried)",
    "inactive": "inactive (moved out of recall by the pool cap; comes back when there is room)",
    "active": "active (judged and in recall)",
}


def when(ts: float | None) -> str:
    return "-" if ts is None else datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M")


def _origin(p: Principle) -> str:
    """Compact first provenance: ``r7/g3 +1`` (run, generation, how many more statements)."""
    if not p.provenance:
        return "-"
    first = p.provenance[0]
    parts = [first.run_id or "-"]
    if first.generation is not None:
        parts.append(f"g{first.generation}")
    extra = len(p.provenance) - 1
    return "/".join(parts) + (f" +{extra}" if extra else "")


def pool_view(store: KnowledgeBase, principles: list[Principle]) -> dict[str, dict[str, Any]]:
    """Per id: ``pool_state`` (active / probation / inactive / retired, `hifo.knowledge_base.pool.pool_state`),
    ``used_on`` (per-problem uses, wins, summed centred credit) and ``helped_on`` (the problems where that
    sum is positive)."""
    states, used = store.pool_states(), store.used_on_all()
    view = {}
    for p in principles:
        rows = used.get(p.id, {})
        view[p.id] = {"pool_state": states.get(p.id, p.status), "used_on": rows,
                      "helped_on": [prob for prob, d in rows.items() if d["credit_sum"] > 0]}
    return view


def helped(view: dict[str, Any]) -> str:
    """``tsp_construct (3 uses), bpp_online (5 uses)``: where the principle's credit summed positive."""
    parts = [f"{prob} ({view['used_on'][prob]['uses']} use{'s' if view['used_on'][prob]['uses'] != 1 else ''})"
             for prob in view["helped_on"]]
    return ", ".join(parts) or "-"


TABLE_MIN_WIDTH = 110  # below this the columns leave the principle too narrow: one stanza per principle instead


def principle_table(principles: list[Principle], title: str, view: dict[str, dict[str, Any]],
                    width: int = 200) -> Table | Group:
    """The principles as a table on wide terminals, as stanzas (a header line, then the whole text wrapped)
    on narrow ones: no width crops a principle's text."""
    if width < TABLE_MIN_WIDTH:
        return _principle_stanzas(principles, title, view)
    # Below 120 columns source and origin are dropped (`show ID` has them) so the principle text stays readable.
    wide = width >= 120
    table = Table(title=title, title_justify="left", expand=False)
    table.add_column("ID", no_wrap=True, style="cyan")
    table.add_column("Util", justify="right", no_wrap=True)
    table.add_column("Won", justify="right", no_wrap=True)
    table.add_column("State", overflow="fold")
    if wide:
        table.add_column("Source", overflow="fold")
    table.add_column("Problem", overflow="fold")
    if wide:
        table.add_column("Origin", overflow="fold")
    table.add_column("Helped on", overflow="fold")
    table.add_column("Principle", ratio=1, min_width=20)
    for p in principles:
        row = [p.id, f"{p.utility:+.3f}", f"{p.wins}/{p.uses}",
               view[p.id]["pool_state"] + (f" → {p.merged_into}" if p.merged_into else "")]
        row += [p.source, p.problem or "-", _origin(p)] if wide else [p.problem or "-"]
        row += [helped(view[p.id]), p.text]
        table.add_row(*row)
    return table


def _principle_stanzas(principles: list[Principle], title: str, view: dict[str, dict[str, Any]]) -> Group:
    parts: list[Text] = [Text(title, style="bold")]
    for p in principles:
        state = view[p.id]["pool_state"] + (f" → {p.merged_into}" if p.merged_into else "")
        head = Text.assemble((p.id, "cyan"), f"  util {p.utility:+.3f}  won {p.wins}/{p.uses}  {state}  "
                             f"problem {p.problem or '-'}  source {p.source}  helped on {helped(view[p.id])}")
        head.overflow = "fold"
        parts += [Text(""), head, Text(p.text, overflow="fold")]
    return Group(*parts)
