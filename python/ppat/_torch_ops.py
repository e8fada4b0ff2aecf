"""ppat's calls as PyTorch custom operators, ``torch.ops.ppat.*``, for ``torch.compile``.

Dynamo cannot trace into a call that reads a tensor's address, so each public call of ppat
steps to its operator here while Dynamo traces it (``torch.compiler.is_compiling()``), and
only then: an eager call goes straight to the raw bindings, without the dispatcher's cost.
An operator's kernel is the eager call itself, on the current stream; its fake
implementation gives the results' shapes and dtypes from the inputs', so that shapes
propagate at trace time. A trimmed selection's length depends on the data: its fake draws
an unbacked size, as ``torch.nonzero``'s does, and every output of one call shares it.

Importing this module registers the operators. ppat imports it with torch (``_load_torch``).
"""

import torch

from . import (
    argsort,
    exclusive_scan,
    exclusive_scan_by_key,
    histogram_even,
    histogram_range,
    inclusive_scan,
    inclusive_scan_by_key,
    partition,
    permute,
    reduce,
    reduce_by_key,
    run_length_encode,
    segment_reduce,
    select,
    select_if,
    sort,
    sort_pairs,
    topk,
    transpose,
    transpose_inplace,
    unique,
    unique_by_key,
)


def _operator(name, schema, mutates=()):
    """Registers the decorated eager function as the kernel of ``ppat::name``."""

    def register(kernel):
        return torch.library.custom_op(f"ppat::{name}", kernel, mutates_args=mutates,
                                       schema=schema)

    return register


def _like(x, shape, dtype=None):
    return x.new_empty(shape, dtype=x.dtype if dtype is None else dtype)


def _count(x):
    """The 0-d int64 count an untrimmed selection returns."""
    return x.new_empty((), dtype=torch.int64)


def _data_dependent_length():
    return torch.library.get_ctx().new_dynamic_size()


# ---- Scans and reductions --------------------------------------------------------------------


@_operator("inclusive_scan", "(Tensor x, str op) -> Tensor")
def _inclusive_scan(x, op):
    return inclusive_scan(x, op)


@_operator("exclusive_scan", "(Tensor x, Scalar? init, str op) -> Tensor")
def _exclusive_scan(x, init, op):
    return exclusive_scan(x, init, op)


@_operator("inclusive_scan_by_key", "(Tensor keys, Tensor x, str op) -> Tensor")
def _inclusive_scan_by_key(keys, x, op):
    return inclusive_scan_by_key(keys, x, op)


@_operator("exclusive_scan_by_key", "(Tensor keys, Tensor x, Scalar? init, str op) -> Tensor")
def _exclusive_scan_by_key(keys, x, init, op):
    return exclusive_scan_by_key(keys, x, init, op)


@_inclusive_scan.register_fake
def _(x, op):
    return _like(x, x.shape)


@_exclusive_scan.register_fake
def _(x, init, op):
    return _like(x, x.shape)


@_inclusive_scan_by_key.register_fake
def _(keys, x, op):
    return _like(x, x.shape)


@_exclusive_scan_by_key.register_fake
def _(keys, x, init, op):
    return _like(x, x.shape)


@_operator("reduce", "(Tensor x, Scalar? init, str op) -> Tensor")
def _reduce(x, init, op):
    return reduce(x, init, op)


@_reduce.register_fake
def _(x, init, op):
    return _like(x, ())


@_operator("segment_reduce", "(Tensor x, Tensor offsets, str op, Scalar? init) -> Tensor")
def _segment_reduce(x, offsets, op, init):
    return segment_reduce(x, offsets, op, init=init)


@_segment_reduce.register_fake
def _(x, offsets, op, init):
    if offsets.dim() != 1 or offsets.shape[0] < 1:
        raise ValueError("ppat.segment_reduce: offsets holds num_segments + 1 positions, "
                         "at least one")
    return _like(x, (offsets.shape[0] - 1,))


# ---- Histograms ------------------------------------------------------------------------------


def _counts_dtype(counts, weights, function):
    if weights is not None:
        return weights.dtype
    if counts not in (None, torch.int32, torch.int64):
        raise TypeError(f"{function}: counts are int32 or int64, not {counts}")
    return torch.int64 if counts is None else counts


@_operator("histogram_even",
           "(Tensor x, SymInt bins, Scalar lower, Scalar upper, Tensor? weights, "
           "ScalarType? dtype) -> Tensor")
def _histogram_even(x, bins, lower, upper, weights, dtype):
    return histogram_even(x, bins, lower, upper, weights=weights, dtype=dtype)


@_histogram_even.register_fake
def _(x, bins, lower, upper, weights, dtype):
    return _like(x, (bins,), _counts_dtype(dtype, weights, "ppat.histogram_even"))


@_operator("histogram_range", "(Tensor x, Tensor levels, ScalarType? dtype) -> Tensor")
def _histogram_range(x, levels, dtype):
    return histogram_range(x, levels, dtype=dtype)


@_histogram_range.register_fake
def _(x, levels, dtype):
    if levels.dim() != 1 or levels.shape[0] < 2:
        raise ValueError("ppat.histogram_range: levels is a 1-d array with at least 2 elements")
    return _like(x, (levels.shape[0] - 1,), _counts_dtype(dtype, None, "ppat.histogram_range"))


# ---- Transposes and permutes -----------------------------------------------------------------


@_operator("transpose", "(Tensor x) -> Tensor")
def _transpose(x):
    return transpose(x)


@_transpose.register_fake
def _(x):
    if x.dim() not in (2, 3):
        raise ValueError(f"ppat.transpose: x is 2-d or a 3-d batch, not of shape {x.shape}")
    return _like(x, (*x.shape[:-2], x.shape[-1], x.shape[-2]))


@_operator("transpose_inplace", "(Tensor(a!) x) -> ()", mutates=("x",))
def _transpose_inplace(x):
    transpose_inplace(x)


@_transpose_inplace.register_fake
def _(x):
    if x.dim() != 2 or x.shape[0] != x.shape[1]:
        raise ValueError(f"ppat.transpose_inplace: x is a square 2-d array, not of shape "
                         f"{x.shape}")


@_operator("permute", "(Tensor x, int[] axes) -> Tensor")
def _permute(x, axes):
    return permute(x, axes)


@_permute.register_fake
def _(x, axes):
    rank = x.dim()
    normalized = [axis + rank if axis < 0 else axis for axis in axes]
    if sorted(normalized) != list(range(rank)):
        raise ValueError(f"ppat.permute: axes {axes} are not a permutation of {rank} axes")
    return _like(x, [x.shape[axis] for axis in normalized])


# ---- Stream compaction: trimmed (data-dependent length) and untrimmed forms ------------------


@_operator("select", "(Tensor x, Tensor mask) -> Tensor")
def _select(x, mask):
    return select(x, mask)


@_select.register_fake
def _(x, mask):
    return _like(x, (_data_dependent_length(),))


@_operator("select_untrimmed", "(Tensor x, Tensor mask) -> (Tensor, Tensor)")
def _select_untrimmed(x, mask):
    return select(x, mask, trim=False)


@_select_untrimmed.register_fake
def _(x, mask):
    return _like(x, (x.numel(),)), _count(x)


@_operator("select_if", "(Tensor x, str compare, Scalar value) -> Tensor")
def _select_if(x, compare, value):
    return select_if(x, compare, value)


@_select_if.register_fake
def _(x, compare, value):
    return _like(x, (_data_dependent_length(),))


@_operator("select_if_untrimmed", "(Tensor x, str compare, Scalar value) -> (Tensor, Tensor)")
def _select_if_untrimmed(x, compare, value):
    return select_if(x, compare, value, trim=False)


@_select_if_untrimmed.register_fake
def _(x, compare, value):
    return _like(x, (x.numel(),)), _count(x)


@_operator("partition", "(Tensor x, str compare, Scalar value) -> (Tensor, Tensor)")
def _partition(x, compare, value):
    return partition(x, compare, value)


@_partition.register_fake
def _(x, compare, value):
    return _like(x, x.shape), _count(x)


@_operator("unique", "(Tensor x) -> Tensor")
def _unique(x):
    return unique(x)


@_unique.register_fake
def _(x):
    return _like(x, (_data_dependent_length(),))


@_operator("unique_untrimmed", "(Tensor x) -> (Tensor, Tensor)")
def _unique_untrimmed(x):
    return unique(x, trim=False)


@_unique_untrimmed.register_fake
def _(x):
    return _like(x, x.shape), _count(x)


@_operator("run_length_encode", "(Tensor x) -> (Tensor, Tensor)")
def _run_length_encode(x):
    return run_length_encode(x)


@_run_length_encode.register_fake
def _(x):
    runs = _data_dependent_length()
    return _like(x, (runs,)), _like(x, (runs,), torch.int64)


@_operator("run_length_encode_untrimmed", "(Tensor x) -> (Tensor, Tensor, Tensor)")
def _run_length_encode_untrimmed(x):
    return run_length_encode(x, trim=False)


@_run_length_encode_untrimmed.register_fake
def _(x):
    return _like(x, x.shape), _like(x, x.shape, torch.int64), _count(x)


@_operator("unique_by_key", "(Tensor keys, Tensor values) -> (Tensor, Tensor)")
def _unique_by_key(keys, values):
    return unique_by_key(keys, values)


@_unique_by_key.register_fake
def _(keys, values):
    runs = _data_dependent_length()
    return _like(keys, (runs,)), _like(values, (runs,))


@_operator("unique_by_key_untrimmed", "(Tensor keys, Tensor values) -> (Tensor, Tensor, Tensor)")
def _unique_by_key_untrimmed(keys, values):
    return unique_by_key(keys, values, trim=False)


@_unique_by_key_untrimmed.register_fake
def _(keys, values):
    return _like(keys, keys.shape), _like(values, values.shape), _count(keys)


@_operator("reduce_by_key", "(Tensor keys, Tensor values, str op) -> (Tensor, Tensor)")
def _reduce_by_key(keys, values, op):
    return reduce_by_key(keys, values, op)


@_reduce_by_key.register_fake
def _(keys, values, op):
    runs = _data_dependent_length()
    return _like(keys, (runs,)), _like(values, (runs,))


@_operator("reduce_by_key_untrimmed",
           "(Tensor keys, Tensor values, str op) -> (Tensor, Tensor, Tensor)")
def _reduce_by_key_untrimmed(keys, values, op):
    return reduce_by_key(keys, values, op, trim=False)


@_reduce_by_key_untrimmed.register_fake
def _(keys, values, op):
    return _like(keys, keys.shape), _like(values, values.shape), _count(keys)


# ---- Sorts and top-k -------------------------------------------------------------------------


@_operator("sort", "(Tensor x, bool descending, int dim, int begin_bit, int? end_bit) -> Tensor")
def _sort(x, descending, dim, begin_bit, end_bit):
    return sort(x, descending, dim=dim, begin_bit=begin_bit, end_bit=end_bit)


@_sort.register_fake
def _(x, descending, dim, begin_bit, end_bit):
    return _like(x, x.shape)


@_operator("argsort", "(Tensor x, bool descending, int dim) -> Tensor")
def _argsort(x, descending, dim):
    return argsort(x, descending, dim=dim)


@_argsort.register_fake
def _(x, descending, dim):
    return _like(x, x.shape, torch.int64)


@_operator("sort_pairs",
           "(Tensor keys, Tensor values, bool descending, int begin_bit, int? end_bit) "
           "-> (Tensor, Tensor)")
def _sort_pairs(keys, values, descending, begin_bit, end_bit):
    return sort_pairs(keys, values, descending, begin_bit=begin_bit, end_bit=end_bit)


@_sort_pairs.register_fake
def _(keys, values, descending, begin_bit, end_bit):
    return _like(keys, keys.shape), _like(values, values.shape)


@_operator("topk", "(Tensor x, SymInt k, int dim, bool largest) -> (Tensor, Tensor)")
def _topk(x, k, dim, largest):
    return tuple(topk(x, k, dim, largest))


@_topk.register_fake
def _(x, k, dim, largest):
    if x.dim() == 0:
        raise ValueError("ppat.topk: x has at least one dimension")
    shape = (*x.shape[:-1], k)
    return _like(x, shape), _like(x, shape, torch.int64)
