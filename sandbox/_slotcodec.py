"""A compact encoding for the slot channel's common values (:mod:`hifo.sandbox._slotchannel`): numbers, ``None``,
short strings, C-ordered numpy arrays of plain numeric dtypes, CPU torch tensors of plain dtypes, and tuples, lists
and string-keyed dicts of those.

Pickle costs ~5 us to write and ~3-5 us to read a small numpy array (its reduce protocol goes through Python and,
in the slot server, through the fence's audit hook on every class lookup), four times per slot call; this codec
writes the same values in ~1-2 us and reads them without looking up any class. :func:`encode_into` writes straight
into the channel's shared-memory frame (an array's bytes are copied once, from the array into the frame) and
:func:`decode` reads from it in place (once more, from the frame into the new array). :func:`encode_into` returns
``None`` for anything else (the caller then pickles, as before), so what reaches the other side is exactly what
pickle would have given: the same types (``type(x) is float``, never a subclass: no method of a candidate's class
runs while encoding), dtypes, shapes and values, and arrays and tensors that are writable copies of their own;
an object that occurs twice (or two tensors on one storage) is left to pickle, which keeps it one object.

Torch tensors: only of the exact type ``torch.Tensor`` (an ``nn.Parameter`` or any other subclass is pickled),
strided, on the CPU, not requiring grad, C-contiguous, covering exactly their whole storage (pickle ships the
whole storage of a view), without names or Python attributes, of a dtype in :data:`_TENSOR_DTYPES`; they arrive
as a fresh tensor (``torch.empty`` then a copy), as pickle gives them. The encoder never imports torch: a value
can only be a tensor if torch is loaded, and the class it compares with is the one :func:`freeze` recorded (the
slot server calls it before the candidate loads, so a candidate that rebinds ``torch.Tensor`` does not make the
encoder call its class's methods outside the fence's audit window). The decoder imports torch only when a tensor
tag arrives.

:func:`decode` reads bytes the slot process wrote, i.e. bytes an escaped candidate may have forged, and may still
be writing (it reads the shared mapping in place): every length is checked against the frame, every byte is read
once (a header field into a Python int, an array's or a string's bytes by one copy before they are looked at), so
bytes that change underneath give at worst other values, never an inconsistent object; dtypes come from a fixed
table, nesting is bounded, and anything malformed raises :class:`ValueError` (the proxy reports the answer as
malformed). It never calls into anything but numpy's (and for a tensor torch's) constructors.
"""

from __future__ import annotations

import mmap
import struct
import sys
import threading
from typing import Any

import numpy as np

_DTYPES = tuple(np.dtype(code) for code in ("<f8", "<f4", "<i8", "<i4", "<i2", "|i1", "<u8", "<u4", "<u2", "|u1",
                                            "|b1", "<c16", "<c8"))
_DTYPE_INDEX = {dtype: i for i, dtype in enumerate(_DTYPES)}
_ITEMSIZES = tuple(dtype.itemsize for dtype in _DTYPES)
# the same table by numpy's type number (a native byte order checked apart): hashing a dtype costs more than
# encoding a small array (numpy walks its fields); int64 and longlong are one dtype with two numbers
_NUM_INDEX = {np.dtype(char).num: _DTYPE_INDEX[np.dtype(char)] for char in np.typecodes["All"]
              if np.dtype(char).isnative and np.dtype(char) in _DTYPE_INDEX}
_BOOL = _DTYPE_INDEX[np.dtype("|b1")]
# torch dtypes by name (torch is not imported here), with their item sizes; bfloat16 travels as its raw bytes
_TENSOR_DTYPES = (("float64", 8), ("float32", 4), ("float16", 2), ("bfloat16", 2), ("int64", 8), ("int32", 4),
                  ("int16", 2), ("int8", 1), ("uint8", 1), ("bool", 1))
_MAX_DEPTH = 8
_MAX_NDIM = 32
_INT_MIN, _INT_MAX = -(1 << 63), (1 << 63) - 1
_TAG_FLOAT, _TAG_INT = struct.Struct("<Bd"), struct.Struct("<Bq")
_TAG_LEN = struct.Struct("<BI")  # tuple, list, dict, string: tag and length
_U32 = struct.Struct("<I")
_DOUBLE, _INT = struct.Struct("<d"), struct.Struct("<q")
_HEADERS = tuple(struct.Struct(f"<BBB{n}q") for n in range(_MAX_NDIM + 1))  # tag, dtype index, ndim, shape
_SHAPES = tuple(struct.Struct(f"<{n}q") for n in range(_MAX_NDIM + 1))
_ARRAY, _TENSOR, _TUPLE, _LIST, _DICT, _STR = 0x61, 0x78, 0x74, 0x6C, 0x64, 0x73  # a x t l d s
_TRUE, _FALSE, _NONE = 0x54, 0x46, 0x6E  # T F n


class _Unsupported(Exception):
    pass


class Full(Exception):
    """The encoding does not fit in the space :func:`encode_into` was given (the caller sends it another way)."""


class _Frozen:
    tensor: Any = None  # the torch.Tensor class :func:`freeze` recorded (None: no tensor is encoded)
    frozen = False
    torch_dtypes: dict[Any, int] = {}


def freeze() -> None:
    """Record ``torch.Tensor`` (if torch is loaded) as the one class the encoder treats as a tensor; called by the
    slot server before the candidate loads. Until then (and in the algorithm's process, which runs no candidate
    code) the class is read from the loaded torch module when a value's type might be it."""
    _Frozen.tensor = _tensor_class()
    _Frozen.frozen = True


def _tensor_class() -> Any:
    if _Frozen.frozen:
        return _Frozen.tensor
    torch = sys.modules.get("torch")
    tensor = getattr(torch, "Tensor", None) if torch is not None else None
    return tensor if isinstance(tensor, type) else None


def _torch_dtype_index(dtype: Any) -> int | None:
    table = _Frozen.torch_dtypes
    if not table:
        import torch  # already loaded: a tensor exists

        table = _Frozen.torch_dtypes = {getattr(torch, name): i for i, (name, _) in enumerate(_TENSOR_DTYPES)}
    return table.get(dtype)


def encode(value: Any) -> bytes | None:
    """The encoding of ``value`` as bytes, or ``None`` when it holds anything this codec does not carry."""
    size = 1 << 16
    while True:
        with mmap.mmap(-1, size) as buf:
            try:
                end = encode_into(value, buf, 0, size)
            except Full:
                size *= 8
                continue
            return None if end is None else buf[:end]


def encode_into(value: Any, buf: Any, at: int, limit: int) -> int | None:
    """Write the encoding of ``value`` into ``buf[at:limit]`` (an ``mmap``: it takes any buffer's bytes) and return
    where it ends, or ``None`` when it holds anything this codec does not carry (``buf`` may hold a partial
    encoding then); raises :class:`Full` when it does not fit."""
    try:
        return _put(value, buf, at, limit, 0, [set()])
    except _Unsupported:
        return None


_SCAN = 32  # objects compared by identity before an id() set takes over (see _once)


def _once(value: Any, seen: list[Any]) -> None:
    """Refuse (to pickle) an object met before: it would arrive as two copies (pickle keeps one, and a slot that
    mutates it sees the difference). ``seen[0]`` is a set of keys, the rest the objects met so far; compared by
    ``is`` rather than by ``id()``, which is an audit event (the fence's hook, installed in the sandbox child and
    the slot server, would run on every one), until there are many: then by ``id()``. Inlined in :func:`_put` and
    :func:`_put_array` while ``seen`` is short (a call less per container or array)."""
    if len(seen) <= _SCAN:
        for other in seen:
            if other is value:
                raise _Unsupported
        seen.append(value)
        if len(seen) > _SCAN:
            seen[0].update(id(other) for other in seen[1:])
        return
    key = id(value)
    if key in seen[0]:
        raise _Unsupported
    seen[0].add(key)


def _put(value: Any, buf: Any, at: int, limit: int, depth: int, seen: list[Any]) -> int:
    kind = type(value)
    if kind is float:
        if at + 9 > limit:
            raise Full
        _TAG_FLOAT.pack_into(buf, at, 0x66, value)
        return at + 9
    if kind is np.ndarray:
        return _put_array(value, buf, at, limit, seen)
    if kind is tuple or kind is list or kind is dict:
        if len(seen) < _SCAN:  # _once, inline
            for other in seen:
                if other is value:
                    raise _Unsupported
            seen.append(value)
        else:
            _once(value, seen)
        if depth >= _MAX_DEPTH:
            raise _Unsupported
        if at + 5 > limit:
            raise Full
        _TAG_LEN.pack_into(buf, at, _TUPLE if kind is tuple else _LIST if kind is list else _DICT, len(value))
        at += 5
        depth += 1
        if kind is dict:
            for key, item in value.items():
                if type(key) is not str:
                    raise _Unsupported
                at = _put(key, buf, at, limit, depth, seen)
                at = _put(item, buf, at, limit, depth, seen)
            return at
        for item in value:  # the common items inline: a call less each
            kind = type(item)
            if kind is float:
                if at + 9 > limit:
                    raise Full
                _TAG_FLOAT.pack_into(buf, at, 0x66, item)
                at += 9
            elif kind is np.ndarray:
                at = _put_array(item, buf, at, limit, seen)
            else:
                at = _put(item, buf, at, limit, depth, seen)
        return at
    if kind is int:
        if not _INT_MIN <= value <= _INT_MAX:
            raise _Unsupported
        if at + 9 > limit:
            raise Full
        _TAG_INT.pack_into(buf, at, 0x69, value)
        return at + 9
    if kind is bool or value is None:
        if at >= limit:
            raise Full
        buf[at] = _NONE if value is None else _TRUE if value else _FALSE
        return at + 1
    if kind is str:
        data = value.encode("utf-8", "surrogatepass")
        end = at + 5 + len(data)
        if end > limit:
            raise Full
        _TAG_LEN.pack_into(buf, at, _STR, len(data))
        buf[at + 5:end] = data
        return end
    if kind is _tensor_class() and kind is not None:
        return _put_tensor(value, buf, at, limit, seen)
    raise _Unsupported


def _put_array(value: Any, buf: Any, at: int, limit: int, seen: list[Any]) -> int:
    if len(seen) < _SCAN:  # _once, inline
        for other in seen:
            if other is value:
                raise _Unsupported
        seen.append(value)
    else:
        _once(value, seen)
    dtype = value.dtype
    index = _NUM_INDEX.get(dtype.num) if dtype.isnative and dtype.metadata is None else None
    shape = value.shape
    if index is None or len(shape) > _MAX_NDIM or not value.flags.c_contiguous:
        raise _Unsupported
    header = _HEADERS[len(shape)]
    end = at + header.size + value.nbytes
    if end > limit:
        raise Full
    header.pack_into(buf, at, _ARRAY, index, len(shape), *shape)
    buf[at + header.size:end] = value  # C-contiguous: its bytes, copied once
    return end


def _put_tensor(value: Any, buf: Any, at: int, limit: int, seen: list[Any]) -> int:
    """A tensor as pickle would rebuild it from its values alone, else :class:`_Unsupported` (pickled)."""
    _once(value, seen)
    index = _torch_dtype_index(value.dtype)
    if (index is None or value.requires_grad or value.device.type != "cpu" or value.layout is not _layout()
            or not value.is_contiguous() or value.storage_offset() != 0 or value.is_neg() or value.is_conj()
            or value.__dict__):
        raise _Unsupported
    shape = tuple(value.shape)
    nbytes = value.numel() * _TENSOR_DTYPES[index][1]
    storage = value.untyped_storage()
    if storage.nbytes() != nbytes or len(shape) > _MAX_NDIM:
        raise _Unsupported
    key = ("storage", storage.data_ptr())  # two tensors on one storage: pickle keeps them sharing it
    if key in seen[0]:
        raise _Unsupported
    seen[0].add(key)
    header = _HEADERS[len(shape)]
    end = at + header.size + nbytes
    if end > limit:
        raise Full
    header.pack_into(buf, at, _TENSOR, index, len(shape), *shape)
    if nbytes:
        raw = value.view(_int16()) if _TENSOR_DTYPES[index][0] == "bfloat16" else value
        buf[at + header.size:end] = raw.numpy()  # contiguous, no grad: a view of its bytes, copied once
    return end


def _layout() -> Any:
    return sys.modules["torch"].strided


def _int16() -> Any:
    return sys.modules["torch"].int16


_DECODING = threading.local()  # .tensors: whether the decode under way accepts tensors (see decode)


def decode(data: Any, *, tensors: bool = True) -> Any:
    """The value :func:`encode` or :func:`encode_into` wrote (``data``: bytes or a memoryview, e.g. of the shared
    frame); :class:`ValueError` for anything else (forged or truncated bytes). With ``tensors=False`` a tensor is
    refused as well: the parent decodes the slot's *answers* so, since an answer is plain data (numbers, strings,
    numpy arrays), as the restricted unpickler of pickled answers has it (``sandbox/_slotproc.py``); a call's
    arguments, which the trusted side wrote, may carry tensors."""
    view = memoryview(data)
    _DECODING.tensors = tensors
    try:
        value, end = _get(view, 0, 0)
    except (struct.error, IndexError, UnicodeDecodeError) as exc:
        raise ValueError(f"malformed slot frame ({exc})") from None
    if end != len(view):
        raise ValueError("malformed slot frame (trailing bytes)")
    return value


def _get(data: memoryview, at: int, depth: int) -> tuple[Any, int]:
    if depth > _MAX_DEPTH:
        raise ValueError("malformed slot frame (nested too deep)")
    tag = data[at]
    at += 1
    if tag == 0x66:  # f
        return _DOUBLE.unpack_from(data, at)[0], at + 8
    if tag == 0x61 or tag == 0x78:  # a, x
        return _get_array(data, at, tag)
    if tag == 0x74 or tag == 0x6C:  # t, l
        n = _U32.unpack_from(data, at)[0]
        at += 4
        if n > len(data) - at:
            raise ValueError("malformed slot frame (sequence length)")
        items = []
        for _ in range(n):
            item_tag = data[at]
            if item_tag == 0x66:  # a float inline: a call less
                items.append(_DOUBLE.unpack_from(data, at + 1)[0])
                at += 9
            elif item_tag == _ARRAY:
                item, at = _get_array(data, at + 1, _ARRAY)
                items.append(item)
            else:
                item, at = _get(data, at, depth + 1)
                items.append(item)
        return (tuple(items) if tag == 0x74 else items), at
    if tag == 0x64:  # d
        n = _U32.unpack_from(data, at)[0]
        at += 4
        if n > len(data) - at:
            raise ValueError("malformed slot frame (dict length)")
        out = {}
        for _ in range(n):
            key, at = _get(data, at, depth + 1)
            if type(key) is not str:
                raise ValueError("malformed slot frame (dict key)")
            out[key], at = _get(data, at, depth + 1)
        return out, at
    if tag == 0x69:  # i
        return _INT.unpack_from(data, at)[0], at + 8
    if tag == _TRUE:
        return True, at
    if tag == _FALSE:
        return False, at
    if tag == _NONE:
        return None, at
    if tag == _STR:
        n = _U32.unpack_from(data, at)[0]
        at += 4
        if at + n > len(data):
            raise ValueError("malformed slot frame (string length)")
        return bytes(data[at:at + n]).decode("utf-8", "surrogatepass"), at + n  # copied, then checked
    raise ValueError(f"malformed slot frame (tag {tag})")


def _get_array(data: memoryview, at: int, tag: int) -> tuple[Any, int]:
    """An array (or a tensor) whose header starts at ``at``, after its tag."""
    index, ndim = data[at], data[at + 1]
    if index >= (len(_DTYPES) if tag == _ARRAY else len(_TENSOR_DTYPES)) or ndim > _MAX_NDIM:
        raise ValueError("malformed slot frame (array header)")
    shape = _SHAPES[ndim].unpack_from(data, at + 2)
    at += 2 + 8 * ndim
    count = 1
    for n in shape:
        if n < 0:
            raise ValueError("malformed slot frame (array shape)")
        count *= n
    end = at + count * (_ITEMSIZES[index] if tag == _ARRAY else _TENSOR_DTYPES[index][1])
    if end > len(data):
        raise ValueError("malformed slot frame (array data)")
    if tag == _TENSOR:
        return _tensor(index, shape, data[at:end]), end
    array = np.frombuffer(bytearray(data[at:end]), dtype=_DTYPES[index])  # one copy, writable, as pickle's
    if ndim != 1:
        array = array.reshape(shape)
    if index == _BOOL:  # a forged byte other than 0/1 would make a bool that equals neither True nor False
        array = array.view(np.uint8) != 0
    return array, end


def _tensor(index: int, shape: tuple[int, ...], data: memoryview) -> Any:
    """A fresh tensor (its own storage, as pickle's) holding a copy of ``data``."""
    if not getattr(_DECODING, "tensors", True):
        raise ValueError("malformed slot frame (a tensor in a slot's answer: answers are plain data)")
    import torch  # only when a tensor arrives

    name = _TENSOR_DTYPES[index][0]
    try:
        tensor = torch.empty(shape, dtype=getattr(torch, name))
    except RuntimeError:  # e.g. a forged empty shape whose strides overflow
        raise ValueError("malformed slot frame (tensor shape)") from None
    if not data.nbytes:
        return tensor
    raw = np.frombuffer(data, dtype=np.uint8)  # read once, by the one copy below
    target = (tensor.view(torch.int16) if name == "bfloat16" else tensor).numpy().reshape(-1).view(np.uint8)
    if name == "bool":
        np.not_equal(raw, 0, out=target.view(bool))  # a forged byte other than 0/1 is True, not a raw byte
    else:
        target[:] = raw
    return tensor
