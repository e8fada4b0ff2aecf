"""ppat: the classic parallel patterns on CUDA arrays, without copies.

Scans, reductions, histograms, transposes and permutes, stream compaction and stable radix
sorts on arrays of PyTorch, CuPy, or any DLPack producer (JAX, ...). Inputs are read in
place; results are arrays of the input's framework (torch in, torch out), or ``out=``.

Every call runs on the framework's current stream (``torch.cuda.current_stream()``,
CuPy's current stream; the legacy default stream for other producers), or on ``stream=``
(an integer ``cudaStream_t``, a ``torch.cuda.Stream``, a ``cupy.cuda.Stream``, or any object
with ``__cuda_stream__``), on the device that holds the input. Nothing synchronizes except
the calls that return a host value: a trimmed selection reads its count (documented there).

On torch tensors the calls are also custom operators (``torch.ops.ppat.*``): ``torch.compile``
traces them, and autograd records them where an input requires grad (``python/README.md``).

Inputs must be C-contiguous (``x.contiguous()``, ``cupy.ascontiguousarray(x)``). Wrong
dtypes raise ``TypeError``; wrong devices, shapes, layouts and arguments raise
``ValueError``; CUDA failures raise ``RuntimeError`` naming the ppat function.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any, NamedTuple, Optional, Sequence, Tuple

from . import _ppat

__all__ = [
    "inclusive_scan",
    "exclusive_scan",
    "inclusive_scan_by_key",
    "exclusive_scan_by_key",
    "reduce",
    "histogram_even",
    "histogram_range",
    "transpose",
    "transpose_inplace",
    "permute",
    "select",
    "select_if",
    "partition",
    "unique",
    "run_length_encode",
    "unique_by_key",
    "reduce_by_key",
    "sort",
    "argsort",
    "sort_pairs",
    "topk",
    "segment_reduce",
]

Array = Any  # a CUDA array of PyTorch, CuPy or another DLPack producer
Stream = Any  # None, an int cudaStream_t, a torch or CuPy stream, or __cuda_stream__

# ---- Public calls --------------------------------------------------------------------------

_NUMBERS = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
            "float32", "float64")


def inclusive_scan(x: Array, op: str = "sum", *, out: Optional[Array] = None,
                   stream: Stream = None) -> Array:
    """Inclusive scan of ``x`` in C order: ``out[i] = x[0] op ... op x[i]``.

    ``op`` is ``"sum"``, ``"min"`` or ``"max"``. The result has the dtype and shape of ``x``
    (integer sums wrap in that dtype; pass int64 for torch.cumsum's widening). ``out`` may
    be ``x`` (in place). Dtypes: int8-64, uint8-64, float32, float64. Floating-point sums
    are deterministic run to run.
    """
    if _as_operator("ppat.inclusive_scan", out is not None or stream is not None, x):
        return _ops.inclusive_scan(x, op)
    return _scan("ppat.inclusive_scan", x, None, op, out, stream)


def exclusive_scan(x: Array, init: Any = None, op: str = "sum", *,
                   out: Optional[Array] = None, stream: Stream = None) -> Array:
    """Exclusive scan: ``out[0] = init``, ``out[i] = init op x[0] op ... op x[i-1]``.

    ``init`` defaults to the identity of ``op`` (0, the dtype's largest value for "min",
    its smallest for "max"). Otherwise as :func:`inclusive_scan`.
    """
    if _as_operator("ppat.exclusive_scan", out is not None or stream is not None, x):
        return _ops.exclusive_scan(x, init, op)
    return _scan("ppat.exclusive_scan", x, init, op, out, stream)


def inclusive_scan_by_key(keys: Array, x: Array, op: str = "sum", *,
                          out: Optional[Array] = None, stream: Stream = None) -> Array:
    """Inclusive scan of each run of equal consecutive ``keys`` (1-d, int32 or int64).

    ``x`` (int32, int64, float32 or float64) has the keys' length; each segment is
    scanned on its own.
    """
    if _as_operator("ppat.inclusive_scan_by_key", out is not None or stream is not None, x):
        return _ops.inclusive_scan_by_key(keys, x, op)
    return _scan_by_key("ppat.inclusive_scan_by_key", keys, x, None, op, out, stream)


def exclusive_scan_by_key(keys: Array, x: Array, init: Any = None, op: str = "sum", *,
                          out: Optional[Array] = None, stream: Stream = None) -> Array:
    """Exclusive scan of each run of equal consecutive ``keys``; each starts at ``init``."""
    if _as_operator("ppat.exclusive_scan_by_key", out is not None or stream is not None, x):
        return _ops.exclusive_scan_by_key(keys, x, init, op)
    return _scan_by_key("ppat.exclusive_scan_by_key", keys, x, init, op, out, stream)


def reduce(x: Array, init: Any = None, op: str = "sum", *, out: Optional[Array] = None,
           stream: Stream = None) -> Array:
    """``init`` combined with every element of ``x``, as a 0-d array on the device.

    No synchronization: read it with ``.item()`` (which waits) when it is needed on the
    host. ``init`` defaults to the identity of ``op``. Deterministic for floating point.
    """
    if _as_operator("ppat.reduce", out is not None or stream is not None, x):
        return _ops.reduce(x, init, op)
    function = "ppat.reduce"
    a = _describe(x, "x", function)
    _require_dtype(a, _NUMBERS, function, "x")
    init = _scalar(_identity(op, a.dtype, function) if init is None else init, a.dtype,
                   function, "init")
    result = _output(out, a, (), a.dtype, function, "out")
    _ppat.reduce(a.ptr, result.ptr, a.size, a.dtype, op, init, a.device, _stream(stream, a))
    return result.obj


def segment_reduce(x: Array, offsets: Array, op: str = "sum", *, init: Any = None,
                   out: Optional[Array] = None, stream: Stream = None) -> Array:
    """Each segment ``x[offsets[i]:offsets[i + 1]]`` of a 1-d ``x`` reduced on its own:
    ``out[i] = init op x[offsets[i]] op ... op x[offsets[i + 1] - 1]``.

    ``offsets`` is a 1-d int32 or int64 array of ``num_segments + 1`` positions on the
    device of ``x`` (as ``torch.segment_reduce``'s offsets, or a CSR row pointer); the
    result has ``num_segments`` elements of the dtype of ``x``. ``op`` is "sum", "min" or
    "max"; ``init`` (the identity of ``op`` by default) is what an empty segment gets. The
    offsets stay on the device: a segment with its end before its start, or reaching past
    ``x``, reads as empty. Floating-point results are the same bits on every run.
    """
    if _as_operator("ppat.segment_reduce", out is not None or stream is not None, x):
        return _ops.segment_reduce(x, offsets, op, init)
    function = "ppat.segment_reduce"
    a = _describe(x, "x", function)
    _require_dtype(a, _NUMBERS, function, "x")
    _require_1d(a, function, "x")
    o = _describe(offsets, "offsets", function)
    _require_dtype(o, ("int32", "int64"), function, "offsets")
    _require_1d(o, function, "offsets")
    _require_same_place(a, o, function, "offsets")
    if o.size < 1:
        raise ValueError(f"{function}: offsets holds num_segments + 1 positions, at least one")
    segments = o.size - 1
    init = _scalar(_identity(op, a.dtype, function) if init is None else init, a.dtype,
                   function, "init")
    result = _output(out, a, (segments,), a.dtype, function, "out")
    _require_apart(o, result, function, "out")
    _ppat.segment_reduce(a.ptr, a.size, result.ptr, o.ptr, segments, a.dtype, o.dtype, op, init,
                         a.device, _stream(stream, a))
    return result.obj


def histogram_even(x: Array, bins: int, lower: Any, upper: Any, *,
                   weights: Optional[Array] = None, dtype: Optional[str] = None,
                   out: Optional[Array] = None, stream: Stream = None) -> Array:
    """Counts of the elements of ``x`` in ``bins`` equal bins over ``[lower, upper)``.

    Bin ``b`` covers ``[lower + b*w, lower + (b+1)*w)`` with ``w = (upper - lower) / bins``;
    integer samples are binned exactly (integer ``lower`` and ``upper``). Samples outside
    the range, and NaN, are not counted. ``dtype`` of the counts: "int64" (default) or
    "int32". With ``weights`` (float32 or float64, the shape of ``x``) each sample adds its
    weight instead, and the result has the weights' dtype (the additions meet in atomics,
    so the last bits of a bin may vary run to run). Unlike torch.histc, a sample equal to
    ``upper`` is outside, as in every bin's half-open interval.
    """
    if _as_operator("ppat.histogram_even", out is not None or stream is not None, weights):
        return _ops.histogram_even(x, bins, lower, upper, weights, _torch_dtype(dtype))
    function = "ppat.histogram_even"
    a = _describe(x, "x", function)
    _require_dtype(a, _NUMBERS, function, "x")
    bins = _bin_count(bins, function)
    level_dtype, lower, upper = _even_levels(a.dtype, lower, upper, function)
    s = None
    if weights is None:
        counter = _counter_dtype(dtype, function)
    else:
        w = _describe(weights, "weights", function)
        _require_dtype(w, ("float32", "float64"), function, "weights")
        _require_same_place(a, w, function, "weights")
        if w.shape != a.shape:
            raise ValueError(f"{function}: weights has shape {w.shape}, x has {a.shape}")
        if dtype is not None and _dtype_name(dtype) != w.dtype:
            raise ValueError(f"{function}: weighted counts have the weights' dtype {w.dtype}")
        counter = w.dtype
        s = w
    hist = _output(out, a, (bins,), counter, function, "out")
    if s is None:
        _ppat.histogram_even(a.ptr, a.size, a.dtype, hist.ptr, counter, bins, level_dtype,
                             lower, upper, a.device, _stream(stream, a))
    else:
        _ppat.histogram_even_weighted(a.ptr, s.ptr, a.size, a.dtype, s.dtype, hist.ptr, bins,
                                      level_dtype, lower, upper, a.device, _stream(stream, a))
    return hist.obj


def histogram_range(x: Array, levels: Array, *, dtype: Optional[str] = None,
                    out: Optional[Array] = None, stream: Stream = None) -> Array:
    """Counts of the elements of ``x`` in the bins ``levels[b] <= s < levels[b+1]``.

    ``levels`` is a 1-d CUDA array of the dtype of ``x``, strictly ascending, with one more
    element than there are bins. ``dtype`` of the counts: "int64" (default) or "int32".
    """
    if _as_operator("ppat.histogram_range", out is not None or stream is not None):
        return _ops.histogram_range(x, levels, _torch_dtype(dtype))
    function = "ppat.histogram_range"
    a = _describe(x, "x", function)
    _require_dtype(a, _NUMBERS, function, "x")
    lv = _describe(levels, "levels", function)
    _require_same_place(a, lv, function, "levels")
    if lv.dtype != a.dtype or len(lv.shape) != 1 or lv.size < 2:
        raise ValueError(f"{function}: levels is a 1-d array of {a.dtype} with at least 2 "
                         f"elements (got {lv.dtype}, shape {lv.shape})")
    bins = _bin_count(lv.size - 1, function)
    counter = _counter_dtype(dtype, function)
    hist = _output(out, a, (bins,), counter, function, "out")
    _ppat.histogram_range(a.ptr, a.size, a.dtype, hist.ptr, counter, bins, lv.ptr, a.device,
                          _stream(stream, a))
    return hist.obj


def transpose(x: Array, *, out: Optional[Array] = None, stream: Stream = None) -> Array:
    """The transpose of a 2-d array, or of each matrix of a 3-d batch (the last two axes).

    Any dtype of 1, 2, 4, 8 or 16 bytes. The result is C-contiguous: this is
    ``x.transpose(-2, -1).contiguous()`` in one pass.
    """
    if _as_operator("ppat.transpose", out is not None or stream is not None, x):
        return _ops.transpose(x)
    function = "ppat.transpose"
    a = _describe(x, "x", function)
    if len(a.shape) not in (2, 3):
        raise ValueError(f"{function}: x is 2-d or a 3-d batch, not of shape {a.shape}")
    batch = a.shape[0] if len(a.shape) == 3 else 1
    rows, cols = a.shape[-2:]
    result = _output(out, a, a.shape[:-2] + (cols, rows), a.dtype, function, "out")
    _ppat.transpose(a.ptr, result.ptr, batch, rows, cols, a.itemsize, a.device,
                    _stream(stream, a))
    return result.obj


def transpose_inplace(x: Array, *, stream: Stream = None) -> Array:
    """Transposes a square 2-d array in place and returns it. Autograd cannot record it: a
    tensor that requires grad (with grad mode on) raises ``ValueError``."""
    function = "ppat.transpose_inplace"
    if _as_operator(function, stream is not None, x):
        if not _compiling():
            raise ValueError(f"{function}: x requires grad, and autograd cannot record an "
                             "in-place transpose (use ppat.transpose)")
        _ops.transpose_inplace(x)
        return x
    a = _describe(x, "x", function)
    if len(a.shape) != 2 or a.shape[0] != a.shape[1]:
        raise ValueError(f"{function}: x is a square 2-d array, not of shape {a.shape}")
    _ppat.transpose_inplace(a.ptr, a.shape[0], a.itemsize, a.device, _stream(stream, a))
    return x


def permute(x: Array, axes: Sequence[int], *, out: Optional[Array] = None,
            stream: Stream = None) -> Array:
    """``x`` with its axes reordered, C-contiguous: ``out.shape[i] == x.shape[axes[i]]``.

    NumPy's axes semantics (negative axes count from the end); 1 to 8 dimensions; any dtype
    of 1, 2, 4, 8 or 16 bytes. This is ``x.permute(axes).contiguous()`` in one pass.
    """
    if _as_operator("ppat.permute", out is not None or stream is not None, x):
        return _ops.permute(x, list(axes))
    function = "ppat.permute"
    a = _describe(x, "x", function)
    rank = len(a.shape)
    axes = [int(axis) for axis in axes]
    normalized = [axis + rank if axis < 0 else axis for axis in axes]
    if sorted(normalized) != list(range(rank)):
        raise ValueError(f"{function}: axes {axes} are not a permutation of {rank} axes")
    if not 1 <= rank <= 8:
        raise ValueError(f"{function}: x has 1 to 8 dimensions, not {rank}")
    result = _output(out, a, tuple(a.shape[axis] for axis in normalized), a.dtype, function,
                     "out")
    _ppat.permute(a.ptr, result.ptr, list(a.shape), normalized, a.itemsize, a.device,
                  _stream(stream, a))
    return result.obj


def select(x: Array, mask: Array, *, out: Optional[Array] = None, trim: bool = True,
           stream: Stream = None) -> Any:
    """The elements of ``x`` where ``mask`` is nonzero, in order (``torch.masked_select``).

    ``mask`` (bool, uint8, int32 or int64) has the shape of ``x``; ``x`` is any dtype of 1,
    2, 4, 8 or 16 bytes. The result is 1-d. With ``trim`` (the default) the call waits for
    its stream to read the count and returns the selected elements; with ``trim=False`` it
    does not wait and returns ``(buffer, count)``: a buffer of ``x.size`` elements whose
    first ``count`` are the selection, and the count as a 0-d int64 device array.
    """
    if _as_operator("ppat.select", out is not None or stream is not None, x):
        return _ops.select(x, mask) if trim else _ops.select_untrimmed(x, mask)
    function = "ppat.select"
    a = _describe(x, "x", function)
    m = _describe(mask, "mask", function)
    _require_same_place(a, m, function, "mask")
    if m.shape != a.shape:
        raise ValueError(f"{function}: mask has shape {m.shape}, x has {a.shape}")
    _require_dtype(m, ("bool", "uint8", "int32", "int64"), function, "mask")
    result = _output(out, a, (a.size,), a.dtype, function, "out")
    _require_apart(m, result, function, "out")
    count = _empty(a, (), "int64")
    s = _stream(stream, a)
    _ppat.select_flagged(a.ptr, m.ptr, result.ptr, count.ptr, a.size, a.itemsize, m.dtype,
                         a.device, s)
    return _selection(result, count, trim, a, s)


def select_if(x: Array, compare: str, value: Any, *, out: Optional[Array] = None,
              trim: bool = True, stream: Stream = None) -> Any:
    """The elements ``e`` of ``x`` for which ``e <compare> value`` holds, in order.

    ``compare`` is one of ``"<" "<=" ">" ">=" "==" "!="``. Numeric dtypes (int8-64,
    uint8-64, float32, float64). ``trim`` as in :func:`select`.
    """
    if _as_operator("ppat.select_if", out is not None or stream is not None, x):
        if trim:
            return _ops.select_if(x, compare, value)
        return _ops.select_if_untrimmed(x, compare, value)
    function = "ppat.select_if"
    a = _describe(x, "x", function)
    _require_dtype(a, _NUMBERS, function, "x")
    value = _scalar(value, a.dtype, function, "value")
    result = _output(out, a, (a.size,), a.dtype, function, "out")
    count = _empty(a, (), "int64")
    s = _stream(stream, a)
    _ppat.select_if(a.ptr, result.ptr, count.ptr, a.size, a.dtype, compare, value, False,
                    a.device, s)
    return _selection(result, count, trim, a, s)


def partition(x: Array, compare: str, value: Any, *, out: Optional[Array] = None,
              stream: Stream = None) -> Tuple[Array, Array]:
    """Stable partition of a 1-d ``x``: the elements with ``e <compare> value`` first, then
    the others, each group in input order (``std::stable_partition``).

    Returns ``(result, count)``: the count of the first group as a 0-d int64 device array
    (no synchronization).
    """
    if _as_operator("ppat.partition", out is not None or stream is not None, x):
        return _ops.partition(x, compare, value)
    function = "ppat.partition"
    a = _describe(x, "x", function)
    _require_dtype(a, _NUMBERS, function, "x")
    _require_1d(a, function, "x")
    value = _scalar(value, a.dtype, function, "value")
    result = _output(out, a, a.shape, a.dtype, function, "out")
    count = _empty(a, (), "int64")
    _ppat.select_if(a.ptr, result.ptr, count.ptr, a.size, a.dtype, compare, value, True,
                    a.device, _stream(stream, a))
    return result.obj, count.obj


def unique(x: Array, *, out: Optional[Array] = None, trim: bool = True,
           stream: Stream = None) -> Any:
    """The first element of each run of equal consecutive elements of a 1-d ``x``.

    ``torch.unique_consecutive``, or ``std::unique``: sort first for the distinct values.
    Floating point: -0.0 equals +0.0 and a NaN equals nothing. ``trim`` as in
    :func:`select`.
    """
    if _as_operator("ppat.unique", out is not None or stream is not None, x):
        return _ops.unique(x) if trim else _ops.unique_untrimmed(x)
    function = "ppat.unique"
    a = _describe(x, "x", function)
    _require_dtype(a, _NUMBERS, function, "x")
    _require_1d(a, function, "x")
    result = _output(out, a, a.shape, a.dtype, function, "out")
    count = _empty(a, (), "int64")
    s = _stream(stream, a)
    _ppat.unique(a.ptr, result.ptr, 0, count.ptr, a.size, a.dtype, a.device, s)
    return _selection(result, count, trim, a, s)


def run_length_encode(x: Array, *, trim: bool = True, stream: Stream = None) -> Any:
    """Runs of equal consecutive elements of a 1-d ``x``: ``(values, lengths)``.

    Lengths are int64. With ``trim=False`` returns ``(values, lengths, count)`` without
    waiting, the buffers of ``x.size`` elements and the run count a 0-d device array.
    """
    if _as_operator("ppat.run_length_encode", stream is not None, x):
        return _ops.run_length_encode(x) if trim else _ops.run_length_encode_untrimmed(x)
    function = "ppat.run_length_encode"
    a = _describe(x, "x", function)
    _require_dtype(a, _NUMBERS, function, "x")
    _require_1d(a, function, "x")
    values = _empty(a, a.shape, a.dtype)
    lengths = _empty(a, a.shape, "int64")
    count = _empty(a, (), "int64")
    s = _stream(stream, a)
    _ppat.unique(a.ptr, values.ptr, lengths.ptr, count.ptr, a.size, a.dtype, a.device, s)
    return _runs((values, lengths), count, trim, a, s)


def unique_by_key(keys: Array, values: Array, *, trim: bool = True,
                  stream: Stream = None) -> Any:
    """The first (key, value) of each run of equal consecutive keys: ``(keys, values)``.

    ``keys`` is 1-d int32 or int64; ``values`` has the keys' length, any dtype of 1, 2, 4,
    8 or 16 bytes. ``trim=False`` returns ``(keys, values, count)`` without waiting.
    """
    if _as_operator("ppat.unique_by_key", stream is not None, values):
        if trim:
            return _ops.unique_by_key(keys, values)
        return _ops.unique_by_key_untrimmed(keys, values)
    function = "ppat.unique_by_key"
    k, v = _keys_and_values(keys, values, ("int32", "int64"), function)
    keys_out = _empty(k, k.shape, k.dtype)
    values_out = _empty(k, v.shape, v.dtype)
    count = _empty(k, (), "int64")
    s = _stream(stream, k)
    _ppat.unique_by_key(k.ptr, v.ptr, keys_out.ptr, values_out.ptr, count.ptr, k.size, k.dtype,
                        v.itemsize, k.device, s)
    return _runs((keys_out, values_out), count, trim, k, s)


def reduce_by_key(keys: Array, values: Array, op: str = "sum", *, trim: bool = True,
                  stream: Stream = None) -> Any:
    """Each run of equal consecutive keys and its values folded by ``op``, left to right:
    ``(keys, aggregates)``.

    ``keys`` is 1-d int32 or int64; ``values`` int32, int64, float32 or float64 of the same
    length; ``op`` "sum", "min" or "max". ``trim=False`` returns ``(keys, aggregates,
    count)`` without waiting.
    """
    if _as_operator("ppat.reduce_by_key", stream is not None, values):
        if trim:
            return _ops.reduce_by_key(keys, values, op)
        return _ops.reduce_by_key_untrimmed(keys, values, op)
    function = "ppat.reduce_by_key"
    k, v = _keys_and_values(keys, values, ("int32", "int64"), function)
    _require_dtype(v, ("int32", "int64", "float32", "float64"), function, "values")
    keys_out = _empty(k, k.shape, k.dtype)
    aggregates = _empty(k, v.shape, v.dtype)
    count = _empty(k, (), "int64")
    s = _stream(stream, k)
    _ppat.reduce_by_key(k.ptr, v.ptr, keys_out.ptr, aggregates.ptr, count.ptr, k.size, k.dtype,
                        v.dtype, op, k.device, s)
    return _runs((keys_out, aggregates), count, trim, k, s)


_SORT_KEYS = _NUMBERS + ("float16", "bfloat16")


def sort(x: Array, descending: bool = False, *, dim: int = -1, begin_bit: int = 0,
         end_bit: Optional[int] = None, out: Optional[Array] = None,
         stream: Stream = None) -> Array:
    """Radix sort along dimension ``dim``: integers, float16, bfloat16, float32, float64.

    A 1-d array is sorted whole; each slice of an n-d array along ``dim`` (each row of a
    matrix, by default the last dimension) on its own, as ``torch.sort(x, dim)``. Floating
    point orders as numbers: -0.0 before +0.0, every NaN after +inf (``descending`` is the
    exact reverse). Bits ``[begin_bit, end_bit)`` of the key's order-preserving unsigned
    image are sorted on (all by default; 1-d arrays), fewer bits for fewer passes. Along a
    dimension that is not the innermost in memory, the slices are gathered first and put
    back after (:func:`permute`, a pass over the array each way).
    """
    if _as_operator("ppat.sort", out is not None or stream is not None, x):
        return _ops.sort(x, bool(descending), dim, begin_bit, end_bit)
    function = "ppat.sort"
    a = _describe(x, "x", function)
    _require_dtype(a, _SORT_KEYS, function, "x")
    along = _dimension(a, dim, function)
    end_bit = 8 * a.itemsize if end_bit is None else end_bit
    if len(a.shape) > 1 and (begin_bit, end_bit) != (0, 8 * a.itemsize):
        raise ValueError(f"{function}: a bit range sorts 1-d arrays only")
    result = _output(out, a, a.shape, a.dtype, function, "out")
    s = _stream(stream, a)
    cols = a.shape[along]
    moves = _moves(a, along)
    if moves is None:
        _ppat.sort(a.ptr, result.ptr, 0, 0, a.size, cols, a.dtype, 0, bool(descending),
                   begin_bit, end_bit, a.device, s)
        return result.obj
    with _scratch_on(a, stream, s):
        moved = _moved(a, moves, s)
        _ppat.sort(moved.ptr, moved.ptr, 0, 0, a.size, cols, a.dtype, 0, bool(descending), 0,
                   end_bit, a.device, s)
    _move_back(moved, moves, result, s)
    return result.obj


def argsort(x: Array, descending: bool = False, *, dim: int = -1, out: Optional[Array] = None,
            stream: Stream = None) -> Array:
    """The int64 indices that sort ``x`` stably along dimension ``dim`` (equal keys keep
    their order): positions in each slice along ``dim`` (each row of a matrix, by default),
    as ``torch.argsort(x, dim, stable=True)``. Any ``dim`` as in :func:`sort`."""
    if _as_operator("ppat.argsort", out is not None or stream is not None):
        return _ops.argsort(x, bool(descending), dim)
    function = "ppat.argsort"
    a = _describe(x, "x", function)
    _require_dtype(a, _SORT_KEYS, function, "x")
    along = _dimension(a, dim, function)
    indices = _output(out, a, a.shape, "int64", function, "out")
    s = _stream(stream, a)
    cols = a.shape[along]
    moves = _moves(a, along)
    if moves is None:
        _ppat.argsort(a.ptr, indices.ptr, a.size, cols, a.dtype, bool(descending), a.device, s)
        return indices.obj
    with _scratch_on(a, stream, s):
        moved = _moved(a, moves, s)
        moved_indices = _empty(a, moved.shape, "int64")
        _ppat.argsort(moved.ptr, moved_indices.ptr, a.size, cols, a.dtype, bool(descending),
                      a.device, s)
    _move_back(moved_indices, moves, indices, s)
    return indices.obj


class TopK(NamedTuple):
    """What :func:`topk` returns, as ``torch.topk`` does: the keys and their int64 indices."""

    values: Any
    indices: Any


def topk(x: Array, k: int, dim: int = -1, largest: bool = True, sorted: bool = True, *,
         stream: Stream = None) -> TopK:
    """The ``k`` largest (or smallest) elements along dimension ``dim`` and their int64
    indices: ``(values, indices)``, each of the shape of ``x`` with its extent along ``dim``
    ``k``.

    As ``torch.topk(x, k, dim)``, and always in order (``sorted`` is accepted for
    compatibility): ties go to the lower index, NaN ranks above +inf (largest first), all
    NaNs as one value. Every integer and floating dtype; ``0 <= k <=`` the extent along
    ``dim``. Any ``dim`` as in :func:`sort`.
    """
    if _as_operator("ppat.topk", stream is not None, x):
        return TopK(*_ops.topk(x, k, dim, bool(largest)))
    function = "ppat.topk"
    a = _describe(x, "x", function)
    _require_dtype(a, _SORT_KEYS, function, "x")
    along = _dimension(a, dim, function)
    cols = a.shape[along]
    if isinstance(k, bool) or not isinstance(k, int):
        try:
            k = int(k.__index__())
        except AttributeError:
            raise TypeError(f"{function}: k is an integer") from None
    if not 0 <= k <= cols:
        raise ValueError(f"{function}: k = {k} is not between 0 and the extent {cols} along "
                         f"dimension {along}")
    shape = a.shape[:along] + (k,) + a.shape[along + 1:]
    values = _empty(a, shape, a.dtype)
    indices = _empty(a, shape, "int64")
    rows = a.size // cols if cols > 0 else 0
    if k == 0 or rows == 0:
        return TopK(values.obj, indices.obj)
    s = _stream(stream, a)
    moves = _moves(a, along)
    if moves is None:
        _ppat.top_k(a.ptr, values.ptr, indices.ptr, rows, cols, k, a.dtype, bool(largest),
                    a.device, s)
        return TopK(values.obj, indices.obj)
    with _scratch_on(a, stream, s):
        moved = _moved(a, moves, s)
        moved_shape = moved.shape[:-1] + (k,)
        moved_values = _empty(a, moved_shape, a.dtype)
        moved_indices = _empty(a, moved_shape, "int64")
        _ppat.top_k(moved.ptr, moved_values.ptr, moved_indices.ptr, rows, cols, k, a.dtype,
                    bool(largest), a.device, s)
    _move_back(moved_values, moves, values, s)
    _move_back(moved_indices, moves, indices, s)
    return TopK(values.obj, indices.obj)


def sort_pairs(keys: Array, values: Array, descending: bool = False, *, begin_bit: int = 0,
               end_bit: Optional[int] = None, keys_out: Optional[Array] = None,
               values_out: Optional[Array] = None,
               stream: Stream = None) -> Tuple[Array, Array]:
    """Stable radix sort of 1-d ``keys`` carrying ``values`` along: ``(keys, values)``.

    Keys as in :func:`sort`; values of the keys' length, any dtype of 1, 2, 4, 8 or 16
    bytes.
    """
    explicit = keys_out is not None or values_out is not None or stream is not None
    if _as_operator("ppat.sort_pairs", explicit, keys, values):
        return _ops.sort_pairs(keys, values, bool(descending), begin_bit, end_bit)
    function = "ppat.sort_pairs"
    k, v = _keys_and_values(keys, values, _SORT_KEYS, function)
    end_bit = 8 * k.itemsize if end_bit is None else end_bit
    sorted_keys = _output(keys_out, k, k.shape, k.dtype, function, "keys_out")
    sorted_values = _output(values_out, k, v.shape, v.dtype, function, "values_out")
    _ppat.sort(k.ptr, sorted_keys.ptr, v.ptr, sorted_values.ptr, k.size, k.size, k.dtype,
               v.itemsize, bool(descending), begin_bit, end_bit, k.device, _stream(stream, k))
    return sorted_keys.obj, sorted_values.obj


# ---- What the calls share ------------------------------------------------------------------


def _scan(function, x, init, op, out, stream):
    a = _describe(x, "x", function)
    _require_dtype(a, _NUMBERS, function, "x")
    exclusive = function == "ppat.exclusive_scan"
    init = _scalar(_identity(op, a.dtype, function) if init is None else init, a.dtype,
                   function, "init")
    result = _output(out, a, a.shape, a.dtype, function, "out", may_be_input=True)
    _ppat.scan(a.ptr, result.ptr, a.size, a.dtype, exclusive, op, init, a.device,
               _stream(stream, a))
    return result.obj


def _scan_by_key(function, keys, x, init, op, out, stream):
    k, a = _keys_and_values(keys, x, ("int32", "int64"), function)
    _require_dtype(a, ("int32", "int64", "float32", "float64"), function, "x")
    exclusive = function == "ppat.exclusive_scan_by_key"
    init = _scalar(_identity(op, a.dtype, function) if init is None else init, a.dtype,
                   function, "init")
    result = _output(out, a, a.shape, a.dtype, function, "out", may_be_input=True)
    _ppat.scan_by_key(k.ptr, a.ptr, result.ptr, a.size, k.dtype, a.dtype, exclusive, op, init,
                      a.device, _stream(stream, a))
    return result.obj


def _selection(result, count, trim, like, stream):
    if not trim:
        return result.obj, count.obj
    selected = _ppat.read_count(count.ptr, like.device, stream)
    return result.obj[:selected]


def _runs(outputs, count, trim, like, stream):
    if not trim:
        return tuple(o.obj for o in outputs) + (count.obj,)
    selected = _ppat.read_count(count.ptr, like.device, stream)
    return tuple(o.obj[:selected] for o in outputs)


def _keys_and_values(keys, values, key_dtypes, function):
    k = _describe(keys, "keys", function)
    _require_dtype(k, key_dtypes, function, "keys")
    _require_1d(k, function, "keys")
    v = _describe(values, "values", function)
    _require_same_place(k, v, function, "values")
    if v.shape != k.shape:
        raise ValueError(f"{function}: values has shape {v.shape}, keys has {k.shape}")
    return k, v


# ---- Arrays: what an input is, where outputs come from ---------------------------------------


class _Array:
    """A C-contiguous CUDA array as the raw calls take it."""

    __slots__ = ("obj", "framework", "ptr", "shape", "dtype", "itemsize", "device", "size")

    def __init__(self, obj, framework, ptr, shape, dtype, itemsize, device, size):
        self.obj = obj
        self.framework = framework
        self.ptr = ptr
        self.shape = tuple(shape)
        self.dtype = dtype
        self.itemsize = itemsize
        self.device = device
        self.size = size


def _element_count(shape) -> int:
    size = 1
    for extent in shape:
        size *= extent
    return size


_torch = None
_cupy = None
_torch_names = {}  # dtype name by torch dtype
_torch_dtypes = {}  # torch dtype by name
_torch_current_stream = None  # device index -> the raw cudaStream_t current there
_ops = None  # torch.ops.ppat, once registered (_torch_ops.py)


def _never_compiling() -> bool:
    return False


# Whether Dynamo is tracing the call: then a public call of ppat on torch tensors returns
# its custom operator's result (_torch_ops.py) instead of reading the tensors' addresses.
_compiling = _never_compiling


class _NoTorch:
    """What no array is an instance of: _Tensor until torch's operators are registered."""


_Tensor = _NoTorch


def _as_operator(function, explicit, *arrays) -> bool:
    """Whether the call runs as its torch operator (_torch_ops.py) rather than straight
    through the raw bindings: while Dynamo traces it, and where autograd must record it (a
    torch tensor of ``arrays`` requires grad, grad mode on). ``explicit``: ``out=`` or
    ``stream=`` was given, which only the eager call takes: traced, the call then breaks
    the graph; needing gradients, it raises."""
    if _torch is None and "torch" in sys.modules:
        # torch imported after ppat: its operators are registered before the first call that
        # may need them, not by that call's _describe (too late to trace it or record it).
        _load_torch()
    if _compiling():
        return not explicit
    for a in arrays:
        if isinstance(a, _Tensor) and a.requires_grad and _torch.is_grad_enabled():
            if explicit:
                raise ValueError(f"{function}: an input requires grad, and a call given out= "
                                 "or stream= records no gradient (leave them out, or detach "
                                 "the input)")
            return True
    return False


def _load_torch():
    global _torch, _torch_current_stream, _ops, _compiling, _Tensor
    if _torch is None:
        import torch

        _torch_current_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) or (
            lambda device: torch.cuda.current_stream(device).cuda_stream)

        for name in _SORT_KEYS + ("bool", "complex64", "complex128"):
            dtype = getattr(torch, name, None)
            if dtype is not None:
                _torch_names[dtype] = name
                _torch_dtypes[name] = dtype
        _torch = torch
        if hasattr(torch.library, "custom_op") and hasattr(torch.compiler, "is_compiling"):
            from . import _torch_ops  # noqa: F401  (registers torch.ops.ppat.*)

            _ops = torch.ops.ppat
            _compiling = torch.compiler.is_compiling
            _Tensor = torch.Tensor
    return _torch


def _load_cupy():
    global _cupy
    if _cupy is None:
        import cupy

        _cupy = cupy
    return _cupy


def _describe(x, name, function) -> _Array:
    module = type(x).__module__
    if module.startswith("torch"):
        torch = _load_torch()
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"{function}: {name} is a {type(x).__name__}, not an array")
        if not x.is_cuda:
            raise ValueError(f"{function}: {name} is on {x.device}, not on a CUDA device")
        if not x.is_contiguous():
            raise ValueError(f"{function}: {name} is not contiguous (use .contiguous())")
        dtype = _torch_names.get(x.dtype)
        if dtype is None:
            raise TypeError(f"{function}: {name} has the unsupported dtype {x.dtype}")
        return _Array(x, "torch", x.data_ptr(), x.shape, dtype, x.element_size(),
                      x.get_device(), x.numel())
    if module.startswith("cupy"):
        cupy = _load_cupy()
        if not isinstance(x, cupy.ndarray):
            raise TypeError(f"{function}: {name} is a {type(x).__name__}, not an array")
        if not x.flags.c_contiguous:
            raise ValueError(f"{function}: {name} is not C-contiguous "
                             "(use cupy.ascontiguousarray)")
        return _Array(x, "cupy", x.data.ptr, x.shape, x.dtype.name, x.itemsize, x.device.id,
                      x.size)
    if hasattr(x, "__dlpack__"):
        ptr, shape, dtype, itemsize, on_cuda, device, contiguous = _ppat.describe(x)
        if not on_cuda:
            raise ValueError(f"{function}: {name} is not on a CUDA device")
        if not contiguous:
            raise ValueError(f"{function}: {name} is not C-contiguous")
        if dtype == "":
            raise TypeError(f"{function}: {name} has an unsupported dtype")
        return _Array(x, "dlpack", ptr, shape, dtype, itemsize, device, _element_count(shape))
    raise TypeError(f"{function}: {name} is a {type(x).__name__}: ppat takes CUDA arrays of "
                    "PyTorch, CuPy or any DLPack producer")


def _output_framework(like: _Array) -> str:
    """The framework of a call's new arrays: the input's (PyTorch, or else CuPy, for other
    DLPack producers)."""
    if like.framework != "dlpack":
        return like.framework
    try:
        _load_torch()
        return "torch"
    except ImportError:
        _load_cupy()
        return "cupy"


def _empty(like: _Array, shape, dtype) -> _Array:
    """A new array of the input's framework on the input's device."""
    framework = _output_framework(like)
    if framework == "torch":
        # Not x.new_empty: 6.0 us a call against torch.empty_like's 3.5 (issue 41). The
        # binding column of python/bench.py measures what this costs.
        obj = _load_torch().empty(shape, dtype=_torch_dtypes[dtype], device=like.device)
        return _Array(obj, "torch", obj.data_ptr(), shape, dtype, obj.element_size(),
                      like.device, _element_count(shape))
    cupy = _load_cupy()
    if dtype == "bfloat16":
        raise TypeError("ppat: CuPy has no bfloat16")
    with cupy.cuda.Device(like.device):
        obj = cupy.empty(shape, dtype=dtype)
    return _Array(obj, "cupy", obj.data.ptr, shape, dtype, obj.itemsize, like.device, obj.size)


def _output(out, like: _Array, shape, dtype, function, name, may_be_input=False) -> _Array:
    """``out`` checked against what the call writes, or a new array."""
    if out is None:
        return _empty(like, shape, dtype)
    o = _describe(out, name, function)
    _require_same_place(like, o, function, name)
    if o.dtype != dtype or o.shape != tuple(shape):
        raise ValueError(f"{function}: {name} is {o.dtype} of shape {o.shape}; the call "
                         f"writes {dtype} of shape {tuple(shape)}")
    if not may_be_input:
        if o.ptr == like.ptr and o.size > 0:
            raise ValueError(f"{function}: {name} is the input; this call is not in place")
        _require_apart(like, o, function, name)
    return o


def _require_apart(a: _Array, b: _Array, function, name):
    """``b`` shares no byte with ``a``. An ``out`` array's whole extent counts: the C++
    call knows only where a result-sized output starts, the wrapper knows its length."""
    a_end = a.ptr + a.size * a.itemsize
    b_end = b.ptr + b.size * b.itemsize
    if a.size > 0 and b.size > 0 and a.ptr < b_end and b.ptr < a_end:
        raise ValueError(f"{function}: {name} overlaps an input (the buffers must be disjoint)")


def _stream(stream, like: _Array) -> int:
    if stream is None:
        if like.framework == "torch":
            return _torch_current_stream(like.device)
        if like.framework == "cupy":
            with _cupy.cuda.Device(like.device):
                return _cupy.cuda.get_current_stream().ptr
        return 0
    if isinstance(stream, int):
        return stream
    if hasattr(stream, "__cuda_stream__"):
        return int(stream.__cuda_stream__()[1])
    if hasattr(stream, "cuda_stream"):
        return int(stream.cuda_stream)
    if hasattr(stream, "ptr"):
        return int(stream.ptr)
    raise TypeError(f"ppat: stream is None, an int cudaStream_t, a torch or CuPy stream, or "
                    f"has __cuda_stream__; not a {type(stream).__name__}")


# ---- Argument checks -------------------------------------------------------------------------

_INTEGER_RANGES = {
    "int8": (-(1 << 7), (1 << 7) - 1),
    "uint8": (0, (1 << 8) - 1),
    "int16": (-(1 << 15), (1 << 15) - 1),
    "uint16": (0, (1 << 16) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1),
    "uint32": (0, (1 << 32) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1),
    "uint64": (0, (1 << 64) - 1),
}


def _require_dtype(a: _Array, dtypes, function, name):
    if a.dtype not in dtypes:
        raise TypeError(f"{function}: {name} is {a.dtype}; the call takes "
                        f"{', '.join(dtypes)}")


def _require_1d(a: _Array, function, name):
    if len(a.shape) != 1:
        raise ValueError(f"{function}: {name} is 1-d, not of shape {a.shape} "
                         "(reshape(-1) for the flattened array)")


def _dimension(a: _Array, dim, function) -> int:
    """``dim`` as an index into the shape (negative dims count from the end); 1-d arrays
    are one row."""
    rank = len(a.shape)
    if rank == 0:
        raise ValueError(f"{function}: x has at least one dimension")
    if isinstance(dim, bool) or not isinstance(dim, int) or not -rank <= dim < rank:
        raise ValueError(f"{function}: dim = {dim!r} is not a dimension of x (shape {a.shape})")
    return dim % rank


# ---- Along a dimension other than the last --------------------------------------------------
#
# The sorts and top-k work on rows, consecutive in memory. Along another dimension, the call
# gathers the slices into rows (ppat.permute, the dimension moved last), works on them there,
# and permutes the results back into the outputs: a pass over the array each way.


class _Moves(NamedTuple):
    forward: list  # the axes that put the dimension last
    back: list  # the axes that put it back


def _moves(a: _Array, along: int) -> Optional[_Moves]:
    """How to bring dimension ``along`` last and back; None where its slices are rows in
    memory already (every extent after it is 1) or the array is empty."""
    rank = len(a.shape)
    if a.size == 0 or _element_count(a.shape[along + 1:]) == 1:
        return None
    forward = [axis for axis in range(rank) if axis != along] + [along]
    back = list(range(along)) + [rank - 1] + list(range(along, rank - 1))
    return _Moves(forward, back)


def _moved(a: _Array, moves: _Moves, stream: int) -> _Array:
    """A new array holding ``a`` with its dimension moved last."""
    moved = _empty(a, tuple(a.shape[axis] for axis in moves.forward), a.dtype)
    _ppat.permute(a.ptr, moved.ptr, list(a.shape), moves.forward, a.itemsize, a.device, stream)
    return moved


def _move_back(moved: _Array, moves: _Moves, out: _Array, stream: int):
    _ppat.permute(moved.ptr, out.ptr, list(moved.shape), moves.back, moved.itemsize,
                  moved.device, stream)


def _scratch_on(like: _Array, stream, s: int):
    """Where a call allocates its scratch arrays: on the stream it runs on, ``s``. A scratch
    array is freed when the call returns, while its work may still be queued; the frameworks'
    caching allocators hand a freed block on only in the order of the stream it was allocated
    on, so that must be ``s``. The framework's current stream is ``s`` already unless
    ``stream=`` names another."""
    if stream is None or s == _stream(None, like):
        return contextlib.nullcontext()
    if _output_framework(like) == "torch":
        return _torch.cuda.stream(_torch.cuda.ExternalStream(s, device=like.device))
    context = contextlib.ExitStack()
    context.enter_context(_cupy.cuda.Device(like.device))
    context.enter_context(_cupy.cuda.ExternalStream(s))
    return context


def _require_same_place(a: _Array, b: _Array, function, name):
    if b.device != a.device:
        raise ValueError(f"{function}: {name} is on device {b.device}, the input on "
                         f"{a.device}")


def _scalar(value, dtype, function, name):
    """``value`` as a Python number the dtype holds exactly."""
    if dtype in _INTEGER_RANGES:
        if type(value) is int:
            low, high = _INTEGER_RANGES[dtype]
            if low <= value <= high:
                return value
        if isinstance(value, float):
            if not value.is_integer():
                raise ValueError(f"{function}: {name} = {value} is not an integer, as {dtype} "
                                 "needs")
            value = int(value)
        try:
            value = int(value)
        except (TypeError, ValueError):
            raise TypeError(f"{function}: {name} must be an integer for {dtype}") from None
        low, high = _INTEGER_RANGES[dtype]
        if not low <= value <= high:
            raise ValueError(f"{function}: {name} = {value} does not fit in {dtype}")
        return value
    if type(value) is float:
        return value
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{function}: {name} must be a number") from None


def _identity(op, dtype, function):
    if op == "sum":
        return 0
    if op not in ("min", "max"):
        raise ValueError(f"{function}: op is 'sum', 'min' or 'max', not {op!r}")
    if dtype in _INTEGER_RANGES:
        low, high = _INTEGER_RANGES[dtype]
        return high if op == "min" else low
    return float("inf") if op == "min" else float("-inf")


def _bin_count(bins, function):
    if isinstance(bins, bool) or not isinstance(bins, int):
        try:
            bins = int(bins.__index__())
        except AttributeError:
            raise TypeError(f"{function}: bins is an integer") from None
    if not 1 <= bins <= (1 << 31) - 1:
        raise ValueError(f"{function}: bins = {bins} is not between 1 and 2^31 - 1")
    return bins


def _even_levels(dtype, lower, upper, function):
    """The levels' dtype and the bounds as the raw call takes them: integer samples are
    binned exactly with integer bounds, 32-bit ones where both fit."""
    if dtype in _INTEGER_RANGES:
        lower = _scalar(lower, "int64", function, "lower")
        upper = _scalar(upper, "int64", function, "upper")
        fits = -(1 << 31) <= lower and upper <= (1 << 31) - 1
        level_dtype = "int32" if fits and dtype not in ("uint32", "int64", "uint64") else "int64"
    else:
        lower, upper = float(lower), float(upper)
        level_dtype = dtype
    if not lower < upper:
        raise ValueError(f"{function}: upper ({upper}) must be greater than lower ({lower})")
    return level_dtype, lower, upper


def _counter_dtype(dtype, function):
    dtype = "int64" if dtype is None else _dtype_name(dtype)
    if dtype not in ("int32", "int64"):
        raise TypeError(f"{function}: counts are int32 or int64, not {dtype}")
    return dtype


def _torch_dtype(dtype):
    """A dtype argument as an operator takes it (_torch_ops.py): a torch dtype, or None."""
    if dtype is None or isinstance(dtype, _torch.dtype):
        return dtype
    name = _dtype_name(dtype)
    torch_dtype = getattr(_torch, name, None)
    if not isinstance(torch_dtype, _torch.dtype):
        raise TypeError(f"ppat: {name} is not a dtype")
    return torch_dtype


def _dtype_name(dtype) -> str:
    """A dtype given as a name, a torch dtype or a NumPy/CuPy dtype, by its name."""
    if isinstance(dtype, str):
        return dtype
    if _torch is not None and dtype in _torch_names:
        return _torch_names[dtype]
    name = getattr(dtype, "name", None) or getattr(dtype, "__name__", None)
    return str(name if name is not None else dtype)


# A program that imported torch first can trace ppat from its first call.
if "torch" in sys.modules:
    _load_torch()
