"""Which knowledge base a run reads and writes, so that a recorded run replays exactly.

A run's prompts depend on what the knowledge base recalls, and recall depends on the store's contents and
on its clock (recency). The documented use — ``hifo run --record c.jsonl`` and then
``hifo run --model replay:c.jsonl``, both on the shared knowledge base — would otherwise replay against a
store the recording itself has changed. So:

* a **recording** run writes a ``kb_snapshot`` line into its cassette before the search starts: every
  principle of the store as it was read (the ``hifo principles export`` document) and the clock value
  the run uses; that run's knowledge-base clock is frozen at that value, so the timestamps and recency
  it computes do not depend on when it ran;
* a **replay** of a cassette with a snapshot works on a private copy of that snapshot in its run
  directory (``RUN_DIR/knowledge.sqlite``) with the same frozen clock, and never writes into the shared
  store: a replay is a reproduction, not new evidence about principles;
* a cassette without a snapshot (recorded before snapshots existed, or by hand) replays against the
  configured store, with a warning that it may diverge.

Limit: a recording is exact only if no other run writes the same shared store while it runs (the snapshot
is taken once, at the start).

The same goes for an evaluator's **secret instance sets** (``Evaluator.secret_sets``, issue 28): their draws
come from a key, and a run that drew a new key when resumed would score its later candidates on other
instances than its earlier ones (a replay would select other parents and leave its cassette). So the key is
the run's own (:func:`bind_secret_key`): drawn once, kept in the run store (``secret_key`` meta entry; the
run folder is never visible inside the sandbox), reused on resume, and written with a recording's snapshot
so its replay meets the same draws.
"""

from __future__ import annotations

import json
import logging
import secrets
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from hifo.agents.config import RunConfig
from hifo.agents.rundb import RunStore
from hifo.knowledge_base import KnowledgeBase, default_kb_path

log = logging.getLogger(__name__)
PRIVATE_KB = "knowledge.sqlite"


def find_in_chain(client: Any, cls: type) -> Any:
    """The first wrapper or backend of type ``cls`` in a client chain (wrappers keep theirs in ``inner``)."""
    seen = 0
    while client is not None and seen < 32:
        if isinstance(client, cls):
            return client
        client, seen = getattr(client, "inner", None), seen + 1
    return None


def export_document(kb: KnowledgeBase) -> dict[str, Any]:
    """The store as its JSON export document (all principles, statuses and provenance)."""
    with tempfile.TemporaryDirectory(prefix="hifo-kb-") as tmp:
        path = Path(tmp) / "export.json"
        kb.export_json(path)
        return json.loads(path.read_text(encoding="utf-8"))


def _frozen(t: float):
    return lambda: t


def open_run_kb(cfg: RunConfig, client: Any, run_dir: Path, store: RunStore, resume: bool) -> KnowledgeBase:
    """The knowledge base of this run (see the module docstring); notes its choice in the run store's
    ``kb`` meta entry."""
    from hifo.agents.llm.replay import RecordingClient, ReplayClient

    shared = Path(cfg.kb).expanduser() if cfg.kb else default_kb_path()
    replay, recorder = find_in_chain(client, ReplayClient), find_in_chain(client, RecordingClient)
    if replay is not None and replay.kb_snapshot is not None:
        snap = replay.kb_snapshot
        private = run_dir / PRIVATE_KB
        if not resume or not private.exists():
            doc_path = run_dir / "kb_snapshot.json"
            doc_path.write_text(json.dumps(snap["export"]), encoding="utf-8")
            private.unlink(missing_ok=True)
            with KnowledgeBase(private) as fresh:
                fresh.import_json(doc_path)
            if recorder is not None:  # re-recording a replay: the new cassette starts from the same store
                recorder.write_kb_snapshot({**{k: snap[k] for k in ("clock", "kb_path", "export") if k in snap},
                                            "temperature": cfg.temperature, **_key_entry(store)})
        store.set_meta("kb", {"path": str(private), "source": f"snapshot in {replay.path}",
                              "principles": len(snap["export"].get("principles", [])), "clock": snap["clock"]})
        return KnowledgeBase(private, clock=_frozen(float(snap["clock"])))
    if replay is not None:
        msg = (f"replay cassette {replay.path} holds no knowledge-base snapshot: recall reads {shared} as it is "
               "now, so the replay matches the recording only if that store is unchanged since then")
        log.warning(msg)
        store.set_meta("kb", {"path": str(shared), "source": "live (no snapshot in the cassette)", "warning": msg})
        return KnowledgeBase(shared)
    if recorder is not None:
        kb_meta = store.get_meta("kb") if resume else None
        if kb_meta and "clock" in kb_meta:
            return KnowledgeBase(shared, clock=_frozen(float(kb_meta["clock"])))
        clock = time.time()
        kb = KnowledgeBase(shared, clock=_frozen(clock))
        export = export_document(kb)
        # the run's sampling temperature goes with it: `--model replay:FILE` takes it from here
        recorder.write_kb_snapshot({"clock": clock, "kb_path": str(shared), "export": export,
                                    "temperature": cfg.temperature, **_key_entry(store)})
        store.set_meta("kb", {"path": str(shared), "source": "live, snapshot recorded in the cassette",
                              "principles": len(export.get("principles", [])), "clock": clock})
        return kb
    store.set_meta("kb", {"path": str(shared), "source": "live"})
    return KnowledgeBase(shared)


def bind_secret_key(evaluator: Any, client: Any, store: RunStore) -> None:
    """Give ``evaluator`` the run's own key for its secret instance sets (see the module docstring): the one in
    the run store (a resumed run), else the one a replayed cassette was recorded with, else a new one; kept in
    the store. Call before :func:`open_run_kb`, which writes it into a recording's snapshot. No-op for an
    evaluator without secret sets."""
    from hifo.agents.llm.replay import ReplayClient

    if not getattr(evaluator, "secret_sets", ()):
        return
    key = store.get_meta("secret_key")
    if key is None:
        replay = find_in_chain(client, ReplayClient)
        snap = replay.kb_snapshot if replay is not None else None
        key = (snap or {}).get("secret_key") or secrets.token_hex(32)
        store.set_meta("secret_key", key)
    evaluator.use_secret_key(bytes.fromhex(key))


def _key_entry(store: RunStore) -> dict[str, str]:
    key = store.get_meta("secret_key")
    return {"secret_key": key} if key else {}


def draw_secret_test_ahead(rt: Any) -> None:
    """A secret test set is drawn when first loaded, which can take a while (tsp_construct: an LKH-3 reference per
    instance, ~12 s): draw it in a thread while the search runs, so the final test evaluation does not wait for it
    (nor outrun ``--max-wall``), with the references the evaluator computes lazily (``prepare_references``).
    A failure here is left to the real load at the end, which reports it.
    ``rt``: the run's Runtime (agents/graph.py)."""
    test_set = rt.config.test_set or rt.evaluator.default_test_set
    if not test_set or test_set == rt.scorer.instance_set or not rt.evaluator.seeds_secret(test_set) \
            or rt.store.marker("tested"):
        return

    def draw() -> None:
        try:
            rt.evaluator.load_instances(test_set)
            rt.evaluator.prepare_references(test_set)  # references computed lazily by some evaluators (milp_primal)
        except Exception:  # noqa: BLE001  (reported by the final load)
            pass

    threading.Thread(target=draw, name="hifo-secret-test-draw", daemon=True).start()
