"""ppat's Python package against NumPy references, on PyTorch and CuPy arrays.

Fresh random inputs every run (the seed is printed on failure through the test id's
random draw), outputs poisoned where the caller passes them, every element compared:
exactly for integers, and for floating point with integer-valued samples whose sums are
exact, so that a wrong answer cannot pass.
"""

import os

import numpy as np
import pytest

import ppat

frameworks = []
try:
    import torch

    if torch.cuda.is_available():
        frameworks.append("torch")
except ImportError:
    torch = None
try:
    import cupy

    if cupy.cuda.runtime.getDeviceCount() > 0:
        frameworks.append("cupy")
except Exception:
    cupy = None

pytestmark = pytest.mark.skipif(not frameworks, reason="no CUDA device with PyTorch or CuPy")

rng = np.random.default_rng(int.from_bytes(os.urandom(8), "little"))

SIZES = [0, 1, 2, 31, 1000, 4097, 65537, (1 << 20) + 3]
INTS = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]
NUMBERS = INTS + ["float32", "float64"]
SIGNED_OF = {"uint16": "int16", "uint32": "int32", "uint64": "int64"}


# ---- Arrays on the device and back -----------------------------------------------------------


def device(a: np.ndarray, fw: str):
    a = np.ascontiguousarray(a)
    if fw == "cupy":
        return cupy.asarray(a)
    name = a.dtype.name
    if name in SIGNED_OF:  # torch's unsigned wide types come through their signed views
        t = torch.from_numpy(a.view(SIGNED_OF[name])).cuda()
        return t.view(getattr(torch, name))
    return torch.from_numpy(a).cuda()


def host(x) -> np.ndarray:
    if cupy is not None and isinstance(x, cupy.ndarray):
        return cupy.asnumpy(x)
    if x.dtype == torch.bfloat16:
        return x.view(torch.int16).cpu().numpy().view(np.uint16)
    for name, signed in SIGNED_OF.items():
        if x.dtype == getattr(torch, name):
            return x.view(getattr(torch, signed)).cpu().numpy().view(name)
    return x.cpu().numpy()


def framework_of(x) -> str:
    return "cupy" if cupy is not None and isinstance(x, cupy.ndarray) else "torch"


def poisoned(shape, dtype, fw):
    """An output buffer full of a pattern no correct result leaves everywhere."""
    a = np.frombuffer(rng.bytes(int(np.prod(shape)) * np.dtype(dtype).itemsize),
                      dtype=np.uint8).copy().view(dtype).reshape(shape)
    return device(a, fw)


def random_numbers(n, dtype, low=None, high=None):
    """Random values of dtype; floating point ones integer-valued so sums stay exact."""
    if dtype.startswith("float"):
        low = -8 if low is None else low
        high = 8 if high is None else high
        return rng.integers(low, high, n).astype(dtype)
    info = np.iinfo(dtype)
    low = info.min if low is None else low
    high = info.max if high is None else high
    return rng.integers(low, high, n, dtype=dtype, endpoint=True)


def synchronize():
    if "torch" in frameworks:
        torch.cuda.synchronize()
    if "cupy" in frameworks:
        cupy.cuda.Device().synchronize()


# ---- Scans and reductions --------------------------------------------------------------------


def reference_scan(x, op, exclusive, init):
    if x.size == 0:
        return x.copy()
    if op == "sum":
        with np.errstate(over="ignore"):
            body = np.cumsum(x, dtype=x.dtype)
    else:
        body = (np.minimum if op == "min" else np.maximum).accumulate(x)
    if not exclusive:
        return body
    combined = np.empty_like(x)
    combined[0] = init
    with np.errstate(over="ignore"):
        if op == "sum":
            combined[1:] = (body[:-1] + x.dtype.type(init)).astype(x.dtype)
        else:
            f = np.minimum if op == "min" else np.maximum
            combined[1:] = f(body[:-1], x.dtype.type(init))
    return combined


@pytest.mark.parametrize("fw", frameworks)
@pytest.mark.parametrize("dtype", NUMBERS)
@pytest.mark.parametrize("op", ["sum", "min", "max"])
@pytest.mark.parametrize("n", SIZES)
def test_scans(fw, dtype, op, n):
    x = random_numbers(n, dtype)
    d = device(x, fw)
    inclusive = ppat.inclusive_scan(d, op)
    assert framework_of(inclusive) == fw
    np.testing.assert_array_equal(host(inclusive), reference_scan(x, op, False, None))
    init = random_numbers(1, dtype)[0].item()
    out = poisoned((n,), dtype, fw)
    exclusive = ppat.exclusive_scan(d, init, op, out=out)
    assert exclusive is out
    np.testing.assert_array_equal(host(exclusive), reference_scan(x, op, True, init))


@pytest.mark.parametrize("fw", frameworks)
def test_scan_in_place_and_shapes(fw):
    x = random_numbers(3 * 1001, "int32").reshape(3, 1001)
    d = device(x, fw)
    result = ppat.inclusive_scan(d, out=d)
    assert result is d and tuple(result.shape) == (3, 1001)
    np.testing.assert_array_equal(host(d), reference_scan(x.reshape(-1), "sum", False, 0)
                                  .reshape(3, 1001))


@pytest.mark.parametrize("fw", frameworks)
@pytest.mark.parametrize("dtype,bound", [("float32", 0.25), ("float64", 1e-6)])
def test_scan_fractions_within_rounding(fw, dtype, bound):
    # Elements of at least 0.5: a scan that drops or repeats one is off by 0.5 or more,
    # while rounding moves no prefix of 20011 of them by the bound.
    x = (rng.random(20011) + 0.5).astype(dtype)
    result = host(ppat.inclusive_scan(device(x, fw))).astype(np.float64)
    assert np.max(np.abs(result - np.cumsum(x.astype(np.float64)))) < bound


def runs_of(n, mean_run=40):
    """Keys in runs of random lengths (a run may follow an equal-keyed one only through a
    different key in between)."""
    lengths = rng.integers(1, 2 * mean_run, n // mean_run + 2)
    lengths[-1] += max(0, n - int(lengths.sum()))
    return np.repeat(np.arange(lengths.size) % 7 + rng.integers(0, 3), lengths)[:n]


def reference_scan_by_key(keys, x, op, exclusive, init):
    out = np.empty_like(x)
    if x.size == 0:
        return out
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    ends = np.r_[starts[1:], x.size]
    for s, e in zip(starts, ends):
        out[s:e] = reference_scan(x[s:e], op, exclusive, init)
    return out


@pytest.mark.parametrize("fw", frameworks)
@pytest.mark.parametrize("key_dtype", ["int32", "int64"])
@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float64"])
@pytest.mark.parametrize("op", ["sum", "min", "max"])
@pytest.mark.parametrize("n", [0, 1, 1000, 65537])
def test_scans_by_key(fw, key_dtype, dtype, op, n):
    keys = runs_of(n).astype(key_dtype)
    x = random_numbers(n, dtype, -1000, 1000)
    dk, dx = device(keys, fw), device(x, fw)
    np.testing.assert_array_equal(host(ppat.inclusive_scan_by_key(dk, dx, op)),
                                  reference_scan_by_key(keys, x, op, False, None))
    init = 5
    np.testing.assert_array_equal(host(ppat.exclusive_scan_by_key(dk, dx, init, op)),
                                  reference_scan_by_key(keys, x, op, True, init))


@pytest.mark.parametrize("fw", frameworks)
@pytest.mark.parametrize("dtype", NUMBERS)
@pytest.mark.parametrize("op", ["sum", "min", "max"])
@pytest.mark.parametrize("n", SIZES)
def test_reduce(fw, dtype, op, n):
    x = random_numbers(n, dtype)
    result = ppat.reduce(device(x, fw), op=op)
    assert tuple(result.shape) == ()
    if op == "sum":
        with np.errstate(over="ignore"):
            expected = np.sum(x, dtype=x.dtype)
    elif n == 0:
        expected = ppat._identity(op, dtype, "")
    else:
        expected = x.min() if op == "min" else x.max()
    assert host(result)[()] == np.array(expected).astype(dtype)
    init = random_numbers(1, dtype)[0].item()
    with np.errstate(over="ignore"):
        if op == "sum":
            expected = (np.array(expected, dtype=dtype) + np.array(init, dtype=dtype))
        else:
            expected = (min if op == "min" else max)(expected, init) if n else init
    assert host(ppat.reduce(device(x, fw), init, op))[()] == np.array(expected).astype(dtype)


# ---- Histograms ------------------------------------------------------------------------------


@pytest.mark.parametrize("fw", frameworks)
@pytest.mark.parametrize("dtype", NUMBERS)
@pytest.mark.parametrize("counter", ["int32", "int64"])
@pytest.mark.parametrize("n", [0, 1, 4097, (1 << 20) + 3])
def test_histogram_even(fw, dtype, counter, n):
    if dtype.startswith("float"):
        bins = int(rng.integers(1, 300))
        lower, width = -1.5, 0.25
        upper = lower + bins * width
        # Mid-bin samples, and samples outside: below, at upper, NaN, infinities.
        b = rng.integers(-3, bins + 3, n)
        x = (lower + (b + 0.5) * width).astype(dtype)
        special = np.array([upper, np.nan, np.inf, -np.inf, lower], dtype=dtype)
        x[: min(n, 5)] = special[: min(n, 5)]
        keep = (x >= lower) & (x < upper)
        expected = np.bincount(((x[keep].astype(np.float64) - lower) / width).astype(np.int64),
                               minlength=bins)
    else:
        info = np.iinfo(dtype)
        bins = int(rng.integers(1, min(300, (int(info.max) - int(info.min)) // 2)))
        lower = int(rng.integers(max(info.min, -1000), min(info.max - bins, 1000) + 1))
        span = int(rng.integers(bins, 4 * bins + 1))
        upper = min(lower + span, int(info.max))
        x = random_numbers(n, dtype, max(info.min, lower - 10), min(info.max, upper + 10))
        xi = x.astype(object) if dtype == "uint64" else x.astype(np.int64)
        keep = (xi >= lower) & (xi < upper)
        offsets = (np.array(xi[keep], dtype=np.int64) - lower)
        expected = np.bincount(offsets * bins // (upper - lower), minlength=bins)
    out = poisoned((bins,), counter, fw)
    hist = ppat.histogram_even(device(x, fw), bins, lower, upper, dtype=counter, out=out)
    assert hist is out
    np.testing.assert_array_equal(host(hist), expected[:bins])


@pytest.mark.parametrize("fw", frameworks)
@pytest.mark.parametrize("dtype", ["uint8", "int32", "float32", "float64"])
@pytest.mark.parametrize("weight_dtype", ["float32", "float64"])
def test_histogram_even_weighted(fw, dtype, weight_dtype):
    n, bins = 100003, 37
    x = random_numbers(n, dtype, 0, 100)
    w = random_numbers(n, weight_dtype, -4, 4)
    keep = (x >= 0) & (x < 74)
    expected = np.bincount((x[keep].astype(np.int64) * bins // 74), weights=w[keep],
                           minlength=bins)
    hist = ppat.histogram_even(device(x, fw), bins, 0, 74, weights=device(w, fw))
    assert host(hist).dtype == np.dtype(weight_dtype)
    np.testing.assert_array_equal(host(hist), expected.astype(weight_dtype))


@pytest.mark.parametrize("fw", frameworks)
@pytest.mark.parametrize("dtype", NUMBERS)
@pytest.mark.parametrize("n", [0, 1, 65537])
def test_histogram_range(fw, dtype, n):
    levels = np.unique(random_numbers(40, dtype, 0, 100))
    x = random_numbers(n, dtype, 0, 110)
    expected = np.zeros(levels.size - 1, dtype=np.int64)
    b = np.searchsorted(levels, x, side="right") - 1
    keep = (b >= 0) & (b < levels.size - 1)
    np.add.at(expected, b[keep], 1)
    hist = ppat.histogram_range(device(x, fw), device(levels, fw), dtype="int32")
    np.testing.assert_array_equal(host(hist), expected)


# ---- Transposes and permutes -----------------------------------------------------------------

ITEM_DTYPES = ["uint8", "int16", "float32", "float64", "complex128"]


@pytest.mark.parametrize("fw", frameworks)
@pytest.mark.parametrize("dtype", ITEM_DTYPES)
@pytest.mark.parametrize("shape", [(0, 5), (1, 1), (1, 1000), (1000, 1), (33, 65),
                                   (1025, 777), (3, 17, 129)])
def test_transpose(fw, dtype, shape):
    x = np.frombuffer(rng.bytes(int(np.prod(shape)) * np.dtype(dtype).itemsize),
                      dtype=dtype).copy().reshape(shape)
    result = ppat.transpose(device(x, fw))
    np.testing.assert_array_equal(np.ascontiguousarray(host(result)).view(np.uint8),
                                  np.ascontiguousarray(np.swapaxes(x, -1, -2)).view(np.uint8))


@pytest.mark.parametrize("fw", frameworks)
@pytest.mark.parametrize("side", [1, 31, 1000])
def test_transpose_inplace(fw, side):
    x = random_numbers(side * side, "int32").reshape(side, side)
    d = device(x, fw)
    assert ppat.transpose_inplace(d) is d
    np.testing.assert_array_equal(host(d), x.T)


@pytest.mark.parametrize("fw", frameworks)
@pytest.mark.parametrize("dtype", ["uint8", "int16", "float32", "int64"])
@pytest.mark.parametrize("shape,axes", [((7,), (0,)), ((4, 5, 6), (2, 0, 1)),
                                        ((64, 3, 65, 2), (0, 2, 1, 3)),
                                        ((2, 3, 4, 5, 6), (-1, 3, 0, 2, 1)),
                                        ((5, 0, 3), (1, 2, 0))])
def test_permute(fw, dtype, shape, axes):
    x = random_numbers(int(np.prod(shape)), dtype).reshape(shape)
    out = poisoned(tuple(shape[a] for a in axes), dtype, fw)
    result = ppat.permute(device(x, fw), axes, out=out)
    assert result is out
    np.testing.assert_array_equal(host(result), np.transpose(x, axes))


# ---- Selections and runs ---------------------------------------------------------------------


@pytest.mark.parametrize("fw", frameworks)
@pytest.mark.parametrize("dtype", ["uint8", "int16", "float32", "int64", "float64"])
@pytest.mark.parametrize("mask_dtype", ["bool", "uint8", "int32", "int64"])
@pytest.mark.parametrize("n", [0, 1, 4097, (1 << 20) + 3])
def test_select(fw, dtype, mask_dtype, n):
    x = random_numbers(n, dtype)
    mask = (rng.random(n) < rng.random()).astype(mask_dtype)
    if mask_dtype != "bool":
        mask *= rng.integers(1, 100, n).astype(mask_dtype)
    result = ppat.select(device(x, fw), device(mask, fw))
    np.testing.assert_array_equal(host(result), x[mask != 0])
    buffer, count = ppat.select(device(x, fw), device(mask, fw), trim=False)
    assert int(host(count)) == np.count_nonzero(mask)
    np.testing.assert_array_equal(host(buffer)[: int(host(count))], x[mask != 0])


COMPARISONS = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
               "==": np.equal, "!=": np.not_equal}


@pytest.mark.parametrize("fw", frameworks)
@pytest.mark.parametrize("dtype", NUMBERS)
@pytest.mark.parametrize("compare", list(COMPARISONS))
@pytest.mark.parametrize("n", [0, 1, 65537])
def test_select_if_and_partition(fw, dtype, compare, n):
    x = random_numbers(n, dtype, 0, 20)
    value = 9
    keep = COMPARISONS[compare](x, value)
    np.testing.assert_array_equal(host(ppat.select_if(device(x, fw), compare, value)), x[keep])
    out = poisoned((n,), dtype, fw)
    parted, count = ppat.partition(device(x, fw), compare, value, out=out)
    assert parted is out and int(host(count)) == np.count_nonzero(keep)
    np.testing.assert_array_equal(host(parted), np.concatenate([x[keep], x[~keep]]))


@pytest.mark.parametrize("fw", frameworks)
def test_out_beside_the_input_in_one_allocation(fw):
    # An ``out`` array holds its n elements: views of one allocation that do not overlap the
    # input are fine wherever they lie; one that does is rejected before any launch.
    x = random_numbers(3000, "int32")
    x[1000:2000] = runs_of(1000, 5).astype("int32")
    whole = device(x, fw)
    kept = ppat.select_if(whole[1000:2000], ">", 0, out=whole[:1000])
    part = x[1000:2000]
    np.testing.assert_array_equal(host(kept), part[part > 0])
    heads = np.r_[True, part[1:] != part[:-1]]
    np.testing.assert_array_equal(host(ppat.unique(whole[1000:2000], out=whole[2000:])),
                                  part[heads])
    mask = device(part % 3 == 0, fw)
    np.testing.assert_array_equal(host(ppat.select(whole[1000:2000], mask, out=whole[:1000])),
                                  part[part % 3 == 0])
    for out in (whole[500:1500], whole[1999:2999], whole[1000:2000]):
        with pytest.raises(ValueError, match="overlaps|not in place"):
            ppat.select_if(whole[1000:2000], ">", 0, out=out)
        with pytest.raises(ValueError, match="overlaps|not in place"):
            ppat.unique(whole[1000:2000], out=out)
    np.testing.assert_array_equal(host(whole[1000:2000]), part)


@pytest.mark.parametrize("fw", frameworks)
@pytest.mark.parametrize("dtype", NUMBERS)
@pytest.mark.parametrize("n", [0, 1, 1000, (1 << 20) + 3])
def test_unique_and_run_length_encode(fw, dtype, n):
    x = runs_of(n, 5).astype(dtype)
    if dtype.startswith("float") and n > 10:
        x[3], x[4], x[7], x[8] = -0.0, 0.0, np.nan, np.nan  # -0 == +0; NaN equals nothing
    heads = np.r_[True, x[1:] != x[:-1]] if n else np.zeros(0, bool)
    np.testing.assert_array_equal(host(ppat.unique(device(x, fw))), x[heads])
    values, lengths = ppat.run_length_encode(device(x, fw))
    starts = np.flatnonzero(heads)
    np.testing.assert_array_equal(host(values), x[heads])
    np.testing.assert_array_equal(host(lengths), np.diff(np.r_[starts, n]))


@pytest.mark.parametrize("fw", frameworks)
@pytest.mark.parametrize("key_dtype", ["int32", "int64"])
@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float64"])
@pytest.mark.parametrize("op", ["sum", "min", "max"])
@pytest.mark.parametrize("n", [0, 1, 65537])
def test_reduce_and_unique_by_key(fw, key_dtype, dtype, op, n):
    keys = runs_of(n).astype(key_dtype)
    values = random_numbers(n, dtype, -1000, 1000)
    heads = np.r_[True, keys[1:] != keys[:-1]] if n else np.zeros(0, bool)
    starts = np.flatnonzero(heads)
    ufunc = {"sum": np.add, "min": np.minimum, "max": np.maximum}[op]
    expected = ufunc.reduceat(values, starts) if n else values[:0]
    unique_keys, aggregates = ppat.reduce_by_key(device(keys, fw), device(values, fw), op)
    np.testing.assert_array_equal(host(unique_keys), keys[heads])
    np.testing.assert_array_equal(host(aggregates), expected)
    unique_keys, firsts = ppat.unique_by_key(device(keys, fw), device(values, fw))
    np.testing.assert_array_equal(host(unique_keys), keys[heads])
    np.testing.assert_array_equal(host(firsts), values[heads])


# ---- Sorts -----------------------------------------------------------------------------------

UNSIGNED_OF = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def order_image(bits: np.ndarray, dtype: str) -> np.ndarray:
    """The order-preserving unsigned image of keys given as their bits; every NaN last."""
    u = bits.view(UNSIGNED_OF[bits.itemsize])
    sign = u.dtype.type(1) << u.dtype.type(8 * u.itemsize - 1)
    if dtype.startswith("int"):
        return u ^ sign
    if dtype.startswith("uint"):
        return u
    image = np.where((u & sign) != 0, ~u, u | sign)
    exponent_bits = {"float16": 5, "bfloat16": 8, "float32": 8, "float64": 11}[dtype]
    mantissa_bits = 8 * u.itemsize - 1 - exponent_bits
    magnitude = u & ~sign
    inf = u.dtype.type(((1 << exponent_bits) - 1) << mantissa_bits)
    return np.where(magnitude > inf, np.iinfo(u.dtype).max, image).astype(u.dtype)


def random_keys(n, dtype):
    """Keys as bits (bfloat16 has no NumPy dtype), with ties, signed zeros and NaNs."""
    itemsize = 2 if dtype in ("float16", "bfloat16") else np.dtype(dtype).itemsize
    bits = np.frombuffer(rng.bytes(n * itemsize), dtype=UNSIGNED_OF[itemsize]).copy()
    if n > 8:
        bits[rng.integers(0, n, n // 4)] = bits[rng.integers(0, n, n // 4)]  # ties
    return bits


def keys_on_device(bits, dtype, fw):
    if dtype == "bfloat16":
        return torch.from_numpy(bits.view(np.int16)).cuda().view(torch.bfloat16)
    return device(bits.view(dtype), fw)


def key_bits(x) -> np.ndarray:
    h = host(x)
    return h.view(UNSIGNED_OF[h.itemsize])


SORT_KEYS = NUMBERS + ["float16", "bfloat16"]


@pytest.mark.parametrize("fw", frameworks)
@pytest.mark.parametrize("dtype", SORT_KEYS)
@pytest.mark.parametrize("n", SIZES + [(1 << 22) + 1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_and_argsort(fw, dtype, n, descending):
    if dtype == "bfloat16" and fw != "torch":
        pytest.skip("CuPy has no bfloat16")
    bits = random_keys(n, dtype)
    image = order_image(bits, dtype)
    # Stable in both directions: descending reverses the key classes, not the ties.
    order = np.argsort(~image if descending else image, kind="stable")
    d = keys_on_device(bits, dtype, fw)
    out = keys_on_device(random_keys(n, dtype), dtype, fw)
    result = ppat.sort(d, descending, out=out)
    assert result is out
    np.testing.assert_array_equal(key_bits(result), bits[order])
    out = poisoned((n,), "int64", fw)  # 4-byte positions widened: every int64 written
    indices = ppat.argsort(d, descending, out=out)
    assert indices is out
    np.testing.assert_array_equal(host(indices), order)


@pytest.mark.parametrize("fw", frameworks)
@pytest.mark.parametrize("key_dtype", ["uint8", "int32", "float32", "uint64", "float64"])
@pytest.mark.parametrize("value_dtype", ["int8", "int16", "float32", "int64", "complex128"])
@pytest.mark.parametrize("n", [0, 1, 4097, (1 << 20) + 3])
def test_sort_pairs(fw, key_dtype, value_dtype, n):
    bits = random_keys(n, key_dtype)
    order = np.argsort(order_image(bits, key_dtype), kind="stable")
    values = np.frombuffer(rng.bytes(n * np.dtype(value_dtype).itemsize),
                           dtype=value_dtype).copy()
    sorted_keys, sorted_values = ppat.sort_pairs(device(bits.view(key_dtype), fw),
                                                 device(values, fw))
    np.testing.assert_array_equal(key_bits(sorted_keys), bits[order])
    np.testing.assert_array_equal(host(sorted_values).view(np.uint8),
                                  values[order].view(np.uint8))


@pytest.mark.parametrize("fw", frameworks)
def test_sort_bit_range(fw):
    x = random_numbers(100003, "uint32")
    low_byte = ppat.sort(device(x, fw), begin_bit=0, end_bit=8)
    order = np.argsort(x & 0xFF, kind="stable")
    np.testing.assert_array_equal(host(low_byte), x[order])


# ---- Streams -------------------------------------------------------------------------------


@pytest.mark.skipif("torch" not in frameworks, reason="needs PyTorch")
def test_torch_current_stream_orders_the_call():
    x = random_numbers(1 << 24, "int32")
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        d = torch.from_numpy(x).cuda()
        d.add_(0)  # work on the side stream just before the sort
        result = ppat.sort(d)
    side.synchronize()
    np.testing.assert_array_equal(host(result), np.sort(x))


@pytest.mark.skipif("torch" not in frameworks, reason="needs PyTorch")
def test_explicit_stream():
    x = random_numbers((1 << 22) + 1, "int32")
    d = device(x, "torch")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    result = ppat.inclusive_scan(d, stream=side)
    result_int = ppat.reduce(d, stream=side.cuda_stream)
    side.synchronize()
    np.testing.assert_array_equal(host(result), reference_scan(x, "sum", False, 0))
    with np.errstate(over="ignore"):
        assert host(result_int)[()] == np.sum(x, dtype=np.int32)


@pytest.mark.skipif("cupy" not in frameworks, reason="needs CuPy")
def test_cupy_current_stream_orders_the_call():
    x = random_numbers(1 << 22, "float32")
    with cupy.cuda.Stream(non_blocking=True) as side:
        d = cupy.asarray(x)
        d *= 1
        result = ppat.sort(d)
    side.synchronize()
    np.testing.assert_array_equal(host(result), np.sort(x))


@pytest.mark.skipif("torch" not in frameworks, reason="needs PyTorch")
def test_captured_in_a_cuda_graph():
    # A call that synchronized would break the capture; these must not.
    x = random_numbers(1 << 20, "int64")
    d = device(x, "torch")
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        ppat.inclusive_scan(d)  # warm the pools outside the capture
        ppat.sort(d)
    stream.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        scanned = ppat.inclusive_scan(d)
        sorted_ = ppat.sort(d)
        selected, count = ppat.select_if(d, ">", 0, trim=False)
    d.copy_(torch.from_numpy(x[::-1].copy()).cuda())
    graph.replay()
    torch.cuda.synchronize()
    reversed_x = x[::-1]
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(host(scanned), np.cumsum(reversed_x))
    np.testing.assert_array_equal(host(sorted_), np.sort(x))
    assert int(host(count)) == np.count_nonzero(x > 0)
    np.testing.assert_array_equal(host(selected)[: int(host(count))],
                                  reversed_x[reversed_x > 0])



# ---- Along the last dimension: rows sorted, top-k, segments reduced --------------------------

ROW_SHAPES = [(1, 1), (3, 1), (7, 2049), (300, 37), (33, 1000), (2, 300007), (2, 3, 100)]


def row_order(bits, dtype, descending):
    """Each row's stable order (the last axis) of keys given as bits."""
    image = order_image(bits.reshape(-1), dtype).reshape(bits.shape)
    return np.argsort(~image if descending else image, axis=-1, kind="stable")


@pytest.mark.parametrize("fw", frameworks)
@pytest.mark.parametrize("dtype", SORT_KEYS)
@pytest.mark.parametrize("shape", ROW_SHAPES)
@pytest.mark.parametrize("descending", [False, True])
def test_sort_and_argsort_rows(fw, dtype, shape, descending):
    if dtype == "bfloat16" and fw != "torch":
        pytest.skip("CuPy has no bfloat16")
    bits = random_keys(int(np.prod(shape)), dtype).reshape(shape)
    order = row_order(bits, dtype, descending)
    d = keys_on_device(bits, dtype, fw)
    result = ppat.sort(d, descending)
    assert tuple(result.shape) == shape
    np.testing.assert_array_equal(key_bits(result), np.take_along_axis(bits, order, -1))
    np.testing.assert_array_equal(host(ppat.argsort(d, descending, dim=len(shape) - 1)), order)


@pytest.mark.parametrize("fw", frameworks)
@pytest.mark.parametrize("dtype", ["uint8", "int16", "int32", "uint64", "float16", "bfloat16",
                                   "float32", "float64"])
@pytest.mark.parametrize("shape", [(1,), (1000,), (65537,)] + ROW_SHAPES)
@pytest.mark.parametrize("largest", [True, False])
def test_topk(fw, dtype, shape, largest):
    if dtype == "bfloat16" and fw != "torch":
        pytest.skip("CuPy has no bfloat16")
    bits = random_keys(int(np.prod(shape)), dtype).reshape(shape)
    order = row_order(bits, dtype, largest)
    d = keys_on_device(bits, dtype, fw)
    cols = shape[-1]
    for k in sorted({0, 1, min(2, cols), cols // 2, min(100, cols), cols}):
        values, indices = ppat.topk(d, k, largest=largest)
        assert tuple(values.shape) == shape[:-1] + (k,) == tuple(indices.shape)
        np.testing.assert_array_equal(host(indices), order[..., :k])
        np.testing.assert_array_equal(key_bits(values),
                                      np.take_along_axis(bits, order[..., :k], -1))


def order_along(bits, dtype, descending, dim):
    """The stable order of the keys (given as bits) of each slice along dim."""
    return np.moveaxis(row_order(np.moveaxis(bits, dim, -1), dtype, descending), -1, dim)


@pytest.mark.parametrize("fw", frameworks)
@pytest.mark.parametrize("dtype", ["uint8", "int32", "uint64", "float16", "bfloat16",
                                   "float32", "float64"])
@pytest.mark.parametrize("shape", [(5, 7, 300), (1000, 3), (4, 1, 6), (2, 3, 1), (3, 0, 4)])
@pytest.mark.parametrize("descending", [False, True])
def test_sorts_and_topk_along_any_dimension(fw, dtype, shape, descending):
    # Dimensions other than the last gather their slices into rows and put the results
    # back; those whose later extents are all 1 are rows in memory already.
    if dtype == "bfloat16" and fw != "torch":
        pytest.skip("CuPy has no bfloat16")
    bits = random_keys(int(np.prod(shape)), dtype).reshape(shape)
    d = keys_on_device(bits, dtype, fw)
    for dim in range(-len(shape), len(shape)):
        order = order_along(bits, dtype, descending, dim)
        result = ppat.sort(d, descending, dim=dim)
        assert tuple(result.shape) == shape
        np.testing.assert_array_equal(key_bits(result), np.take_along_axis(bits, order, dim))
        out = poisoned(shape, "int64", fw)
        indices = ppat.argsort(d, descending, dim=dim, out=out)
        assert indices is out
        np.testing.assert_array_equal(host(indices), order)
        extent = shape[dim]
        for k in sorted({0, 1, extent // 2, extent} & set(range(extent + 1))):
            top = ppat.topk(d, k, dim, largest=descending)
            first = np.take(order, np.arange(k), axis=dim)
            expected_shape = shape[:dim % len(shape)] + (k,) + shape[dim % len(shape) + 1:]
            assert tuple(top.values.shape) == expected_shape == tuple(top.indices.shape)
            np.testing.assert_array_equal(host(top.indices), first)
            np.testing.assert_array_equal(key_bits(top.values),
                                          np.take_along_axis(bits, first, dim))
    np.testing.assert_array_equal(key_bits(d), bits)  # the input untouched


@pytest.mark.skipif("torch" not in frameworks, reason="needs PyTorch")
def test_along_a_dimension_on_another_stream(monkeypatch):
    # The gathered slices are scratch arrays freed when the call returns, while its work may
    # still wait on the side stream (held back here by a sleep). Allocated on the current
    # stream, the next array of their size allocated there would take one of them while the
    # side stream had yet to read it; allocated on the side stream, none does.
    x = random_numbers(64 * 4096, "float32").reshape(64, 4096)
    d = device(x, "torch")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.cuda._sleep(100_000_000)
    scratch = []
    allocate = ppat._empty

    def recorded(like, shape, dtype):
        array = allocate(like, shape, dtype)
        scratch.append((array.ptr, shape, dtype))
        return array

    monkeypatch.setattr(ppat, "_empty", recorded)
    results = [ppat.sort(d, dim=0, stream=side), ppat.argsort(d, True, dim=0, stream=side),
               ppat.topk(d, 10, dim=0, stream=side)]
    monkeypatch.undo()
    kept = {r.data_ptr() for r in (results[0], results[1], *results[2])}
    freed = [(ptr, shape, dtype) for ptr, shape, dtype in scratch if ptr not in kept]
    assert freed  # the gathered keys, indices and top-k results
    taken = [torch.empty(shape, dtype=getattr(torch, dtype), device="cuda")
             for _, shape, dtype in freed]
    assert not {t.data_ptr() for t in taken} & {ptr for ptr, _, _ in freed}
    side.synchronize()
    np.testing.assert_array_equal(host(results[0]),
                                  np.take_along_axis(x, np.argsort(x, 0, kind="stable"), 0))
    descending = np.argsort(-x, axis=0, kind="stable")
    np.testing.assert_array_equal(host(results[1]), descending)
    np.testing.assert_array_equal(host(results[2].indices), descending[:10])


@pytest.mark.skipif("torch" not in frameworks, reason="needs PyTorch")
def test_dimensions_match_torch():
    x = torch.randn(300, 5, 77, device="cuda")
    x[7, 2, 3] = float("nan")
    x[:50, 1, 10] = 0.25  # ties, to the lower index
    for dim in (0, 1, -1):
        for descending in (False, True):
            expected = torch.sort(x, dim=dim, descending=descending, stable=True)
            assert torch.equal(ppat.argsort(x, descending, dim=dim), expected.indices)
            assert torch.equal(ppat.sort(x, descending, dim=dim).nan_to_num(7.0),
                               expected.values.nan_to_num(7.0))
            top = ppat.topk(x, 4, dim, largest=descending)
            assert torch.equal(top.indices, expected.indices.narrow(dim, 0, 4))
            reference = torch.topk(x, 4, dim, largest=descending)
            assert torch.equal(top.values.nan_to_num(7.0), reference.values.nan_to_num(7.0))


@pytest.mark.skipif("torch" not in frameworks, reason="needs PyTorch")
def test_rows_match_torch():
    x = torch.randn(64, 5000, device="cuda")
    x[3, 17] = float("nan")
    x[5, :100] = 0.5  # ties, to the lower index as torch's stable sort puts them
    for descending in (False, True):
        expected = torch.sort(x, dim=-1, descending=descending, stable=True)
        assert torch.equal(ppat.argsort(x, descending), expected.indices)
        assert torch.equal(ppat.sort(x, descending).nan_to_num(7.0),
                           expected.values.nan_to_num(7.0))
        top = ppat.topk(x, 50, largest=descending)
        assert torch.equal(top.indices, expected.indices[:, :50])
        reference = torch.topk(x, 50, largest=descending)
        assert torch.equal(top.values.nan_to_num(7.0), reference.values.nan_to_num(7.0))


def reference_segments(x, offsets, op):
    """Each segment folded from the identity of op; one not within x (or no range) empty."""
    ufunc = {"sum": np.add, "min": np.minimum, "max": np.maximum}[op]
    if x.dtype.kind == "f":
        identity = {"sum": 0, "min": np.inf, "max": -np.inf}[op]
    else:
        info = np.iinfo(x.dtype)
        identity = {"sum": 0, "min": info.max, "max": info.min}[op]
    folded = np.full(len(offsets) - 1, identity, dtype=x.dtype)
    for i in range(len(offsets) - 1):
        begin, end = int(offsets[i]), int(offsets[i + 1])
        if 0 <= begin < end <= len(x):
            with np.errstate(over="ignore"):
                folded[i] = ufunc(ufunc.reduce(x[begin:end], dtype=x.dtype), folded[i])
    return folded


@pytest.mark.parametrize("fw", frameworks)
@pytest.mark.parametrize("dtype", NUMBERS)
@pytest.mark.parametrize("op", ["sum", "min", "max"])
@pytest.mark.parametrize("offset_dtype", ["int32", "int64"])
def test_segment_reduce(fw, dtype, op, offset_dtype):
    n = 100003
    x = random_numbers(n, dtype)
    lengths = rng.integers(0, 3000, n // 1000)
    offsets = np.minimum(np.concatenate([[0], np.cumsum(lengths)]), n)
    offsets = np.concatenate([offsets, [n, n + 5]]).astype(offset_dtype)  # the last past x
    result = ppat.segment_reduce(device(x, fw), device(offsets, fw), op)
    np.testing.assert_array_equal(host(result), reference_segments(x, offsets, op))


@pytest.mark.parametrize("fw", frameworks)
def test_segment_reduce_init_and_out(fw):
    x = random_numbers(5000, "int32", -1000, 1000)
    offsets = np.array([0, 10, 10, 4000, 5000], "int64")
    out = poisoned((4,), "int32", fw)
    result = ppat.segment_reduce(device(x, fw), device(offsets, fw), init=7, out=out)
    assert result is out
    np.testing.assert_array_equal(host(result), reference_segments(x, offsets, "sum") + 7)
    empty = ppat.segment_reduce(device(x, fw), device(np.array([3], "int64"), fw))
    assert tuple(empty.shape) == (0,)

# ---- Bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize("fw", frameworks)
def test_bad_input(fw):
    x = device(random_numbers(100, "int32"), fw)
    with pytest.raises(TypeError):
        ppat.sort([3, 1, 2])
    with pytest.raises(ValueError, match="CUDA"):
        ppat.sort(np.arange(10))  # NumPy's arrays speak DLPack, but on the host
    if fw == "torch":
        with pytest.raises(ValueError, match="CUDA"):
            ppat.inclusive_scan(torch.arange(10))
        with pytest.raises(TypeError):
            ppat.inclusive_scan(torch.zeros(10, dtype=torch.complex64, device="cuda"))
    with pytest.raises(ValueError, match="contiguous"):
        ppat.transpose(x.reshape(10, 10)[:, ::2])
    with pytest.raises(TypeError, match="bool"):
        ppat.inclusive_scan(device(np.zeros(4, dtype=bool), fw))
    with pytest.raises(ValueError, match="op"):
        ppat.inclusive_scan(x, "product")
    with pytest.raises(ValueError, match="fit"):
        ppat.exclusive_scan(x, 1 << 40)
    with pytest.raises(ValueError):
        ppat.histogram_even(x, 0, 0, 10)
    with pytest.raises(ValueError, match="greater"):
        ppat.histogram_even(x, 10, 5, 5)
    with pytest.raises(ValueError, match="greater"):
        ppat.histogram_even(device(np.ones(10, "float32"), fw), 10, 1.0, float("nan"))
    with pytest.raises(ValueError, match="begin_bit|end_bit"):
        ppat.sort(x, begin_bit=20, end_bit=10)
    with pytest.raises(ValueError, match="end_bit"):
        ppat.sort(x, end_bit=33)
    with pytest.raises(ValueError, match="1-d"):
        ppat.sort(x.reshape(10, 10), end_bit=16)
    with pytest.raises(ValueError, match="dimension"):
        ppat.sort(x.reshape(10, 10), dim=2)
    with pytest.raises(ValueError, match="dimension"):
        ppat.topk(x.reshape(10, 10), 3, dim=-3)
    with pytest.raises(ValueError, match="dimension"):
        ppat.argsort(x, dim=1)
    with pytest.raises(ValueError, match="between"):
        ppat.topk(x.reshape(10, 10), 11)
    with pytest.raises(TypeError, match="integer"):
        ppat.topk(x, 2.5)
    with pytest.raises(ValueError, match="at least one"):
        ppat.segment_reduce(x, device(np.zeros(0, "int64"), fw))
    with pytest.raises(TypeError):
        ppat.segment_reduce(x, device(np.zeros(3, "float32"), fw))
    with pytest.raises(ValueError, match="1-d"):
        ppat.segment_reduce(x.reshape(10, 10), device(np.zeros(3, "int64"), fw))
    with pytest.raises(ValueError, match="shape"):
        ppat.select(x, device(np.ones(99, bool), fw))
    with pytest.raises(ValueError, match="shape"):
        ppat.inclusive_scan(x, out=device(np.zeros(99, "int32"), fw))
    with pytest.raises(ValueError, match="int32"):
        ppat.inclusive_scan(x, out=device(np.zeros(100, "int64"), fw))
    with pytest.raises(ValueError, match="not in place"):
        ppat.sort(x, out=x)
    with pytest.raises(ValueError, match="comparison"):
        ppat.select_if(x, "<>", 3)
    with pytest.raises(ValueError, match="permutation"):
        ppat.permute(x.reshape(10, 10), (0, 0))
    with pytest.raises(ValueError, match="shape"):
        ppat.sort_pairs(x, device(np.zeros(99, "int32"), fw))
    synchronize()


@pytest.mark.skipif("torch" not in frameworks, reason="needs PyTorch")
def test_cuda_failure_names_the_call():
    # Inputs that leave no memory for the sort's temporary storage: ppat's allocation fails
    # and surfaces as a RuntimeError naming the call, with nothing else disturbed.
    free, _ = torch.cuda.mem_get_info()
    n = int(free * 0.23) // 8
    buffers = [torch.empty(n, dtype=torch.int64, device="cuda") for _ in range(4)]
    try:
        with pytest.raises(RuntimeError, match="ppat"):
            ppat.sort_pairs(buffers[0], buffers[1], keys_out=buffers[2], values_out=buffers[3])
            torch.cuda.synchronize()
    finally:
        buffers = None
        torch.cuda.empty_cache()
    x = random_numbers(1000, "int32")
    np.testing.assert_array_equal(host(ppat.sort(device(x, "torch"))), np.sort(x))
