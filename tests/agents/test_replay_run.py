"""A recorded run replays exactly: same prompts, same candidates, same scores."""

from hifo.agents.config import RunConfig
from hifo.agents.graph import start_run
from hifo.agents.llm.factory import make_client
from hifo.agents.llm.replay import RecordingClient
from hifo.agents.rundb import RunStore
from hifo.sandbox import LocalExecutor


def _table(run_dir):
    store = RunStore(run_dir / "run.sqlite")
    try:
        cands = [(c.id, c.operator, c.parents, c.code, c.status, c.fitness, c.error) for c in store.candidates(order="id")]
        prompts = sorted((p["generation"], p["operator"], p["messages"][0]["content"], p["reply"]) for p in store.prompts())
        return cands, prompts, [(f["regime"], f["reason"]) for f in store.foresight()]
    finally:
        store.close()


def test_replay_reproduces_a_run_exactly(tmp_path, fake_model):
    cassette = tmp_path / "cassette.jsonl"
    common = dict(problem="bpp_online", generations=2, population=3, offspring=4, hyper_lambda=2, seed=5,
                  init_samples=8, workers=2, test_set="train")
    with LocalExecutor(max_workers=2) as ex:
        rec_dir, rec = start_run(RunConfig(model="fake", kb=str(tmp_path / "kb1.sqlite"), run_dir=str(tmp_path / "a"),
                                           **common), client=RecordingClient(fake_model, cassette), executor=ex)
        calls = fake_model.calls
        rep_client = make_client(f"replay:{cassette}")
        rep_dir, rep = start_run(RunConfig(model=f"replay:{cassette}", kb=str(tmp_path / "kb2.sqlite"),
                                           run_dir=str(tmp_path / "b"), **common), client=rep_client, executor=ex)
    assert fake_model.calls == calls  # the replay never touched the model
    a, b = _table(rec_dir), _table(rep_dir)
    assert a[0] == b[0] and len(a[0]) > 10
    assert a[1] == b[1]
    assert a[2] == b[2]
    assert rec["best"]["objective"] == rep["best"]["objective"]
