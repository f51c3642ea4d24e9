"""A compact encoding for the slot channel's common values (:mod:`hifo.sandbox._slotchannel`): numbers, ``None``,
short strings, C-ordered numpy arrays of plain numeric dtypes, and tuples, lists and string-keyed dicts of those.

Pickle costs ~5 us to write and ~3-5 us to read a small numpy array (its reduce protocol goes through Python and,
in the slot server, through the fence's audit hook on every class lookup), four times per slot call; this codec
writes the same values in ~1-2 us and reads them without looking up any class. :func:`encode` returns ``None`` for
anything else (the caller then pickles, as before), so what reaches the other side is exactly what pickle would
have given: the same types (``type(x) is float``, never a subclass: no method of a candidate's class runs while
encoding), dtypes, shapes and values, and arrays that are writable copies; an object that occurs twice is left
to pickle, which keeps it one object.

:func:`decode` reads bytes the slot process wrote, i.e. bytes an escaped candidate may have forged: every length is
checked against the frame, dtypes come from a fixed table, nesting is bounded, and anything malformed raises
:class:`ValueError` (the proxy reports the answer as malformed). It never calls into anything but numpy's buffer
constructor.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

_DTYPES = tuple(np.dtype(code) for code in ("<f8", "<f4", "<i8", "<i4", "<i2", "|i1", "<u8", "<u4", "<u2", "|u1",
                                            "|b1", "<c16", "<c8"))
_DTYPE_INDEX = {dtype: i for i, dtype in enumerate(_DTYPES)}
_DOUBLE, _INT, _U32 = struct.Struct("<d"), struct.Struct("<q"), struct.Struct("<I")
_SHAPES = tuple(struct.Struct(f"<BB{n}q") for n in range(33))  # dtype index, ndim, shape
_MAX_DEPTH = 8
_MAX_NDIM = 32
_INT_MIN, _INT_MAX = -(1 << 63), (1 << 63) - 1


class _Unsupported(Exception):
    pass


def encode(value: Any) -> bytes | None:
    """The encoding of ``value``, or ``None`` when it holds anything this codec does not carry."""
    parts: list[bytes] = []
    try:
        _put(value, parts, 0, set())
    except _Unsupported:
        return None
    return b"".join(parts)


def _put(value: Any, parts: list[bytes], depth: int, seen: set[int]) -> None:
    kind = type(value)
    if kind is np.ndarray or kind is tuple or kind is list or kind is dict:
        # an object met twice would arrive as two copies (pickle keeps one, and a slot that mutates it
        # sees the difference): left to pickle
        if id(value) in seen:
            raise _Unsupported
        seen.add(id(value))
    if kind is float:
        parts.append(b"f" + _DOUBLE.pack(value))
    elif kind is np.ndarray:
        index = _DTYPE_INDEX.get(value.dtype)
        if index is None or value.ndim > _MAX_NDIM or not value.flags.c_contiguous:
            raise _Unsupported
        shape = value.shape
        parts.append(b"a" + _SHAPES[len(shape)].pack(index, len(shape), *shape))
        parts.append(value.tobytes())
    elif kind is int:
        if not _INT_MIN <= value <= _INT_MAX:
            raise _Unsupported
        parts.append(b"i" + _INT.pack(value))
    elif kind is bool:
        parts.append(b"T" if value else b"F")
    elif value is None:
        parts.append(b"n")
    elif kind is tuple or kind is list:
        if depth >= _MAX_DEPTH:
            raise _Unsupported
        parts.append((b"t" if kind is tuple else b"l") + _U32.pack(len(value)))
        for item in value:
            _put(item, parts, depth + 1, seen)
    elif kind is dict:
        if depth >= _MAX_DEPTH:
            raise _Unsupported
        parts.append(b"d" + _U32.pack(len(value)))
        for key, item in value.items():
            if type(key) is not str:
                raise _Unsupported
            _put(key, parts, depth + 1, seen)
            _put(item, parts, depth + 1, seen)
    elif kind is str:
        data = value.encode("utf-8", "surrogatepass")
        parts.append(b"s" + _U32.pack(len(data)) + data)
    else:
        raise _Unsupported


def decode(data: bytes) -> Any:
    """The value :func:`encode` wrote; :class:`ValueError` for anything else (forged or truncated bytes)."""
    try:
        value, end = _get(data, 0, 0)
    except (struct.error, IndexError, UnicodeDecodeError) as exc:
        raise ValueError(f"malformed slot frame ({exc})") from None
    if end != len(data):
        raise ValueError("malformed slot frame (trailing bytes)")
    return value


def _get(data: bytes, at: int, depth: int) -> tuple[Any, int]:
    if depth > _MAX_DEPTH:
        raise ValueError("malformed slot frame (nested too deep)")
    tag = data[at]
    at += 1
    if tag == 0x66:  # f
        return _DOUBLE.unpack_from(data, at)[0], at + 8
    if tag == 0x61:  # a
        index, ndim = data[at], data[at + 1]
        if index >= len(_DTYPES) or ndim > _MAX_NDIM:
            raise ValueError("malformed slot frame (array header)")
        shape = _SHAPES[ndim].unpack_from(data, at)[2:]
        at += 2 + 8 * ndim
        count = 1
        for n in shape:
            if n < 0:
                raise ValueError("malformed slot frame (array shape)")
            count *= n
        dtype = _DTYPES[index]
        end = at + count * dtype.itemsize
        if end > len(data):
            raise ValueError("malformed slot frame (array data)")
        array = np.frombuffer(data, dtype=dtype, count=count, offset=at).reshape(shape).copy()
        if dtype.kind == "b":  # a forged byte other than 0/1 would make a bool that equals neither True nor False
            array = array.view(np.uint8) != 0
        return array, end
    if tag == 0x69:  # i
        return _INT.unpack_from(data, at)[0], at + 8
    if tag == 0x54:  # T
        return True, at
    if tag == 0x46:  # F
        return False, at
    if tag == 0x6E:  # n
        return None, at
    if tag in (0x74, 0x6C):  # t, l
        n = _U32.unpack_from(data, at)[0]
        at += 4
        if n > len(data) - at:
            raise ValueError("malformed slot frame (sequence length)")
        items = []
        for _ in range(n):
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
    if tag == 0x73:  # s
        n = _U32.unpack_from(data, at)[0]
        at += 4
        if at + n > len(data):
            raise ValueError("malformed slot frame (string length)")
        return data[at:at + n].decode("utf-8", "surrogatepass"), at + n
    raise ValueError(f"malformed slot frame (tag {tag})")
