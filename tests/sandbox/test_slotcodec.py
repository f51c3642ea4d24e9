"""hifo.sandbox._slotcodec: the slot channel's compact encoding gives exactly what pickle gives, hands anything
else to pickle, and refuses forged bytes with ValueError only (issue 28: the per-call cost)."""

from __future__ import annotations

import pickle
import random

import numpy as np
import pytest

from hifo.sandbox import _fence, _slotcodec, _slotproc

VALUES = [
    0.3, -0.0, float("inf"), 7, -(1 << 63), True, False, None, "bins", "",
    np.arange(5.0), np.zeros((2, 3), dtype=np.float32), np.array(4.5), np.array([], dtype=np.int64),
    np.array([True, False]), np.arange(6, dtype=np.uint8).reshape(3, 2), np.array([1 + 2j]),
    ((0.3, np.arange(3.0)), {}), [1, [2.5, (None, "x")]], {"memory": {"step": 3, "m": np.ones(2)}},
]


def same(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes() and b.flags.writeable
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, float):
        return pickle.dumps(a) == pickle.dumps(b)  # -0.0 and inf keep their bits
    return a == b


@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_values_round_trip_as_pickle_would_give_them(value):
    data = _slotcodec.encode(value)
    assert data is not None
    assert same(pickle.loads(pickle.dumps(value)), _slotcodec.decode(data))


class Float(float):
    def __reduce__(self):  # a candidate's method: the codec must never run it
        raise AssertionError("ran")


@pytest.mark.parametrize("value", [
    np.float64(2.5), Float(1.0), [Float(1.0)], 1 << 70, {1: 2.0}, np.arange(6.0).reshape(2, 3).T,
    np.array(["a"]), np.array([1.0], dtype=">f8"), {1, 2}, b"bytes", 2j,
], ids=lambda v: type(v).__name__)
def test_anything_else_is_left_to_pickle(value):
    assert _slotcodec.encode(value) is None


def test_an_object_met_twice_is_left_to_pickle_which_keeps_it_one_object():
    shared = np.zeros(3)
    assert _slotcodec.encode((shared, shared)) is None
    assert _slotcodec.encode((np.zeros(3), np.zeros(3))) is not None
    inner = [1.0]
    assert _slotcodec.encode({"a": inner, "b": inner}) is None
    many = [np.zeros(1) for _ in range(3 * _slotcodec._SCAN)]  # past the identity scan: an id() set takes over
    assert _slotcodec.encode(many) is not None
    for repeated in (0, _slotcodec._SCAN - 1, _slotcodec._SCAN, len(many) - 1):
        assert _slotcodec.encode(many + [many[repeated]]) is None
        assert _slotcodec.encode([many[repeated]] + many) is None


def assert_cut_and_padded_frames_refused(frames: list[bytes]) -> None:
    """Every prefix of each frame, and each frame with a byte too many, is refused with ValueError."""
    for frame in frames:
        for cut in range(len(frame)):
            with pytest.raises(ValueError):
                _slotcodec.decode(frame[:cut])
        with pytest.raises(ValueError):
            _slotcodec.decode(frame + b"\x00")


def test_forged_or_truncated_frames_raise_value_error_only():
    rng = random.Random(0)
    frames = [_slotcodec.encode(v) for v in VALUES]
    assert_cut_and_padded_frames_refused(frames)
    for _ in range(3000):  # random bytes and bit-flipped frames: a value or ValueError, nothing else
        frame = bytearray(rng.choice(frames))
        if rng.random() < 0.5:
            frame = bytearray(rng.randbytes(rng.randrange(1, 64)))
        else:
            for _ in range(rng.randrange(1, 4)):
                frame[rng.randrange(len(frame))] = rng.randrange(256)
        try:
            _slotcodec.decode(bytes(frame))
        except ValueError:
            pass


def test_forged_bool_bytes_decode_to_plain_bools():
    frame = bytearray(_slotcodec.encode(np.array([True, False, True])))
    frame[-1] = 7  # not a bool byte
    decoded = _slotcodec.decode(bytes(frame))
    assert decoded.dtype == bool and decoded.view(np.uint8).tolist() == [1, 0, 1]  # not a raw 7 inside a bool


def test_a_forged_array_header_cannot_ask_for_a_huge_allocation():
    header = b"a" + bytes((0, 2)) + np.array([1 << 40, 1 << 40], dtype="<i8").tobytes()
    with pytest.raises(ValueError, match="array data"):
        _slotcodec.decode(header + b"\x00" * 16)


def test_through_the_slot_process_the_answers_are_those_of_pickle():
    code = ("import numpy as np\n"
            "class F(float):\n    pass\n"
            "def f(kind, x):\n"
            "    x[0] = -1.0\n"
            "    if kind == 'sub':\n        return F(2.0)\n"
            "    if kind == 'scalar':\n        return np.float64(x.sum())\n"
            "    if kind == 'fortran':\n        return np.asfortranarray(np.ones((2, 2)))\n"
            "    return [x, {'n': len(x)}, kind]\n")
    fence = {"imports": list(_fence.DEFAULT_SLOT_IMPORTS), "process": True}
    proxy = _slotproc.fork({"code": code, "entry": "f", "fence": fence}, (), {"memory_mb": 2048}).ready()
    try:
        arg = np.arange(3.0)
        plain = proxy("plain", arg)
        assert same(plain, [np.array([-1.0, 1.0, 2.0]), {"n": 3}, "plain"]) and arg[0] == 0.0
        scalar = proxy("scalar", arg)
        assert type(scalar) is np.float64 and scalar == 2.0  # pickled: numpy scalars keep their type
        fortran = proxy("fortran", arg)
        assert fortran.flags.f_contiguous and fortran.tolist() == [[1.0, 1.0], [1.0, 1.0]]
        with pytest.raises(_slotproc._execute.JobFailure, match="plain data"):  # a candidate's class stays refused
            proxy("sub", arg)
    finally:
        proxy.close()


torch = pytest.importorskip("torch")


def same_tensor(a, b) -> bool:
    """What pickle gives: exact type, dtype, shape, strides, values, no grad, a whole storage of its own."""
    return (type(a) is type(b) is torch.Tensor and a.dtype == b.dtype and a.shape == b.shape
            and a.stride() == b.stride() and a.storage_offset() == b.storage_offset() == 0
            and not a.requires_grad and not b.requires_grad and torch.equal(a, b)
            and a.untyped_storage().nbytes() == b.untyped_storage().nbytes())


TENSORS = [
    torch.arange(6, dtype=torch.float32).reshape(2, 3), torch.tensor(3.5, dtype=torch.float64),
    torch.zeros(0, 4, dtype=torch.int64), torch.tensor([True, False, True]), torch.arange(4, dtype=torch.bfloat16),
    torch.arange(5, dtype=torch.float16), torch.arange(3, dtype=torch.uint8), torch.arange(-3, 3, dtype=torch.int8),
    torch.arange(4, dtype=torch.int16), torch.arange(4, dtype=torch.int32),
]


@pytest.mark.parametrize("value", TENSORS, ids=lambda v: str(v.dtype))
def test_tensors_round_trip_as_pickle_would_give_them(value):
    other = value.clone() if value.numel() else torch.ones(1)  # empty storages all sit at 0: "shared", pickled
    data = _slotcodec.encode({"t": value, "n": [other]})
    assert data is not None
    decoded, expected = _slotcodec.decode(data), pickle.loads(pickle.dumps({"t": value, "n": [other]}))
    assert same_tensor(decoded["t"], expected["t"]) and same_tensor(decoded["n"][0], expected["n"][0])
    assert decoded["t"].untyped_storage().data_ptr() != value.untyped_storage().data_ptr() or not value.numel()
    decoded["t"].zero_()  # a tensor of its own: writable, the original untouched
    assert torch.equal(value, TENSORS[[id(t) for t in TENSORS].index(id(value))])


def tensors_left_to_pickle():
    shared = torch.ones(3)
    with_attribute = torch.ones(2)
    with_attribute.note = "kept by pickle"
    return [
        torch.nn.Parameter(torch.ones(2)), torch.ones(2, requires_grad=True), torch.arange(10.0)[2:5],
        torch.arange(10.0)[:5], torch.ones(2, 3).T, (shared, shared), (shared, shared.view(3, 1)),
        torch.ones(2).to_sparse(), torch.ones(2, dtype=torch.complex64), with_attribute,
    ]


@pytest.mark.parametrize("value", tensors_left_to_pickle(), ids=lambda v: type(v).__name__)
def test_other_tensors_are_left_to_pickle(value):
    assert _slotcodec.encode(value) is None


def test_forged_tensor_frames_raise_value_error_only():
    frames = [_slotcodec.encode(t) for t in TENSORS]
    assert_cut_and_padded_frames_refused(frames)
    header = b"x" + bytes((0, 2)) + np.array([1 << 40, 1 << 40], dtype="<i8").tobytes()  # a huge tensor
    with pytest.raises(ValueError, match="array data"):
        _slotcodec.decode(header + b"\x00" * 16)
    for tag in (b"a", b"x"):  # empty, but its strides would overflow: refused, not a RuntimeError
        for shape in [(1 << 62, 1 << 62, 0), (0, (1 << 63) - 1, (1 << 63) - 1)]:
            with pytest.raises(ValueError):
                _slotcodec.decode(tag + bytes((0, len(shape))) + np.array(shape, dtype="<i8").tobytes())
    with pytest.raises(ValueError, match="array header"):  # a dtype index past the table
        _slotcodec.decode(b"x" + bytes((len(_slotcodec._TENSOR_DTYPES), 0)) + b"\x00" * 8)
    rng = random.Random(1)
    for _ in range(2000):  # bit-flipped tensor frames: a value or ValueError, nothing else
        forged = bytearray(rng.choice(frames))
        for _ in range(rng.randrange(1, 4)):
            forged[rng.randrange(len(forged))] = rng.randrange(256)
        try:
            _slotcodec.decode(bytes(forged))
        except ValueError:
            pass
    frame = bytearray(_slotcodec.encode(torch.tensor([True, False, True])))
    frame[-1] = 7
    assert _slotcodec.decode(bytes(frame)).tolist() == [True, False, True]


def test_the_encoder_keeps_the_tensor_class_it_froze(monkeypatch):
    """The slot server freezes torch.Tensor before the candidate loads: a candidate that rebinds it does not make
    the encoder treat (and call the methods of) its own class."""
    class Fake:
        dtype = property(lambda self: (_ for _ in ()).throw(AssertionError("ran")))

    monkeypatch.setattr(_slotcodec._Frozen, "frozen", False)
    monkeypatch.setattr(_slotcodec._Frozen, "tensor", None)
    _slotcodec.freeze()
    monkeypatch.setattr(torch, "Tensor", Fake)
    assert _slotcodec.encode(Fake()) is None
    assert _slotcodec.encode(torch.ones(2)) is not None


def test_the_codec_needs_no_torch_until_a_tensor_arrives():
    import subprocess
    import sys

    script = ("import sys, numpy as np\n"
              "from hifo.sandbox import _slotcodec\n"
              "data = _slotcodec.encode(((0.3, np.arange(3.0)), {'m': [1, 'x', None]}))\n"
              "value = _slotcodec.decode(data)\n"
              "assert 'torch' not in sys.modules, 'imported'\n"
              f"_slotcodec.decode({_slotcodec.encode(torch.ones(2))!r})\n"
              "assert 'torch' in sys.modules\n")
    subprocess.run([sys.executable, "-c", script], check=True, timeout=300)


def test_tensors_reach_the_slot_process_but_its_answers_stay_plain_data():
    """The trusted side may send tensors (the codec carries them as pickle would); an answer is plain data, as the
    restricted unpickler has always had it: a tensor in an answer, codec-encoded or pickled, is refused."""
    code = ("import torch\n"
            "def f(x, state):\n"
            "    if state.get('tensor'):\n        return x * 2\n"
            "    if state.get('parameter'):\n        return torch.nn.Parameter(torch.ones(1))\n"
            "    return (x.dtype == torch.float32, x.is_leaf, x.tolist())\n")
    fence = {"imports": list(_fence.DEFAULT_SLOT_IMPORTS) + ["torch"], "process": True}
    proxy = _slotproc.fork({"code": code, "entry": "f", "fence": fence}, (), {"memory_mb": 8192}).ready()
    try:
        x = torch.arange(4, dtype=torch.float32)
        assert proxy(x, {}) == (True, True, [0.0, 1.0, 2.0, 3.0])
        assert torch.equal(x, torch.arange(4, dtype=torch.float32))
        with pytest.raises(_slotproc._execute.JobFailure, match="plain data"):
            proxy(x, {"tensor": True})  # codec-encoded by the server: refused by the parent's decoder
        with pytest.raises(_slotproc._execute.JobFailure, match="plain data"):
            proxy(x, {"parameter": True})  # pickled: the restricted unpickler refuses its class, as before the codec
    finally:
        proxy.close()
