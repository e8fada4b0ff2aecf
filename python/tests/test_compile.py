"""ppat inside torch.compile: each call traced as its custom operator (torch.ops.ppat.*).

Every compiled function here is compiled with ``fullgraph=True``, so a graph break fails
the test; its results must equal eager ppat's bit for bit (the same kernels run) and a NumPy
reference. The operators themselves go through ``torch.library.opcheck``: schema, fake
implementation against the real kernel, and AOT dispatch with dynamic shapes.
"""

import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ppat  # noqa: E402

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available() or not hasattr(torch.library, "custom_op"),
    reason="needs a CUDA device and torch.library.custom_op (torch 2.4 or newer)")

rng = np.random.default_rng(int.from_bytes(os.urandom(8), "little"))


def on_device(a: np.ndarray):
    return torch.from_numpy(np.ascontiguousarray(a)).cuda()


def fresh_floats(n):
    """Integer-valued floats (sums exact), a random half of them with a fraction."""
    whole = rng.integers(-1000, 1000, n).astype(np.float32)
    return whole + (rng.random(n) < 0.5).astype(np.float32) * np.float32(0.25)


def assert_same(compiled, eager):
    """Equal shapes, dtypes and bits, through any nesting of tuples."""
    if isinstance(eager, (tuple, list)):
        assert type(compiled) is type(eager) and len(compiled) == len(eager)
        for c, e in zip(compiled, eager):
            assert_same(c, e)
        return
    assert compiled.dtype == eager.dtype and compiled.shape == eager.shape
    assert torch.equal(compiled, eager)


def compile_full(fn, **options):
    torch._dynamo.reset()
    return torch.compile(fn, fullgraph=True, **options)


# ---- The operators on their own ----------------------------------------------------------


OPCHECK_CASES = [
    "inclusive_scan", "exclusive_scan", "inclusive_scan_by_key", "exclusive_scan_by_key",
    "reduce", "segment_reduce", "histogram_even", "histogram_even weighted", "histogram_range",
    "transpose", "transpose_inplace", "permute", "select_untrimmed", "select_if_untrimmed",
    "partition", "unique_untrimmed", "run_length_encode_untrimmed", "unique_by_key_untrimmed",
    "reduce_by_key_untrimmed", "sort", "sort bits", "argsort", "sort_pairs", "topk", "topk dim0",
]


def opcheck_arguments(case):
    """Fresh arguments of one operator (the case's first word) for opcheck."""
    x = on_device(fresh_floats(5000))
    ints = on_device(rng.integers(-(1 << 30), 1 << 30, 5000, dtype=np.int32))
    keys = on_device(np.sort(rng.integers(0, 300, 5000)).astype(np.int32))
    return {
        "inclusive_scan": (ints, "sum"),
        "exclusive_scan": (ints, 5, "max"),
        "inclusive_scan_by_key": (keys, ints, "sum"),
        "exclusive_scan_by_key": (keys, ints, None, "min"),
        "reduce": (ints, None, "sum"),
        "segment_reduce": (x, on_device(np.array([0, 7, 7, 2500, 5000])), "max", None),
        "histogram_even": (x, 64, -1000.0, 1000.0, None, torch.int32),
        "histogram_even weighted": (x, 64, -1000.0, 1000.0, x.abs(), None),
        "histogram_range": (x, on_device(np.linspace(-1000, 1000, 17, dtype=np.float32)),
                            None),
        "transpose": (x.view(50, 100),),
        "transpose_inplace": (on_device(fresh_floats(33 * 33).reshape(33, 33)),),
        "permute": (x.view(5, 10, 100), [2, 0, 1]),
        "select_untrimmed": (x, x > 0),
        "select_if_untrimmed": (ints, "<", 17),
        "partition": (ints, ">=", 0),
        "unique_untrimmed": (keys,),
        "run_length_encode_untrimmed": (keys,),
        "unique_by_key_untrimmed": (keys, ints),
        "reduce_by_key_untrimmed": (keys, ints, "sum"),
        "sort": (x, True, -1, 0, None),
        "sort bits": (ints, False, -1, 4, 20),
        "argsort": (x.view(50, 100), False, -1),
        "sort_pairs": (x, ints, False, 0, None),
        "topk": (x.view(50, 100), 7, -1, True),
        "topk dim0": (x.view(50, 100), 7, 0, False),
    }[case]


# The untrimmed selections leave their outputs past the count unwritten, so an eager run and
# a traced one differ there: opcheck's AOT-dispatch test, which compares whole outputs, does
# not apply to them (their compiled use is tested below on the counted items).
WHOLE_OUTPUTS_UNSPECIFIED = ("test_schema", "test_autograd_registration", "test_faketensor")


@pytest.mark.parametrize("case", OPCHECK_CASES)
def test_operator_passes_opcheck(case):
    operator = getattr(torch.ops.ppat, case.split()[0]).default
    if case.endswith("_untrimmed"):
        torch.library.opcheck(operator, opcheck_arguments(case),
                              test_utils=WHOLE_OUTPUTS_UNSPECIFIED)
    else:
        torch.library.opcheck(operator, opcheck_arguments(case))


# ---- Compiled functions --------------------------------------------------------------------


def test_sort_scan_and_histogram_compile_without_a_break():
    def pipeline(x):
        ordered = ppat.sort(x)
        running = ppat.inclusive_scan(ordered)
        counts = ppat.histogram_even(x, 100, -1000, 1000)
        return ordered, running, counts, ppat.reduce(x, op="max")

    a = fresh_floats(100003)
    x = on_device(a)
    compiled = compile_full(pipeline)
    eager = pipeline(x)
    assert_same(compiled(x), eager)
    np.testing.assert_array_equal(eager[0].cpu().numpy(), np.sort(a))
    assert eager[2].sum().item() == a.size  # every sample inside [-1000, 1000)
    assert eager[3].item() == a.max()


def test_rows_topk_argsort_and_permute_compile_without_a_break():
    def rows(x):
        values, indices = ppat.topk(x, 5)
        order = ppat.argsort(x, descending=True)
        bottom, bottom_indices = ppat.topk(x, 3, 0, largest=False)
        return (values * 2, indices, order, ppat.transpose(x), ppat.permute(x, (1, 0)),
                ppat.sort(x, dim=0), bottom, bottom_indices)

    a = fresh_floats(37 * 1000).reshape(37, 1000)
    x = on_device(a)
    compiled = compile_full(rows)
    eager = rows(x)
    assert_same(compiled(x), eager)
    reference = np.argsort(-a, axis=1, kind="stable")
    np.testing.assert_array_equal(eager[2].cpu().numpy(), reference)
    np.testing.assert_array_equal(eager[1].cpu().numpy(), reference[:, :5])
    np.testing.assert_array_equal(eager[5].cpu().numpy(), np.sort(a, axis=0))
    np.testing.assert_array_equal(eager[7].cpu().numpy(),
                                  np.argsort(a, axis=0, kind="stable")[:3])


def test_compiled_calls_follow_new_shapes():
    def scan_and_sort(x):
        return ppat.exclusive_scan(x, 3), ppat.sort(x, descending=True)

    compiled = compile_full(scan_and_sort, dynamic=True)
    for n in (1000, 4097, 65537):
        a = rng.integers(-50, 50, n, dtype=np.int64)
        x = on_device(a)
        scanned, ordered = compiled(x)
        np.testing.assert_array_equal(scanned.cpu().numpy(),
                                      np.concatenate(([3], 3 + np.cumsum(a)[:-1])))
        np.testing.assert_array_equal(ordered.cpu().numpy(), np.sort(a)[::-1])


def test_in_place_transpose_compiles_as_a_mutation():
    def flip(x):
        ppat.transpose_inplace(x)
        return x + 1

    a = fresh_floats(64 * 64).reshape(64, 64)
    x = on_device(a)
    result = compile_full(flip)(x)
    np.testing.assert_array_equal(x.cpu().numpy(), a.T)
    np.testing.assert_array_equal(result.cpu().numpy(), a.T + 1)


def test_selections_have_data_dependent_lengths():
    # As torch.nonzero: tracing a length read from the data needs this setting.
    def selections(x, keys):
        kept = ppat.select_if(x, ">", 0)
        firsts = ppat.unique(keys)
        run_keys, run_sums = ppat.reduce_by_key(keys, x)
        buffer, count = ppat.select(x, x < 0, trim=False)
        return kept, firsts, run_keys, run_sums, buffer, count

    a = rng.integers(-100, 100, 20011).astype(np.int64)
    k = np.sort(rng.integers(0, 2000, 20011)).astype(np.int32)
    x, keys = on_device(a), on_device(k)
    with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True):
        compiled = compile_full(selections)
        result = compiled(x, keys)
    eager = selections(x, keys)
    assert_same(result[:4], eager[:4])
    count = int(result[5].item())
    assert count == int(eager[5].item()) == np.count_nonzero(a < 0)
    assert torch.equal(result[4][:count], eager[4][:count])
    np.testing.assert_array_equal(result[0].cpu().numpy(), a[a > 0])
    np.testing.assert_array_equal(result[1].cpu().numpy(), np.unique(k))


def test_compiled_under_cuda_graphs():
    # mode="reduce-overhead" replays a captured graph: the calls must be capturable.
    def pipeline(x):
        return ppat.inclusive_scan(ppat.sort(x)), ppat.histogram_even(x, 16, -1000, 1000)

    compiled = compile_full(pipeline, mode="reduce-overhead")
    for _ in range(3):  # warm-up, recording, then replays
        a = rng.integers(-1000, 1000, 1 << 18, dtype=np.int32)
        x = on_device(a)
        scanned, counts = compiled(x)
        np.testing.assert_array_equal(scanned.cpu().numpy(), np.cumsum(np.sort(a)))
        np.testing.assert_array_equal(counts.cpu().numpy(),
                                      np.bincount((a + 1000) * 16 // 2000, minlength=16))


@pytest.mark.skipif(not hasattr(torch.compiler, "_is_compiling_flag"),
                    reason="this torch keeps no compiling flag")
def test_eager_tensors_while_the_compiling_flag_is_set():
    # torch.export sets the flag behind torch.compiler.is_compiling(), and so do some
    # programs: ppat's calls then take their operators, whose kernels must run the eager
    # call (not the operator again).
    a = fresh_floats(5000)
    x = on_device(a)
    flag = torch.compiler._is_compiling_flag
    torch.compiler._is_compiling_flag = True
    try:
        ordered = ppat.sort(x)
        kept = ppat.select_if(x, ">", 0)
    finally:
        torch.compiler._is_compiling_flag = flag
    np.testing.assert_array_equal(ordered.cpu().numpy(), np.sort(a))
    np.testing.assert_array_equal(kept.cpu().numpy(), a[a > 0])


def test_exported_program_holds_the_operators():
    class Pipeline(torch.nn.Module):
        def forward(self, x):
            return ppat.inclusive_scan(ppat.sort(x)), ppat.topk(x, 3).indices

    a = rng.integers(-1000, 1000, 4097).astype(np.int64)
    x = on_device(a)
    program = torch.export.export(Pipeline(), (x,))
    targets = {str(node.target) for node in program.graph.nodes}
    assert {"ppat.sort.default", "ppat.inclusive_scan.default", "ppat.topk.default"} <= targets
    assert_same(program.module()(x), Pipeline()(x))
