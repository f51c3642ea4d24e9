"""``hifo principles …``: inspect and manage the knowledge base from the shell.

A typer sub-app, `principles_app`, mounted by the main CLI.  Every command takes ``--kb PATH`` (default
`default_kb_path()`) and ``--json`` (machine-readable output on stdout); errors go to stderr with exit
status 1.  Read-only commands never create a knowledge base file.  Listings show each principle's
state in the bounded pool (active, probation, inactive, retired) and the problems it helped on; ``show``
adds a row per problem it was used on (`hifo.knowledge_base._cli_view`).
"""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, Optional

import typer
from rich.console import Console
from rich.table import Table

from ._cli_view import STATE_HELP, helped, pool_view, principle_table, when

if TYPE_CHECKING:
    from .principle import Principle
    from .store import KnowledgeBase


def _console() -> Console:
    # principles are the model's or a user's text: shown verbatim (no markup, no emoji codes: "bins[mask]", ":fire:")
    return Console(highlight=False, markup=False, emoji=False)

principles_app = typer.Typer(
    name="principles",
    help="Inspect and manage the design principles hifo has learned (the knowledge base).",
    no_args_is_help=True,
    add_completion=False,
)


class StatusFilter(str, Enum):
    active = "active"
    retired = "retired"
    all = "all"


KbOption = Annotated[
    Optional[Path],
    typer.Option("--kb", help="Knowledge base file [default: $HIFO_KB or ~/.local/share/hifo/knowledge.sqlite]",
                 show_default=False, dir_okay=False),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]


def _fail(message: str) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)  # hifo's exit code for bad input (a missing store, an unknown id, a bad file)


def _kb_path(kb: Path | None) -> Path:
    from ._schema import default_kb_path

    return kb.expanduser() if kb is not None else default_kb_path()


def _open(kb: Path | None, *, create: bool = False) -> KnowledgeBase | None:
    """Open the store; None when it does not exist and ``create`` is false."""
    from ._schema import KnowledgeBaseError
    from .store import KnowledgeBase

    path = _kb_path(kb)
    try:
        return KnowledgeBase(path, create=create)
    except FileNotFoundError:
        return None
    except KnowledgeBaseError as exc:
        _fail(str(exc))


def _missing_store(kb: Path | None, as_json: bool) -> None:
    """A read of a store that does not exist: a named ``--kb`` is an error (most often a typo), the
    default store that no run has created yet reads as empty (and is not created)."""
    if kb is not None:
        _fail(f"knowledge base {_kb_path(kb)} does not exist (check the path; without --kb the default "
              "store is read)")
    if as_json:
        _emit_json([])
    else:
        _console().print(f"No principles found (no knowledge base at {_kb_path(kb)} yet; "
                                       "a run creates it).")


def _open_or_create(kb: Path | None) -> KnowledgeBase:
    """Open the store, creating it when it does not exist."""
    store = _open(kb, create=True)
    if store is None:  # KnowledgeBase(create=True) makes the file; a None here is a bug, not a user error
        _fail(f"could not create the knowledge base {_kb_path(kb)}")
    return store


def _emit_json(data: Any) -> None:
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False))


def _print_principles(principles: list[Principle], as_json: bool, title: str,
                      view: dict[str, dict[str, Any]] | None = None) -> None:
    view = view or {}
    if as_json:
        _emit_json([{**p.to_dict(), **view.get(p.id, {})} for p in principles])
    elif not principles:
        _console().print("No principles found.")
    else:
        console = _console()
        console.print(principle_table(principles, title, view, console.width))


@principles_app.command("list")
def list_command(
    kb: KbOption = None,
    as_json: JsonOption = False,
    status: Annotated[StatusFilter, typer.Option("--status", help="Which principles to list.")] = StatusFilter.active,
    problem: Annotated[Optional[str], typer.Option("--problem", help="Only those first stated for this problem.")] = None,
    source: Annotated[Optional[str], typer.Option("--source", help="model, contrast, user, import or seed.")] = None,
    limit: Annotated[Optional[int], typer.Option("--limit", min=0, help="At most this many.")] = None,
) -> None:
    """List principles, highest utility first."""
    store = _open(kb)
    if store is None:
        _missing_store(kb, as_json)
        return
    with store:
        try:
            found = store.list(None if status is StatusFilter.all else status.value, problem, limit, source=source)
        except ValueError as exc:
            _fail(str(exc))
        view = pool_view(store, found)
    _print_principles(found, as_json, f"Principles ({status.value}) in {store.path}", view)


@principles_app.command("show")
def show_command(
    principle_id: Annotated[str, typer.Argument(metavar="ID", help="A principle id (or a unique prefix of one).")],
    kb: KbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show one principle with its statistics and full provenance."""
    from ._rows import PrincipleNotFound

    store = _open(kb)
    if store is None:
        _fail(f"unknown principle id {principle_id!r} (knowledge base {_kb_path(kb)} does not exist)")
    with store:
        try:
            p = store.get(store.find_id(principle_id))
        except PrincipleNotFound as exc:
            _fail(f"unknown principle id: {exc.args[0]}")
        if p is None:
            _fail(f"unknown principle id {principle_id!r}")
        view = pool_view(store, [p])[p.id]
    if as_json:
        _emit_json({**p.to_dict(), **view, "learnt_on": p.problems})
        return
    console = _console()
    info = Table.grid(padding=(0, 2))
    info.add_column(style="bold", no_wrap=True)
    info.add_column()
    rows = [
        ("ID", p.id), ("Text", p.text), ("Tags", ", ".join(p.tags) or "-"), ("Problem", p.problem or "-"),
        ("Source", p.source), ("Status", p.status + (f" (merged into {p.merged_into})" if p.merged_into else "")),
        ("State", STATE_HELP.get(view["pool_state"], view["pool_state"])),
        ("Learnt on", ", ".join(p.problems) or "-"), ("Helped on", helped(view)),
        ("Utility", f"{p.utility:+.4f}"), ("Uses / wins", f"{p.uses} / {p.wins} (win rate {p.win_rate:.2f})"),
        ("Support", f"{p.support} statement(s)"), ("Created", when(p.created_at)),
        ("Updated", when(p.updated_at)), ("Last used", when(p.last_used_at)),
    ]
    for key, value in rows:
        info.add_row(key, value)
    console.print(info)
    prov = Table(title="Provenance", title_justify="left")
    for column in ("#", "Run", "Generation", "Candidates", "Problem", "Source", "Recorded"):
        prov.add_column(column, overflow="fold")
    for i, record in enumerate(p.provenance, 1):
        prov.add_row(
            str(i), record.run_id or "-", "-" if record.generation is None else str(record.generation),
            ", ".join(record.candidate_ids) or "-", record.problem or "-", record.source or "-",
            when(record.recorded_at),
        )
    console.print(prov)
    if view["used_on"]:
        use = Table(title="Where it was used (credit centred on its generation)",
                    title_justify="left")
        for column in ("Problem", "Uses", "Wins", "Credit sum", "Mean credit", "Helped"):
            use.add_column(column, justify="left" if column == "Problem" else "right")
        for prob, d in view["used_on"].items():
            use.add_row(prob, str(d["uses"]), str(d["wins"]), f"{d['credit_sum']:+.3f}",
                        f"{d['credit_sum'] / d['uses']:+.3f}" if d["uses"] else "-",
                        "yes" if prob in view["helped_on"] else "no")
        console.print(use)
    else:
        console.print("Not used on any problem yet.")


@principles_app.command("search")
def search_command(
    query: Annotated[str, typer.Argument(help="Words to look for in principle text and tags.")],
    kb: KbOption = None,
    as_json: JsonOption = False,
    limit: Annotated[int, typer.Option("--limit", min=1, help="At most this many.")] = 20,
    any_term: Annotated[bool, typer.Option("--any", help="Match any word instead of all of them.")] = False,
    retired: Annotated[bool, typer.Option("--include-retired", help="Search retired principles too.")] = False,
) -> None:
    """Full-text search (stemmed, best match first)."""
    store = _open(kb)
    if store is None:
        _missing_store(kb, as_json)
        return
    with store:
        found = store.search(query, limit, status=None if retired else "active", any_term=any_term)
        view = pool_view(store, found)
    _print_principles(found, as_json, f"Principles matching {query!r}", view)


@principles_app.command("export")
def export_command(
    path: Annotated[Path, typer.Argument(help="JSON file to write.", dir_okay=False)],
    kb: KbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Write every principle (retired ones too, with provenance) to a JSON file."""
    store = _open(kb)
    if store is None:
        _fail(f"knowledge base {_kb_path(kb)} does not exist; nothing to export")
    folder = path.expanduser().parent
    if not folder.is_dir():  # a typo in the folder is not a request to make it (issue 31)
        store.close()
        _fail(f"folder {folder} does not exist; create it first (mkdir -p {folder})")
    with store:
        try:
            count = store.export_json(path.expanduser())
        except OSError as exc:
            _fail(f"cannot write {path}: {exc}")
    if as_json:
        _emit_json({"exported": count, "path": str(path), "kb": str(store.path)})
    else:
        _console().print(f"Exported {count} principle(s) from {store.path} to {path}")


@principles_app.command("import")
def import_command(
    path: Annotated[Path, typer.Argument(help="JSON file written by `export` (or a list of texts).", dir_okay=False)],
    kb: KbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Merge principles from a JSON file; importing the same file twice adds nothing."""
    if not path.is_file():
        _fail(f"{path} does not exist")
    store = _open_or_create(kb)
    with store:
        try:
            report = store.import_json(path)
        except (ValueError, OSError) as exc:
            _fail(f"cannot import {path}: {exc}")
    if as_json:
        _emit_json({**report, "path": str(path), "kb": str(store.path)})
    else:
        summary = ", ".join(f"{n} {what}" for what, n in report.items())
        _console().print(f"Imported {path} into {store.path}: {summary}")


@principles_app.command("prune")
def prune_command(
    kb: KbOption = None,
    as_json: JsonOption = False,
    min_uses: Annotated[int, typer.Option("--min-uses", min=1, help="Only principles tried this often.")] = 5,
    max_utility: Annotated[float, typer.Option("--max-utility", help="Retire those with utility at most this.")] = 0.0,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only show what would be retired.")] = False,
) -> None:
    """Retire (never delete) principles that keep not helping."""
    store = _open(kb)
    view: dict[str, dict[str, Any]] = {}
    if store is None:
        retired: list[Principle] = []
    else:
        with store:
            ids = store.prune(min_uses, max_utility, dry_run=dry_run)
            retired = [p for p in (store.get(pid) for pid in ids) if p is not None]
            view = pool_view(store, retired)
    if as_json:
        _emit_json({"retired": [p.id for p in retired], "dry_run": dry_run,
                    "principles": [p.to_dict() for p in retired]})
        return
    console = _console()
    if not retired:
        console.print("Nothing to retire.")
        return
    verb = "Would retire" if dry_run else "Retired"
    console.print(principle_table(retired, f"{verb} {len(retired)} principle(s)", view, console.width))


@principles_app.command("add")
def add_command(
    text: Annotated[str, typer.Argument(help="The principle, one or two plain sentences.")],
    kb: KbOption = None,
    as_json: JsonOption = False,
    tags: Annotated[Optional[list[str]], typer.Option("--tag", help="A tag (repeatable).")] = None,
    problem: Annotated[Optional[str], typer.Option("--problem", help="The problem it is about (none: general).")] = None,
) -> None:
    """Add a principle of your own (source "user"); a near-duplicate is merged into the existing one."""
    store = _open_or_create(kb)
    with store:
        try:
            p = store.add(text, tags or [], problem, source="user")
        except ValueError as exc:
            _fail(str(exc))
    if as_json:
        _emit_json(p.to_dict())
    elif p.text != text.strip():  # a near-duplicate absorbed it
        _console().print(f"Merged into existing principle {p.id}: {p.text}")
    else:
        _console().print(f"{p.id}: {p.text}")


@principles_app.command("reactivate")
def reactivate_command(
    principle_id: Annotated[str, typer.Argument(metavar="ID", help="A retired principle's id (or prefix).")],
    kb: KbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Bring a retired principle back into recall."""
    from ._rows import PrincipleNotFound

    store = _open(kb)
    if store is None:
        _fail(f"unknown principle id {principle_id!r} (knowledge base {_kb_path(kb)} does not exist)")
    with store:
        try:
            p = store.reactivate(store.find_id(principle_id))
        except PrincipleNotFound as exc:
            _fail(f"unknown principle id: {exc.args[0]}")
        except ValueError as exc:
            _fail(str(exc))
    if as_json:
        _emit_json(p.to_dict())
    else:
        _console().print(f"Reactivated {p.id}: {p.text}")


@principles_app.command("stats")
def stats_command(kb: KbOption = None, as_json: JsonOption = False) -> None:
    """Counts by status, source and problem."""
    store = _open(kb)
    if store is None:
        _fail(f"knowledge base {_kb_path(kb)} does not exist")
    with store:
        stats = store.stats()
    if as_json:
        _emit_json(stats)
        return
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    for key, value in stats.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k}: {v}" for k, v in value.items()) or "-"
        elif isinstance(value, float):
            value = f"{value:+.4f}"
        table.add_row(key.replace("_", " "), "-" if value is None else str(value))
    _console().print(table)
