"""Gradients through ppat's calls on torch tensors, against torch's own differentiable ops.

Inputs and upstream gradients are integer-valued float64, so that every gradient is a sum of
integers computed exactly whatever the order: each is compared bit for bit. Inputs that
need their order unambiguous (sorts, top-k) have distinct values.
"""

import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ppat  # noqa: E402

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available() or not hasattr(torch.library, "custom_op"),
    reason="needs a CUDA device and torch.library.custom_op (torch 2.4 or newer)")

rng = np.random.default_rng(int.from_bytes(os.urandom(8), "little"))


def leaf(a: np.ndarray):
    return torch.from_numpy(np.ascontiguousarray(a)).cuda().requires_grad_()


def whole_numbers(*shape):
    return np.asarray(rng.integers(-50, 50, shape), dtype=np.float64)


def distinct(*shape):
    """Distinct integer-valued float64s in random order (no ties to break)."""
    n = int(np.prod(shape))
    return (rng.permutation(4 * n)[:n] - 2 * n).astype(np.float64).reshape(shape)


def gradient(call, x, upstream=None):
    """d(sum(upstream * call(x)))/dx, and the upstream gradient used."""
    out = call(x)
    out = out[0] if isinstance(out, tuple) else out
    if upstream is None:
        upstream = torch.from_numpy(whole_numbers(*out.shape)).cuda()
    (grad,) = torch.autograd.grad(out, x, upstream)
    return grad, upstream


def assert_same_gradient(ppat_call, torch_call, a):
    x = leaf(a)
    mine, upstream = gradient(ppat_call, x)
    theirs, _ = gradient(torch_call, x, upstream)
    assert torch.equal(mine, theirs)


@pytest.mark.parametrize("n", [1, 1000, 65537])
def test_scans_and_sums(n):
    a = whole_numbers(n)
    assert_same_gradient(ppat.inclusive_scan, lambda x: torch.cumsum(x, 0), a)
    assert_same_gradient(lambda x: ppat.exclusive_scan(x, 7),
                         lambda x: torch.cat([x.new_full((1,), 7.0), 7 + x.cumsum(0)[:-1]]), a)
    assert_same_gradient(ppat.reduce, torch.sum, a)
    # Ties (values repeat): the gradient spread evenly over them, as torch.amax and amin do.
    assert_same_gradient(lambda x: ppat.reduce(x, op="max"), torch.amax, a)
    assert_same_gradient(lambda x: ppat.reduce(x, op="min"), torch.amin, a)


def test_scans_by_key():
    keys = torch.from_numpy(np.sort(rng.integers(0, 40, 5000)).astype(np.int32)).cuda()
    runs = torch.cat([torch.ones(1, dtype=torch.bool, device="cuda"), keys[1:] != keys[:-1]])
    run = runs.long().cumsum(0) - 1

    def by_run_inclusive(x):  # the running sum restarted at each run
        totals = torch.zeros(int(run[-1]) + 1, dtype=x.dtype, device="cuda")
        before = totals.index_add(0, run, x).cumsum(0) - totals.index_add(0, run, x)
        return x.cumsum(0) - before[run]

    a = whole_numbers(5000)
    assert_same_gradient(lambda x: ppat.inclusive_scan_by_key(keys, x), by_run_inclusive, a)
    assert_same_gradient(lambda x: ppat.exclusive_scan_by_key(keys, x),
                         lambda x: by_run_inclusive(x) - x, a)


def test_segment_reduce_and_reduce_by_key():
    a = whole_numbers(10000)
    offsets = torch.tensor([0, 10, 10, 2500, 9999, 10000], device="cuda")
    assert_same_gradient(lambda x: ppat.segment_reduce(x, offsets),
                         lambda x: torch.segment_reduce(x, "sum", offsets=offsets), a)
    # Overlapping segments and ones that are no range: the gradient of x[k] sums over the
    # segments holding it; [900, 3), [40, -1) and [-1, 20000) read as empty.
    wild = torch.tensor([5, 900, 3, 40, -1, 20000], dtype=torch.int32, device="cuda")
    x = leaf(a)
    upstream = torch.from_numpy(whole_numbers(5)).cuda()
    (grad,) = torch.autograd.grad(ppat.segment_reduce(x, wild), x, upstream)
    expected = np.zeros(10000)
    expected[5:900] += upstream[0].item()
    expected[3:40] += upstream[2].item()
    np.testing.assert_array_equal(grad.cpu().numpy(), expected)

    keys = torch.from_numpy(np.sort(rng.integers(0, 300, 10000)).astype(np.int64)).cuda()
    _, inverse = torch.unique_consecutive(keys, return_inverse=True)
    assert_same_gradient(
        lambda x: ppat.reduce_by_key(keys, x)[1],
        lambda x: torch.zeros(int(inverse[-1]) + 1, dtype=x.dtype,
                              device="cuda").index_add(0, inverse, x), a)


def heads(items):
    return torch.cat([torch.ones(1, dtype=torch.bool, device="cuda"), items[1:] != items[:-1]])


def test_copies_of_run_heads():
    a = np.sort(rng.integers(-300, 300, 20000)).astype(np.float64)
    a[rng.random(a.size) < 0.1] = 0.0
    a[rng.random(a.size) < 0.05] = -0.0  # equal to +0.0: no run starts between them
    assert_same_gradient(ppat.unique, lambda x: x[heads(x)], a)
    assert_same_gradient(lambda x: ppat.run_length_encode(x)[0], lambda x: x[heads(x)], a)
    keys = torch.from_numpy(np.sort(rng.integers(0, 500, 20000))).cuda()
    assert_same_gradient(lambda x: ppat.unique_by_key(keys, x)[1], lambda x: x[heads(keys)],
                         whole_numbers(20000))


def test_transpose_and_permute():
    assert_same_gradient(ppat.transpose, lambda x: x.transpose(-2, -1).contiguous(),
                         whole_numbers(3, 50, 70))
    axes = (2, 0, 3, 1)
    assert_same_gradient(lambda x: ppat.permute(x, axes),
                         lambda x: x.permute(axes).contiguous(), whole_numbers(4, 5, 6, 7))


def test_selections():
    a = whole_numbers(20000)
    mask = torch.from_numpy(a > 3).cuda()
    assert_same_gradient(lambda x: ppat.select(x, mask), lambda x: torch.masked_select(x, mask),
                         a)
    assert_same_gradient(lambda x: ppat.select_if(x, "<=", -7), lambda x: x[x <= -7], a)
    assert_same_gradient(lambda x: ppat.select_if(x, ">", 3, trim=False)[0][: int(mask.sum())],
                         lambda x: x[x > 3], a)
    assert_same_gradient(lambda x: ppat.partition(x, "!=", 0)[0],
                         lambda x: torch.cat([x[x != 0], x[x == 0]]), a)


@pytest.mark.parametrize("shape", [(100003,), (37, 1000)])
@pytest.mark.parametrize("descending", [False, True])
def test_sorts_and_topk(shape, descending):
    a = distinct(*shape)
    assert_same_gradient(lambda x: ppat.sort(x, descending),
                         lambda x: torch.sort(x, descending=descending, stable=True)[0], a)
    assert_same_gradient(lambda x: ppat.topk(x, 9, largest=not descending)[0],
                         lambda x: torch.topk(x, 9, largest=not descending)[0], a)


def test_sorts_and_topk_along_other_dimensions():
    a = distinct(300, 4, 40)
    for dim in (0, 1):
        assert_same_gradient(lambda x: ppat.sort(x, True, dim=dim),
                             lambda x: torch.sort(x, dim=dim, descending=True, stable=True)[0], a)
        assert_same_gradient(lambda x: ppat.topk(x, 3, dim)[0],
                             lambda x: torch.topk(x, 3, dim)[0], a)


def test_sort_of_a_bit_range_and_pairs():
    # Ties under the bit range: the stable order decides, as in the forward call.
    keys = rng.integers(0, 1 << 12, 30000).astype(np.int32)
    k = torch.from_numpy(keys).cuda()
    v = leaf(whole_numbers(30000))
    order = torch.from_numpy(np.argsort(keys >> 4, kind="stable")).cuda()
    upstream = torch.from_numpy(whole_numbers(30000)).cuda()
    sorted_values = ppat.sort_pairs(k, v, begin_bit=4)[1]
    (grad,) = torch.autograd.grad(sorted_values, v, upstream)
    expected = torch.zeros_like(upstream).index_add(0, order, upstream)
    assert torch.equal(grad, expected)

    f = distinct(30000)
    assert_same_gradient(lambda x: ppat.sort_pairs(x, v.detach())[0],
                         lambda x: torch.sort(x, stable=True)[0], f)


def test_calls_without_a_gradient_formula_say_so():
    x = leaf(whole_numbers(1000))
    keys = torch.arange(1000, device="cuda") // 10
    with pytest.raises(RuntimeError, match="op='sum'"):
        ppat.inclusive_scan(x, "max").sum().backward()
    with pytest.raises(RuntimeError, match="op='sum'"):
        ppat.reduce_by_key(keys, x, "min")[1].sum().backward()
    weights = leaf(np.abs(whole_numbers(1000)))
    with pytest.raises(RuntimeError, match="autograd"):
        ppat.histogram_even(x.detach(), 10, -50.0, 50.0, weights=weights).sum().backward()


def test_what_autograd_cannot_record_raises_before_it_runs():
    x = leaf(whole_numbers(64, 64))
    with pytest.raises(ValueError, match="requires grad"):
        ppat.transpose_inplace(x)
    with pytest.raises(ValueError, match="requires grad"):
        ppat.sort(x.view(-1), out=torch.empty(4096, dtype=torch.float64, device="cuda"))
    with torch.no_grad():  # no gradient wanted: the eager call, in place
        ppat.transpose_inplace(x)
    assert ppat.sort(x.detach().view(-1)).requires_grad is False


def test_compiled_gradients_match_eager():
    def loss(x):
        return (ppat.sort(x) * ppat.inclusive_scan(x)).sum() + ppat.topk(x, 5)[0].sum()

    a = distinct(4097)
    x = leaf(a)
    (eager,) = torch.autograd.grad(loss(x), x)
    torch._dynamo.reset()
    compiled = torch.compile(loss, fullgraph=True)
    (traced,) = torch.autograd.grad(compiled(x), x)
    assert torch.equal(eager, traced)


def test_torch_imported_after_ppat_still_records_gradients():
    # The operators are registered at the first call once torch is imported, before that
    # call decides its path: its gradient is not dropped.
    program = (
        "import ppat\n"
        "import torch\n"
        "x = torch.arange(1.0, 6.0, device='cuda', requires_grad=True)\n"
        "ppat.reduce(x * x).backward()\n"
        "assert torch.equal(x.grad, 2 * x.detach()), x.grad\n")
    subprocess.run([sys.executable, "-c", program], check=True, timeout=300)
