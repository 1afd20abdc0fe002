"""A drop-in for gguf-py's ``GGUFReader`` (gguf 0.19.0) that opens a header in milliseconds.

gguf-py walks the header in Python and makes one or two numpy views per array element before
its constructor returns: about 20 s and 650 MB for a Llama-3 vocabulary. Here sipllm-gguf (Rust)
parses the header, and each field's ``parts`` are made, as the same numpy views of the same
``numpy.memmap``, only when a program indexes them. ``data`` is a ``range`` (no list), and
``contents()`` of a whole string array is decoded in one native call.

What programs see is gguf-py's surface: ``fields`` (an ``OrderedDict`` of :class:`ReaderField`),
``tensors`` (a list of :class:`ReaderTensor`, ``data`` a zero-copy view of the map in the
logical shape, raw bytes for quantized types), ``get_field``, ``get_tensor``, ``byte_order``,
``alignment``, ``data_offset``, ``endianess`` and ``data`` (the map); ``mode="r+"`` writes
through the map. Differences, all in what gguf-py would do wrong or not at all:

* an invalid file raises :class:`sipllm_gguf.GGUFError` (a ``ValueError``) with a code, byte
  offset and logical path, where gguf-py raises ``IndexError``, ``KeyError``, a numpy error or
  hangs;
* a tensor of a ggml type the parser does not know (newer than it) does not hide the
  metadata: its ``tensor_type`` is the plain int, ``n_bytes`` is ``None`` and reading its
  ``data`` raises :class:`~sipllm_gguf.GGUFError`;
* sizes follow ggml's type table (gguf-py's says 40 bytes per ``Q8_1`` block; ggml stores 36).
"""

from __future__ import annotations

import operator
import os
import sys
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Callable, Iterator, Literal, Union

import numpy as np
import numpy.typing as npt

from . import _native
from ._enums import enums, tensor_type

__all__ = ["GGUFReader", "ReaderField", "ReaderTensor"]

_GGUF_DEFAULT_ALIGNMENT = 32

# GGUF value type code -> numpy scalar type (gguf-py's ``gguf_scalar_to_np``).
_SCALAR_NP: dict[int, type[np.generic]] = {
    0: np.uint8,
    1: np.int8,
    2: np.uint16,
    3: np.int16,
    4: np.uint32,
    5: np.int32,
    6: np.float32,
    7: np.bool_,
    10: np.uint64,
    11: np.int64,
    12: np.float64,
}
_STRING, _ARRAY = 8, 9

# ggml tensor types whose data gguf-py shows as elements rather than raw bytes.
_ELEMENT_NP: dict[int, type[np.generic]] = {
    0: np.float32,
    1: np.float16,
    28: np.float64,
    24: np.int8,
    25: np.int16,
    26: np.int32,
    27: np.int64,
}


def _to_string(x: npt.NDArray[Any]) -> str:
    return str(x.tobytes(), encoding="utf-8")


def _map_file(header: Any, name: str, mode: str) -> np.memmap:
    """``numpy.memmap`` of the file ``header`` was parsed from: its open (and locked)
    descriptor, not whatever ``name`` names by now, so no second open can see another file.
    ``r+`` needs write access, which that descriptor lacks: it maps ``name`` and checks that it
    is the same file."""
    fileno = getattr(header, "fileno", None)
    if fileno is None:  # not a POSIX system: map the path
        return np.memmap(name, mode=mode)
    if mode != "r+":
        with os.fdopen(os.dup(fileno()), "rb") as f:
            f.raw.name = name  # type: ignore[misc]  # numpy.memmap's .filename, as gguf-py's
            return np.memmap(f, mode=mode)
    data = np.memmap(name, mode=mode)
    here, parsed = os.stat(name), os.fstat(fileno())
    if (here.st_dev, here.st_ino) != (parsed.st_dev, parsed.st_ino):
        raise _gguf_error(
            "the file was replaced while it was opened (the path names another file now)",
            "sipllm::python::file_changed",
            None,
            "",
            name,
        )
    return data


def _gguf_error(message: str, code: str, offset: int | None, path: str, filename: str) -> Exception:
    located = f"{path}: {message}" if path else message
    err = _native.GGUFError(f"{filename}: {located} [{code}]")
    err.code = code  # type: ignore[attr-defined]
    err.offset = offset  # type: ignore[attr-defined]
    err.length = 0  # type: ignore[attr-defined]
    err.path = path  # type: ignore[attr-defined]
    err.filename = filename  # type: ignore[attr-defined]
    err.help = ""  # type: ignore[attr-defined]
    err.detail = message  # type: ignore[attr-defined]
    return err


class _Parts(Sequence):  # type: ignore[type-arg]
    """A field's ``parts``: each numpy view is made when it is indexed, not before."""

    __slots__ = ("_n", "_get")

    def __init__(self, n: int, get: Callable[[int], npt.NDArray[Any]]):
        self._n = n
        self._get = get

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self._get(j) for j in range(*i.indices(self._n))]
        i = operator.index(i)
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError("list index out of range")
        return self._get(i)

    def __iter__(self) -> Iterator[npt.NDArray[Any]]:
        return map(self._get, range(self._n))

    def __repr__(self) -> str:
        return f"<{self._n} parts>"


class _StringParts(_Parts):
    """The parts of a string array, with the common case (a string's bytes, ``parts[i]`` for
    ``i`` in ``data``) made in one step: a vocabulary's loop indexes it 128k times."""

    __slots__ = ("_u8", "_st")

    def __init__(self, n: int, get: Callable[[int], npt.NDArray[Any]], u8: npt.NDArray[np.uint8], starts: Any):
        super().__init__(n, get)
        self._u8 = u8
        self._st = starts

    def __getitem__(self, i: Any) -> Any:
        if type(i) is int and 5 < i < self._n and i & 1 == 0:
            j = (i - 6) >> 1
            st = self._st
            return self._u8[st[j] + 8 : st[j + 1]]
        return super().__getitem__(i)


class ReaderField:
    """One key/value pair (or tensor info, or header field), as gguf-py's ``ReaderField``.

    ``offset`` is where the item starts in the file, ``name`` its key. ``parts`` are numpy views
    of the file map, one per stored component (key length, key bytes, value type, then the
    value's components: a string is its length and its bytes; an array its element type,
    count, then each element's parts). ``data`` indexes the parts that are the values; ``types``
    are the value type, then for arrays the element type. ``parts``, ``data`` and ``types`` are
    made on first access. Supports the NamedTuple protocol gguf-py's class has (unpacking,
    ``_asdict``, ``_replace``).
    """

    __slots__ = ("offset", "name", "_parts", "_data", "_types", "_make", "_fast")
    _fields = ("offset", "name", "parts", "data", "types")

    def __init__(
        self,
        offset: int,
        name: str,
        parts: Any = None,
        data: Any = None,
        types: Any = None,
        *,
        _make: Callable[[], tuple[Any, Any, Any]] | None = None,
        _fast: Any = None,
    ):
        self.offset = offset
        self.name = name
        self._parts = [] if parts is None and _make is None else parts
        self._data = [-1] if data is None and _make is None else data
        self._types = [] if types is None and _make is None else types
        self._make = _make
        self._fast = _fast

    def _build(self) -> None:
        make, self._make = self._make, None
        if make is not None:
            self._parts, self._data, self._types = make()

    @property
    def parts(self) -> Any:
        """The numpy views, made as they are indexed."""
        if self._make is not None:
            self._build()
        return self._parts

    @property
    def data(self) -> Any:
        """Indexes into ``parts`` of the values (a ``range`` for arrays)."""
        if self._make is not None:
            self._build()
        return self._data

    @property
    def types(self) -> list[Any]:
        """``[GGUFValueType]``, or ``[ARRAY, element type]`` (``[ARRAY]`` when empty)."""
        if self._make is not None:
            self._build()
        return self._types

    def contents(self, index_or_slice: int | slice = slice(None)) -> Any:
        """The value(s) as Python objects, as gguf-py's ``contents()``: a scalar, a ``str``, or
        for arrays the element (int index) or a list of elements (slice). A whole string array
        is decoded in one call."""
        types = self.types
        if not types:
            return None
        main = types[0]
        if main == _ARRAY:
            sub = types[-1]
            fast = self._fast
            if fast is not None and not isinstance(index_or_slice, int):
                return fast(index_or_slice)
            if sub == _STRING:
                indices = self.data[index_or_slice]
                if isinstance(index_or_slice, int):
                    return _to_string(self.parts[indices])
                return [_to_string(self.parts[idx]) for idx in indices]
            if isinstance(index_or_slice, int):
                return self.parts[self.data[index_or_slice]].tolist()[0]
            return [pv for idx in self.data[index_or_slice] for pv in self.parts[idx].tolist()]
        if main == _STRING:
            return _to_string(self.parts[-1])
        return self.parts[-1].tolist()[0]

    # The NamedTuple protocol of gguf-py's ReaderField.
    def __iter__(self) -> Iterator[Any]:
        return iter((self.offset, self.name, self.parts, self.data, self.types))

    def __len__(self) -> int:
        return 5

    def __getitem__(self, i: Any) -> Any:
        return (self.offset, self.name, self.parts, self.data, self.types)[i]

    def _asdict(self) -> dict[str, Any]:
        return dict(zip(self._fields, self))

    def _replace(self, **kw: Any) -> ReaderField:
        d = self._asdict()
        d.update(kw)
        return ReaderField(**d)

    def __repr__(self) -> str:
        return f"ReaderField(offset={self.offset}, name={self.name!r}, types={self.types!r})"


class ReaderTensor:
    """One tensor, as gguf-py's ``ReaderTensor``: ``name``, ``tensor_type``
    (``GGMLQuantizationType``, or the int code of a type it does not know), ``shape`` (the
    dims as stored, fastest-varying first: a numpy view), ``n_elements``, ``n_bytes``,
    ``data_offset`` (absolute), ``data`` (a zero-copy view of the file map in the logical
    shape; raw ``uint8`` bytes for quantized types) and ``field`` (the tensor info's
    :class:`ReaderField`). ``shape``, ``data`` and ``field`` are made on first access."""

    __slots__ = ("name", "tensor_type", "n_elements", "n_bytes", "data_offset", "_map", "_rec", "_field", "_data")
    _fields = ("name", "tensor_type", "shape", "n_elements", "n_bytes", "data_offset", "data", "field")

    def __init__(self, map_: _Map, rec: Any):
        # ``rec`` is the parser's record of the tensor info (``_native.TensorRecord``).
        self.name: str = rec.name
        self.tensor_type: Any = tensor_type(rec.ggml_type)
        self.n_elements: int = rec.n_elements
        self.n_bytes: int | None = rec.n_bytes
        self.data_offset: int = rec.data_offset
        self._map = map_
        self._rec = rec
        self._field: ReaderField | None = None
        self._data: Any = None

    @property
    def field(self) -> ReaderField:
        """The tensor info: parts name length, name, n_dims, dims, type, offset; data
        ``[1, 3, 4, 5]``."""
        if self._field is None:
            self._field = self._map.tensor_field(self._rec)
        return self._field

    @property
    def shape(self) -> npt.NDArray[np.uint64]:
        """The dims as stored (GGUF order, ``ne[0]`` first), a view of the file."""
        return self.field.parts[3]

    @property
    def data(self) -> npt.NDArray[Any]:
        """The tensor's bytes in the file map, in the logical shape."""
        if self._data is None:
            self._data = self._map.tensor_data(self._rec, self.shape)
        return self._data

    def __iter__(self) -> Iterator[Any]:
        return iter(getattr(self, f) for f in self._fields)

    def __len__(self) -> int:
        return len(self._fields)

    def __getitem__(self, i: Any) -> Any:
        return tuple(self)[i]

    def _asdict(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in self._fields}

    def __repr__(self) -> str:
        return (
            f"ReaderTensor(name={self.name!r}, tensor_type={self.tensor_type!r}, "
            f"n_elements={self.n_elements}, n_bytes={self.n_bytes}, data_offset={self.data_offset})"
        )


class GGUFReader:
    """Reads a GGUF file as gguf-py 0.19.0's ``GGUFReader`` does, in milliseconds.

    ``GGUFReader(path, mode="r")``; ``mode`` is ``numpy.memmap``'s (``"r"``, ``"r+"`` to write
    values and tensor data in place, ``"c"`` copy-on-write). Raises
    :class:`sipllm_gguf.GGUFError` (a ``ValueError``) for an invalid file, ``OSError`` for one
    that cannot be read. It maps a local file: a URL raises :class:`sipllm_gguf.GGUFError`
    (``sipllm::python::reader_url``) naming :func:`sipllm_gguf.open`, which reads URLs.
    """

    # I - same as host, S - swapped
    byte_order: Literal["I", "S"] = "I"
    alignment: int = _GGUF_DEFAULT_ALIGNMENT
    data_offset: int

    def __init__(self, path: os.PathLike[str] | str, mode: Literal["r", "r+", "c"] = "r"):
        name = os.fspath(path)
        if isinstance(name, bytes):
            name = os.fsdecode(name)
        if _native.is_remote(name):
            # gguf-py's reader is a map of a local file (its fields and tensors are views of
            # it, writable with mode="r+"): a URL has none. The native API reads URLs.
            shown = _native.shown_name(name)
            err = _gguf_error(
                f"GGUFReader maps a local file and cannot open a URL; use sipllm_gguf.open({shown!r}), "
                "which reads URLs, or download the file first",
                "sipllm::python::reader_url",
                None,
                "",
                shown,
            )
            err.help = (  # type: ignore[attr-defined]
                f"m = sipllm_gguf.open({shown!r}); m.metadata, m.tensors, m.values(name) read it "
                "over range requests"
            )
            raise err
        header = _native.read_header(name)
        self._header = header
        self._path = name
        self.data = _map_file(header, name, mode)
        if self.data.size != header.file_size:
            raise _gguf_error(
                f"the file changed while it was opened ({header.file_size} bytes, then {self.data.size})",
                "sipllm::python::file_changed",
                None,
                "",
                name,
            )
        # Views are made from a plain ndarray over the map: they share its memory, and
        # slicing it skips np.memmap's per-slice bookkeeping.
        v_type, _, endian = enums()
        file_big = header.big_endian
        swapped = file_big != (sys.byteorder == "big")
        self.byte_order = "S" if swapped else "I"
        self.endianess = endian.BIG if file_big else endian.LITTLE
        m = _Map(self.data.view(np.ndarray), header, name, swapped, v_type)
        self._map = m
        self.gguf_scalar_to_np = {v_type(code): t for code, t in _SCALAR_NP.items()}
        self._tensors: list[ReaderTensor] | None = None

        fields: OrderedDict[str, ReaderField] = OrderedDict()
        u32, u64 = m.dtypes[4], m.dtypes[10]
        fields["GGUF.version"] = ReaderField(4, "GGUF.version", [m.view(4, u32, 1)], [0], [v_type.UINT32])
        fields["GGUF.tensor_count"] = ReaderField(8, "GGUF.tensor_count", [m.view(8, u64, 1)], [0], [v_type.UINT64])
        fields["GGUF.kv_count"] = ReaderField(16, "GGUF.kv_count", [m.view(16, u64, 1)], [0], [v_type.UINT64])
        for index, rec in enumerate(header.kvs()):
            fields[rec.key] = m.kv_field(index, rec)
        self.fields = fields

        align = fields.get("general.alignment")
        if align is not None:
            self.alignment = align.parts[-1][0]
        self.data_offset = header.data_offset

    # gguf-py's accessors.
    def get_field(self, key: str) -> Union[ReaderField, None]:
        """The field under ``key``, or ``None``."""
        return self.fields.get(key, None)

    def get_tensor(self, idx: int) -> ReaderTensor:
        """Tensor ``idx`` in directory order."""
        return self.tensors[idx]

    @property
    def tensors(self) -> list[ReaderTensor]:
        """Every tensor in directory order (made on first access)."""
        if self._tensors is None:
            self._tensors = [ReaderTensor(self._map, rec) for rec in self._header.tensors()]
        return self._tensors

    @tensors.setter
    def tensors(self, value: list[ReaderTensor]) -> None:
        self._tensors = value

    def _get(
        self, offset: int, dtype: npt.DTypeLike, count: int = 1, override_order: None | Literal["I", "S", "<"] = None
    ) -> npt.NDArray[Any]:
        """gguf-py's internal helper: ``count`` items of ``dtype`` at ``offset``."""
        count = int(count)
        itemsize = int(np.empty([], dtype=dtype).itemsize)
        arr = self.data[offset : offset + itemsize * count].view(dtype=dtype)[:count]
        return arr.view(arr.dtype.newbyteorder(self.byte_order if override_order is None else override_order))



class _Map:
    """The file map and the parsed header, shared by a reader, its fields and its tensors (which
    make their views from it on demand)."""

    __slots__ = ("u8", "header", "path", "swapped", "dtypes", "vt")

    def __init__(self, u8: npt.NDArray[np.uint8], header: Any, path: str, swapped: bool, vt: Any):
        self.u8 = u8
        self.header = header
        self.path = path
        self.swapped = swapped
        self.vt = vt
        self.dtypes: dict[int, np.dtype[Any]] = {
            code: (np.dtype(t).newbyteorder("S") if swapped else np.dtype(t)) for code, t in _SCALAR_NP.items()
        }

    def view(self, offset: int, dt: np.dtype[Any], count: int) -> npt.NDArray[Any]:
        return self.u8[offset : offset + dt.itemsize * count].view(dt)

    def u8_view(self, offset: int, count: int) -> npt.NDArray[np.uint8]:
        return self.u8[offset : offset + count]

    def kv_field(self, index: int, rec: Any) -> ReaderField:
        # Every offset is the parser's (an absolute span), none is recomputed here.
        offset, key, vtype = rec.offset, rec.key, rec.value_type
        key_at, klen, type_at = rec.key_offset, rec.key_len, rec.type_offset
        vstart, payload, value_len = rec.value_offset, rec.payload_offset, rec.payload_len
        dts = self.dtypes
        u32, u64 = dts[4], dts[10]
        # The closures below hold the map, never the reader (no reference cycle: a reader and
        # its header are freed as soon as the program drops it).
        u8 = self.u8
        vt = self.vt
        view, u8_view = self.view, self.u8_view

        def key_part(i: int) -> npt.NDArray[Any]:
            if i == 0:
                return view(offset, u64, 1)
            if i == 1:
                return u8_view(key_at, klen)
            return view(type_at, u32, 1)

        if vtype == _STRING:

            def make() -> tuple[Any, Any, Any]:
                def part(i: int) -> npt.NDArray[Any]:
                    if i < 3:
                        return key_part(i)
                    if i == 3:
                        return view(vstart, u64, 1)
                    return u8_view(payload, value_len)

                return _Parts(5, part), [4], [vt.STRING]

            return ReaderField(offset, key, _make=make)

        if vtype != _ARRAY:
            dt = dts[vtype]

            def make() -> tuple[Any, Any, Any]:
                def part(i: int) -> npt.NDArray[Any]:
                    return key_part(i) if i < 3 else view(payload, dt, 1)

                return _Parts(4, part), [3], [vt(vtype)]

            return ReaderField(offset, key, _make=make)

        elem, count, count_at = rec.elem_type, rec.count, rec.count_offset
        types = [vt.ARRAY, vt(elem)] if count else [vt.ARRAY]

        def head_part(i: int) -> npt.NDArray[Any]:
            if i < 3:
                return key_part(i)
            return view(vstart, u32, 1) if i == 3 else view(count_at, u64, 1)

        if elem in dts:
            edt = dts[elem]
            size = edt.itemsize

            def make() -> tuple[Any, Any, Any]:
                def part(i: int) -> npt.NDArray[Any]:
                    if i < 5:
                        return head_part(i)
                    return view(payload + (i - 5) * size, edt, 1)

                return _Parts(5 + count, part), range(5, 5 + count), types

            def fast(sl: Any) -> list[Any]:
                return view(payload, edt, count)[sl].tolist()

            return ReaderField(offset, key, _make=make, _fast=fast)

        if elem == _STRING:
            header = self.header
            big = header.big_endian
            starts_box: list[Any] = []

            def starts() -> Any:
                if not starts_box:
                    starts_box.append(memoryview(header.string_starts(index)).cast("Q"))
                return starts_box[0]

            def make() -> tuple[Any, Any, Any]:
                st = starts()

                def part(i: int) -> npt.NDArray[Any]:
                    if i < 5:
                        return head_part(i)
                    j, rem = divmod(i - 5, 2)
                    s = st[j]
                    if rem == 0:
                        return view(s, u64, 1)
                    return u8[s + 8 : st[j + 1]]

                return _StringParts(5 + 2 * count, part, u8, st), range(6, 6 + 2 * count, 2), types

            def fast(sl: Any) -> list[str]:
                if sl == slice(None):
                    return _native.decode_strings(u8[payload : payload + value_len].tobytes(), count, big)
                idx = range(count)[sl]
                if not idx:
                    return []
                lo, hi = min(idx[0], idx[-1]), max(idx[0], idx[-1]) + 1
                st = starts()
                decoded = _native.decode_strings(u8[st[lo] : st[hi]].tobytes(), hi - lo, big)
                if idx.step == 1:
                    return decoded
                return [decoded[i - lo] for i in idx]

            return ReaderField(offset, key, _make=make, _fast=fast)

        # An array of arrays: gguf-py flattens it; walk it as it does (rare, and small).
        header = self.header
        def make() -> tuple[Any, Any, Any]:
            rows, data, codes = header.layout(index)
            inner = [key_part(0), key_part(1), key_part(2)]
            for off, code, n in rows:
                inner.append(u8_view(off, n) if code == 0 else view(off, dts[code], n))
            return inner, [d + 3 for d in data], [vt(c) for c in codes]

        return ReaderField(offset, key, _make=make)

    def tensor_field(self, rec: Any) -> ReaderField:
        dts = self.dtypes
        u32, u64 = dts[4], dts[10]
        parts = [
            self.view(rec.offset, u64, 1),
            self.u8_view(rec.name_offset, rec.name_len),
            self.view(rec.n_dims_offset, u32, 1),
            self.view(rec.dims_offset, u64, rec.n_dims),
            self.view(rec.type_offset, u32, 1),
            self.view(rec.offset_offset, u64, 1),
        ]
        return ReaderField(rec.offset, rec.name, parts, [1, 3, 4, 5])

    def tensor_data(self, rec: Any, dims: npt.NDArray[Any]) -> npt.NDArray[Any]:
        name, code, abs_off, nbytes = rec.name, rec.ggml_type, rec.data_offset, rec.n_bytes
        block, tsize = rec.block_size, rec.type_size
        if nbytes is None:
            raise _gguf_error(
                f"tensor {name!r} has ggml type {code}, which this reader does not know, so its "
                "size is unknown (the metadata and the other tensors are readable)",
                "gguf::tensor::unknown_type",
                abs_off,
                f'tensor "{name}"',
                self.path,
            )
        np_dims = tuple(reversed(dims.tolist()))
        elem = _ELEMENT_NP.get(code)
        if elem is not None:
            dt = np.dtype(elem).newbyteorder("S") if self.swapped else np.dtype(elem)
        else:
            dt = np.dtype(np.uint8)
            if np_dims:
                np_dims = (*np_dims[:-1], np_dims[-1] // block * tsize)
            else:
                np_dims = (nbytes,)
        return self.u8[abs_off : abs_off + nbytes].view(dt).reshape(np_dims)
