"""A search on a Ray cluster, as the README shows it: several raylets on this machine (Ray's own
``cluster_utils.Cluster``: a head without CPUs and two worker nodes), one worker node removed mid-run,
and the Ray Client (``ray://``) path. Every evaluation must survive, and every candidate's record
must say which node ran it and which sandbox layers it got there."""

from __future__ import annotations

import threading
import time

import pytest

ray = pytest.importorskip("ray", reason="ray is not installed (optional extra: pip install 'hifo[ray]')")

from hifo.agents.config import RunConfig  # noqa: E402
from hifo.agents.graph import start_run  # noqa: E402
from hifo.agents.rundb import RunStore  # noqa: E402

pytestmark = pytest.mark.slow
STORE_MB = 80 * 1024 * 1024


def _cfg(tmp_path, name, address, **kw):
    base = dict(problem="bpp_online", model="fake", generations=2, population=3, offspring=4, hyper_lambda=1,
                seed=11, init_samples=6, kb=str(tmp_path / "kb.sqlite"), run_dir=str(tmp_path / name),
                workers=2, test_set="train", executor="ray", address=address)
    base.update(kw)
    return RunConfig(**base)


@pytest.fixture
def cluster():
    from ray.cluster_utils import Cluster

    if ray.is_initialized():
        pytest.skip("a Ray instance is already initialised in this process")
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "object_store_memory": STORE_MB,
                                                      "ray_client_server_port": 21_931})
    workers = [c.add_node(num_cpus=1, object_store_memory=STORE_MB) for _ in range(2)]
    c.wait_for_nodes()
    try:
        yield c, workers
    finally:
        if ray.is_initialized():
            ray.shutdown()
        c.shutdown()


def _evaluated(run_dir) -> list:
    path = run_dir / "run.sqlite"
    if not path.exists():
        return []
    store = RunStore(path)
    try:
        return store.candidates(status="evaluated")
    finally:
        store.close()


def _assert_nothing_lost(run_dir):
    store = RunStore(run_dir / "run.sqlite")
    try:
        cands = store.candidates()
        assert cands and "pending" not in {c.status for c in cands}
        evaluated = [c for c in cands if c.status == "evaluated"]
        lost = [c.error for c in evaluated if c.error and ("sandbox error" in c.error or "setup failed" in c.error)]
        assert not lost, lost  # a lost node is Ray's fault, retried elsewhere, never the candidate's
        assert all(c.node and "/" in c.node for c in evaluated)  # host/ray-node-id on every record
        assert all(c.isolation.get("level") == "standard" and c.isolation.get("layers") for c in evaluated)
        return evaluated, store.placements()
    finally:
        store.close()


def test_search_survives_a_worker_node_removed_mid_run(tmp_path, cluster, fake_model):
    c, workers = cluster
    cfg = _cfg(tmp_path, "ray-run", c.address)
    run_dir = tmp_path / "ray-run"
    removed_at: list[float] = []

    def remove_one_node():
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and len(_evaluated(run_dir)) < 4:
            time.sleep(0.2)
        c.remove_node(workers[1])
        removed_at.append(time.time())

    killer = threading.Thread(target=remove_one_node, daemon=True)
    killer.start()
    _, summary = start_run(cfg, client=fake_model)
    killer.join(timeout=60)
    assert removed_at, "the node was never removed"
    assert summary["stop_reason"] == "2 generation(s) done"
    evaluated, placements = _assert_nothing_lost(run_dir)
    nodes = {c.node for c in evaluated}
    assert len(nodes) == 2, placements  # both worker nodes ran candidates (the head has no CPU)
    after = {c.node for c in evaluated if c.wall_s is not None and _evaluated_at(run_dir, c.id) > removed_at[0] + 5}
    assert len(after) <= 1  # once the node is gone, only the survivor runs candidates


def test_search_through_ray_client(tmp_path, cluster, fake_model):
    pytest.importorskip("grpc", reason="Ray Client needs ray[client]")
    c, _ = cluster
    host = c.address.split(":")[0]
    # Ray's proxier starts a client server per connection; on a 2-core machine that server has died at start-up
    # now and then: "Starting Ray client server failed" (stop 39 and stop 41 notes), or the proxier reading the
    # command line of a server that is already a zombie (psutil.ZombieProcess, CI of stop 43) — both raised inside
    # Ray's proxier before hifo's code runs, while the same test passed alone and in full-suite runs. Up to two
    # more connections, each in a fresh run folder, handle Ray's flake; a failure of any other kind, or a third
    # start-up failure, fails the test. hifo's code is the same on every try. (After a failed connection the
    # executor leaves Ray's client mode, tests/sandbox/test_ray_connect.py, so a retry starts clean.)
    for attempt in (1, 2, 3):
        name = f"ray-client-{attempt}"
        try:
            _, summary = start_run(_cfg(tmp_path, name, f"ray://{host}:21931", generations=1), client=fake_model)
            break
        except ConnectionAbortedError as exc:
            if attempt == 3 or not _ray_client_server_start_failed(str(exc)):
                raise
    assert summary["stop_reason"] == "1 generation(s) done"
    evaluated, _ = _assert_nothing_lost(tmp_path / name)
    assert evaluated


def _ray_client_server_start_failed(message: str) -> bool:
    """Whether a Ray Client connection died because Ray's proxier could not start the per-connection server."""
    return "Starting Ray client server failed" in message or (
        "Initialization failure from server" in message and "proxier.py" in message and "ZombieProcess" in message)


def _evaluated_at(run_dir, cid) -> float:
    store = RunStore(run_dir / "run.sqlite")
    try:
        return store.candidate(cid).evaluated_at
    finally:
        store.close()
