"""ppat's calls as PyTorch custom operators, ``torch.ops.ppat.*``, for ``torch.compile``
and autograd.

Dynamo cannot trace into a call that reads a tensor's address, and autograd does not see
one, so each public call of ppat steps to its operator here while Dynamo traces it
(``torch.compiler.is_compiling()``) or where an input requires grad (``_as_operator``), and
only then: any other call goes straight to the raw bindings, without the dispatcher's cost.
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


def _here(x):
    """The stream a kernel passes its eager call: the current one of x's device (0 for a tensor
    off the GPU, which the call rejects). Explicit, it keeps the call eager: while
    torch.compiler.is_compiling() holds (torch.export sets it too), a call given no stream
    would take its operator again, and with it this kernel."""
    return torch.cuda.current_stream(x.device).cuda_stream if x.is_cuda else 0


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
    return inclusive_scan(x, op, stream=_here(x))


@_operator("exclusive_scan", "(Tensor x, Scalar? init, str op) -> Tensor")
def _exclusive_scan(x, init, op):
    return exclusive_scan(x, init, op, stream=_here(x))


@_operator("inclusive_scan_by_key", "(Tensor keys, Tensor x, str op) -> Tensor")
def _inclusive_scan_by_key(keys, x, op):
    return inclusive_scan_by_key(keys, x, op, stream=_here(keys))


@_operator("exclusive_scan_by_key", "(Tensor keys, Tensor x, Scalar? init, str op) -> Tensor")
def _exclusive_scan_by_key(keys, x, init, op):
    return exclusive_scan_by_key(keys, x, init, op, stream=_here(keys))


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
    return reduce(x, init, op, stream=_here(x))


@_reduce.register_fake
def _(x, init, op):
    return _like(x, ())


@_operator("segment_reduce", "(Tensor x, Tensor offsets, str op, Scalar? init) -> Tensor")
def _segment_reduce(x, offsets, op, init):
    return segment_reduce(x, offsets, op, init=init, stream=_here(x))


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
    return histogram_even(x, bins, lower, upper, weights=weights, dtype=dtype, stream=_here(x))


@_histogram_even.register_fake
def _(x, bins, lower, upper, weights, dtype):
    return _like(x, (bins,), _counts_dtype(dtype, weights, "ppat.histogram_even"))


@_operator("histogram_range", "(Tensor x, Tensor levels, ScalarType? dtype) -> Tensor")
def _histogram_range(x, levels, dtype):
    return histogram_range(x, levels, dtype=dtype, stream=_here(x))


@_histogram_range.register_fake
def _(x, levels, dtype):
    if levels.dim() != 1 or levels.shape[0] < 2:
        raise ValueError("ppat.histogram_range: levels is a 1-d array with at least 2 elements")
    return _like(x, (levels.shape[0] - 1,), _counts_dtype(dtype, None, "ppat.histogram_range"))


# ---- Transposes and permutes -----------------------------------------------------------------


@_operator("transpose", "(Tensor x) -> Tensor")
def _transpose(x):
    return transpose(x, stream=_here(x))


@_transpose.register_fake
def _(x):
    if x.dim() not in (2, 3):
        raise ValueError(f"ppat.transpose: x is 2-d or a 3-d batch, not of shape {x.shape}")
    return _like(x, (*x.shape[:-2], x.shape[-1], x.shape[-2]))


@_operator("transpose_inplace", "(Tensor(a!) x) -> ()", mutates=("x",))
def _transpose_inplace(x):
    transpose_inplace(x, stream=_here(x))


@_transpose_inplace.register_fake
def _(x):
    if x.dim() != 2 or x.shape[0] != x.shape[1]:
        raise ValueError(f"ppat.transpose_inplace: x is a square 2-d array, not of shape "
                         f"{x.shape}")


@_operator("permute", "(Tensor x, int[] axes) -> Tensor")
def _permute(x, axes):
    return permute(x, axes, stream=_here(x))


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
    return select(x, mask, stream=_here(x))


@_select.register_fake
def _(x, mask):
    return _like(x, (_data_dependent_length(),))


@_operator("select_untrimmed", "(Tensor x, Tensor mask) -> (Tensor, Tensor)")
def _select_untrimmed(x, mask):
    return select(x, mask, trim=False, stream=_here(x))


@_select_untrimmed.register_fake
def _(x, mask):
    return _like(x, (x.numel(),)), _count(x)


@_operator("select_if", "(Tensor x, str compare, Scalar value) -> Tensor")
def _select_if(x, compare, value):
    return select_if(x, compare, value, stream=_here(x))


@_select_if.register_fake
def _(x, compare, value):
    return _like(x, (_data_dependent_length(),))


@_operator("select_if_untrimmed", "(Tensor x, str compare, Scalar value) -> (Tensor, Tensor)")
def _select_if_untrimmed(x, compare, value):
    return select_if(x, compare, value, trim=False, stream=_here(x))


@_select_if_untrimmed.register_fake
def _(x, compare, value):
    return _like(x, (x.numel(),)), _count(x)


@_operator("partition", "(Tensor x, str compare, Scalar value) -> (Tensor, Tensor)")
def _partition(x, compare, value):
    return partition(x, compare, value, stream=_here(x))


@_partition.register_fake
def _(x, compare, value):
    return _like(x, x.shape), _count(x)


@_operator("unique", "(Tensor x) -> Tensor")
def _unique(x):
    return unique(x, stream=_here(x))


@_unique.register_fake
def _(x):
    return _like(x, (_data_dependent_length(),))


@_operator("unique_untrimmed", "(Tensor x) -> (Tensor, Tensor)")
def _unique_untrimmed(x):
    return unique(x, trim=False, stream=_here(x))


@_unique_untrimmed.register_fake
def _(x):
    return _like(x, x.shape), _count(x)


@_operator("run_length_encode", "(Tensor x) -> (Tensor, Tensor)")
def _run_length_encode(x):
    return run_length_encode(x, stream=_here(x))


@_run_length_encode.register_fake
def _(x):
    runs = _data_dependent_length()
    return _like(x, (runs,)), _like(x, (runs,), torch.int64)


@_operator("run_length_encode_untrimmed", "(Tensor x) -> (Tensor, Tensor, Tensor)")
def _run_length_encode_untrimmed(x):
    return run_length_encode(x, trim=False, stream=_here(x))


@_run_length_encode_untrimmed.register_fake
def _(x):
    return _like(x, x.shape), _like(x, x.shape, torch.int64), _count(x)


@_operator("unique_by_key", "(Tensor keys, Tensor values) -> (Tensor, Tensor)")
def _unique_by_key(keys, values):
    return unique_by_key(keys, values, stream=_here(keys))


@_unique_by_key.register_fake
def _(keys, values):
    runs = _data_dependent_length()
    return _like(keys, (runs,)), _like(values, (runs,))


@_operator("unique_by_key_untrimmed", "(Tensor keys, Tensor values) -> (Tensor, Tensor, Tensor)")
def _unique_by_key_untrimmed(keys, values):
    return unique_by_key(keys, values, trim=False, stream=_here(keys))


@_unique_by_key_untrimmed.register_fake
def _(keys, values):
    return _like(keys, keys.shape), _like(values, values.shape), _count(keys)


@_operator("reduce_by_key", "(Tensor keys, Tensor values, str op) -> (Tensor, Tensor)")
def _reduce_by_key(keys, values, op):
    return reduce_by_key(keys, values, op, stream=_here(keys))


@_reduce_by_key.register_fake
def _(keys, values, op):
    runs = _data_dependent_length()
    return _like(keys, (runs,)), _like(values, (runs,))


@_operator("reduce_by_key_untrimmed",
           "(Tensor keys, Tensor values, str op) -> (Tensor, Tensor, Tensor)")
def _reduce_by_key_untrimmed(keys, values, op):
    return reduce_by_key(keys, values, op, trim=False, stream=_here(keys))


@_reduce_by_key_untrimmed.register_fake
def _(keys, values, op):
    return _like(keys, keys.shape), _like(values, values.shape), _count(keys)


# ---- Sorts and top-k -------------------------------------------------------------------------


@_operator("sort", "(Tensor x, bool descending, int dim, int begin_bit, int? end_bit) -> Tensor")
def _sort(x, descending, dim, begin_bit, end_bit):
    return sort(x, descending, dim=dim, begin_bit=begin_bit, end_bit=end_bit, stream=_here(x))


@_sort.register_fake
def _(x, descending, dim, begin_bit, end_bit):
    return _like(x, x.shape)


@_operator("argsort", "(Tensor x, bool descending, int dim) -> Tensor")
def _argsort(x, descending, dim):
    return argsort(x, descending, dim=dim, stream=_here(x))


@_argsort.register_fake
def _(x, descending, dim):
    return _like(x, x.shape, torch.int64)


@_operator("sort_pairs",
           "(Tensor keys, Tensor values, bool descending, int begin_bit, int? end_bit) "
           "-> (Tensor, Tensor)")
def _sort_pairs(keys, values, descending, begin_bit, end_bit):
    return sort_pairs(keys, values, descending, begin_bit=begin_bit, end_bit=end_bit,
                      stream=_here(keys))


@_sort_pairs.register_fake
def _(keys, values, descending, begin_bit, end_bit):
    return _like(keys, keys.shape), _like(values, values.shape)


@_operator("topk", "(Tensor x, SymInt k, int dim, bool largest) -> (Tensor, Tensor)")
def _topk(x, k, dim, largest):
    return tuple(topk(x, k, dim, largest, stream=_here(x)))


@_topk.register_fake
def _(x, k, dim, largest):
    if x.dim() == 0:
        raise ValueError("ppat.topk: x has at least one dimension")
    shape = list(x.shape)
    shape[dim] = k
    return _like(x, shape), _like(x, shape, torch.int64)


# ---- Gradients -------------------------------------------------------------------------------
#
# Where a ppat call's result is differentiable as its torch counterpart's is, its operator
# has a backward formula, made of torch ops and ppat's own operators (never the public calls,
# which would read the addresses of the tensors a traced backward holds). The others raise
# when autograd reaches them ("no autograd formula was registered", or the op named): min
# and max scans, reduce_by_key other than sums, weighted histograms. Integer results
# (counts, indices, argsort) carry no gradient.


def _differentiable(name, setup, backward):
    torch.library.register_autograd(f"ppat::{name}", backward, setup_context=setup)


def _sums_only(ctx, function):
    if ctx.op != "sum":
        raise RuntimeError(f"{function}: gradients are defined here for op='sum' only, not "
                           f"{ctx.op!r}")


def _reverse_cumsum(g):
    """out[i] = g[i] + ... + g[n - 1] over a 1-d g."""
    return g.flip(0).cumsum(0).flip(0)


def _keep_op(position):
    def setup(ctx, inputs, output):
        ctx.op = inputs[position]
        ctx.shape = inputs[0].shape

    return setup


def _inclusive_scan_backward(ctx, g):
    _sums_only(ctx, "ppat.inclusive_scan")
    return _reverse_cumsum(g.reshape(-1)).reshape(ctx.shape), None


def _exclusive_scan_backward(ctx, g):
    # out[i] takes x[j] for every j < i: x[j]'s gradient is the sum of g after j.
    _sums_only(ctx, "ppat.exclusive_scan")
    through = _reverse_cumsum(g.reshape(-1))
    after = torch.zeros_like(through)
    after[:-1] = through[1:]
    return after.reshape(ctx.shape), None, None


_differentiable("inclusive_scan", _keep_op(1), _inclusive_scan_backward)
_differentiable("exclusive_scan", _keep_op(2), _exclusive_scan_backward)


def _keep_keys_and_op(position):
    def setup(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.op = inputs[position]

    return setup


def _inclusive_scan_by_key_backward(ctx, g):
    # Within each run of equal keys, the sum of g from the item to the run's end: the same
    # scan over the reversed keys and g (a run reversed is a run).
    _sums_only(ctx, "ppat.inclusive_scan_by_key")
    (keys,) = ctx.saved_tensors
    scanned = torch.ops.ppat.inclusive_scan_by_key(keys.flip(0), g.flip(0), "sum")
    return None, scanned.flip(0), None


def _exclusive_scan_by_key_backward(ctx, g):
    _sums_only(ctx, "ppat.exclusive_scan_by_key")
    (keys,) = ctx.saved_tensors
    scanned = torch.ops.ppat.exclusive_scan_by_key(keys.flip(0), g.flip(0), 0, "sum")
    return None, scanned.flip(0), None, None


_differentiable("inclusive_scan_by_key", _keep_keys_and_op(2), _inclusive_scan_by_key_backward)
_differentiable("exclusive_scan_by_key", _keep_keys_and_op(3), _exclusive_scan_by_key_backward)


def _reduce_setup(ctx, inputs, output):
    x, init, op = inputs
    ctx.op = op
    ctx.shape = x.shape
    if op != "sum":
        ctx.save_for_backward(x, output)


def _reduce_backward(ctx, g):
    if ctx.op == "sum":
        return g.expand(ctx.shape), None, None
    # As torch.amax and torch.amin: the gradient spread evenly over the items equal to the
    # result (NaN where the result is NaN); none where init alone is the result.
    x, result = ctx.saved_tensors
    extreme = (x == result) | (x.isnan() & result.isnan())
    return extreme * (g / extreme.sum().clamp(min=1)), None, None


_differentiable("reduce", _reduce_setup, _reduce_backward)


def _segment_reduce_setup(ctx, inputs, output):
    x, offsets, op, init = inputs
    ctx.save_for_backward(offsets)
    ctx.op = op
    ctx.items = x.shape[0]


def _segment_reduce_backward(ctx, g):
    # Item k's gradient is the sum of g over the segments that hold it: g[i] added at segment
    # i's begin and taken away at its end, then summed up to k in double (no cancellation
    # worth the name). Segments that are no range (a negative begin, an end before the begin
    # or past the items) read as empty and get none.
    _sums_only(ctx, "ppat.segment_reduce")
    (offsets,) = ctx.saved_tensors
    begins, ends = offsets[:-1].long(), offsets[1:].long()
    valid = (begins >= 0) & (begins <= ends) & (ends <= ctx.items)
    weights = torch.where(valid, g.double(), 0.0)
    steps = g.new_zeros(ctx.items + 1, dtype=torch.float64)
    steps = steps.index_add(0, torch.where(valid, begins, 0), weights)
    steps = steps.index_add(0, torch.where(valid, ends, 0), -weights)
    return steps.cumsum(0)[:-1].to(g.dtype), None, None, None


_differentiable("segment_reduce", _segment_reduce_setup, _segment_reduce_backward)


def _no_state(ctx, inputs, output):
    pass


def _permute_setup(ctx, inputs, output):
    x, axes = inputs
    rank = x.dim()
    ctx.inverse = [0] * rank
    for place, axis in enumerate(axes):
        ctx.inverse[axis + rank if axis < 0 else axis] = place


_differentiable("transpose", _no_state, lambda ctx, g: (g.transpose(-2, -1),))
_differentiable("permute", _permute_setup, lambda ctx, g: (g.permute(ctx.inverse), None))


# Selections: each kept item's gradient goes back to its place; masked_scatter takes the
# gradients in order, as many as the mask keeps (an untrimmed buffer's tail is never read).


def _keep_mask(ctx, inputs, output):
    ctx.save_for_backward(inputs[1] != 0)


def _kept_backward(ctx, g, *unused):
    (mask,) = ctx.saved_tensors
    return torch.zeros_like(mask, dtype=g.dtype).masked_scatter(mask, g), None


_differentiable("select", _keep_mask, _kept_backward)
_differentiable("select_untrimmed", _keep_mask, _kept_backward)

_COMPARISONS = {"<": torch.lt, "<=": torch.le, ">": torch.gt, ">=": torch.ge, "==": torch.eq,
                "!=": torch.ne}


def _keep_comparison(ctx, inputs, output):
    x, compare, value = inputs
    ctx.save_for_backward(_COMPARISONS[compare](x, value))


def _compared_backward(ctx, g, *unused):
    return _kept_backward(ctx, g)[0], None, None


def _partition_backward(ctx, g, unused):
    # The kept items' gradients are g's first ones in order, the others' its last ones in
    # order: the first ones of g reversed, taken by the reversed array's rejected items.
    (kept,) = ctx.saved_tensors
    first = torch.zeros_like(g).masked_scatter(kept, g)
    last = torch.zeros_like(g).masked_scatter(~kept.flip(0), g.flip(0)).flip(0)
    return torch.where(kept, first, last), None, None


_differentiable("select_if", _keep_comparison, _compared_backward)
_differentiable("select_if_untrimmed", _keep_comparison, _compared_backward)
_differentiable("partition", _keep_comparison, _partition_backward)


def _reduce_by_key_setup(ctx, inputs, output):
    keys, values, op = inputs
    ctx.save_for_backward(keys)
    ctx.op = op


def _reduce_by_key_backward(ctx, g_keys, g_aggregates, *unused):
    # Each value's gradient is its run's aggregate's: the run of item k is the count of run
    # heads up to k. (The keys out are integers, with no gradient.)
    _sums_only(ctx, "ppat.reduce_by_key")
    (keys,) = ctx.saved_tensors
    heads = torch.ones_like(keys, dtype=torch.int64)
    heads[1:] = keys[1:] != keys[:-1]
    return None, g_aggregates[heads.cumsum(0) - 1], None


_differentiable("reduce_by_key", _reduce_by_key_setup, _reduce_by_key_backward)
_differentiable("reduce_by_key_untrimmed", _reduce_by_key_setup, _reduce_by_key_backward)


# unique, run_length_encode and unique_by_key copy the first item of each run: the run heads
# take the gradients in order. Heads as the calls find them: an item unequal to the one
# before (floats: -0.0 equals +0.0, a NaN equals nothing).


def _heads(items):
    first = torch.ones_like(items[:1], dtype=torch.bool)
    return torch.cat([first, items[1:] != items[:-1]])


def _keep_heads(ctx, inputs, output):
    ctx.save_for_backward(_heads(inputs[0]))


def _heads_backward(ctx, g, *unused):
    (heads,) = ctx.saved_tensors
    return torch.zeros_like(heads, dtype=g.dtype).masked_scatter(heads, g)


def _values_at_heads_backward(ctx, g_keys, g_values, *unused):
    return None, _heads_backward(ctx, g_values)


for _name in ("unique", "unique_untrimmed", "run_length_encode", "run_length_encode_untrimmed"):
    _differentiable(_name, _keep_heads, _heads_backward)
for _name in ("unique_by_key", "unique_by_key_untrimmed"):
    _differentiable(_name, _keep_heads, _values_at_heads_backward)


# Sorts: the gradient of the item sorted to place p is g[p]; the places come from sorting
# positions along with the keys, exactly as the forward call ordered them (stable, the same
# bits), and scatter the gradients back.


def _sort_setup(ctx, inputs, output):
    x, descending, dim, begin_bit, end_bit = inputs
    ctx.save_for_backward(x)
    ctx.order = (descending, dim, begin_bit, end_bit)


def _places(keys, descending, begin_bit, end_bit):
    positions = torch.arange(keys.shape[0], device=keys.device)
    return torch.ops.ppat.sort_pairs(keys, positions, descending, begin_bit, end_bit)[1]


def _sort_backward(ctx, g):
    (x,) = ctx.saved_tensors
    descending, dim, begin_bit, end_bit = ctx.order
    if x.dim() == 1:
        places = _places(x, descending, begin_bit, end_bit)
    else:
        places = torch.ops.ppat.argsort(x, descending, dim)
    return torch.zeros_like(g).scatter(dim, places, g), None, None, None, None


_differentiable("sort", _sort_setup, _sort_backward)


def _sort_pairs_setup(ctx, inputs, output):
    keys, values, descending, begin_bit, end_bit = inputs
    ctx.save_for_backward(keys)
    ctx.order = (descending, begin_bit, end_bit)


def _sort_pairs_backward(ctx, g_keys, g_values):
    (keys,) = ctx.saved_tensors
    places = _places(keys, *ctx.order)
    grads = [torch.zeros_like(g).scatter(0, places, g) if wanted else None
             for g, wanted in zip((g_keys, g_values), ctx.needs_input_grad)]
    return grads[0], grads[1], None, None, None


_differentiable("sort_pairs", _sort_pairs_setup, _sort_pairs_backward)


def _topk_setup(ctx, inputs, output):
    x, k, dim, largest = inputs
    ctx.save_for_backward(output[1])
    ctx.shape = x.shape
    ctx.dim = dim


def _topk_backward(ctx, g_values, g_indices):
    (indices,) = ctx.saved_tensors
    grad = g_values.new_zeros(ctx.shape).scatter(ctx.dim, indices, g_values)
    return grad, None, None, None


_differentiable("topk", _topk_setup, _topk_backward)
