"""ppat from Python beside PyTorch and CuPy on the same arrays.

    python python/bench.py [--sizes 10,16,20,28] [--out DIR]

Each call is timed with CUDA events on the framework's current stream: a few calls to
warm up, then the median of many samples, a sample being the time of a run of back-to-back
calls divided by their number. At small sizes that time
is the call's cost as a Python program sees it: launch and host overhead included. At
large sizes a run is 4 calls, so that the host's work for a call overlaps the device's
work for the one before, as in a program that does not wait between calls. GB/s
counts the bytes a call must move (inputs read once, outputs written once); "% copy" is
against a device-to-device copy of the same bytes timed in the same run; "vs X" is X's time
over ppat's (above 1.00x: ppat is faster). Below 2^24, "binding" is the package's own time
a call: the Python call's time less that of the raw C++ binding given the same pointers and
outputs already allocated (reading the arrays, the checks, allocating the results). Writes
DIR/bench.json, and DIR/bench.png where matplotlib is installed.
"""

import argparse
import json
import os
import statistics
import sys
import warnings

import torch

# The folder of this script holds the package's sources, without the built module: the
# installed ppat is the one to measure.
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]

import ppat  # noqa: E402

try:
    import cupy
except ImportError:
    cupy = None


def time_call(fn, large: bool) -> float:
    """Median seconds a call."""
    calls = 4 if large else 50
    samples = 11 if large else 31
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(samples):
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e-3 / calls)
    return statistics.median(times)


def cupy_call(fn):
    """A CuPy call made on torch's current stream, so that the events time it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # cupy 14 renamed it
        stream = cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)

    def call():
        with stream:
            return fn()
    return call


def raw_calls(f32, matrix, tensor4, axes):
    """The raw bindings under the calls whose package time the bench reports, by case name:
    the same work as the Python call, its outputs allocated once."""
    raw = ppat._ppat
    n = f32.numel()
    device = f32.get_device()
    stream = torch.cuda.current_stream().cuda_stream
    keep = [torch.empty((), device="cuda"), torch.empty_like(f32),
            torch.empty(256, dtype=torch.int32, device="cuda")]
    x, total, scanned, counts = (t.data_ptr() for t in [f32] + keep)
    rows, cols = matrix.shape
    shape = list(tensor4.shape)
    return {
        "sum f32": lambda: raw.reduce(x, total, n, "float32", "sum", 0.0, device, stream),
        "cumsum f32": lambda: raw.scan(x, scanned, n, "float32", False, "sum", 0.0, device,
                                       stream),
        "histc f32 256 bins": lambda: raw.histogram_even(x, n, "float32", counts, "int32", 256,
                                                         "float32", 0.0, 1.0, device, stream),
        f"transpose f32 {(rows, cols)}": lambda: raw.transpose(x, scanned, 1, rows, cols, 4,
                                                               device, stream),
        f"permute f32 {tuple(shape)} {axes}": lambda: raw.permute(x, scanned, shape, list(axes),
                                                                  4, device, stream),
        "sort f32": lambda: raw.sort(x, scanned, 0, 0, n, n, "float32", 0, False, 0, 32, device,
                                     stream),
        "_keep": keep,  # the outputs' memory, alive as long as the calls
    }


def cases(log2: int, raw: dict):
    """(name, bytes moved, ppat call, {peer: call}) at 2^log2 items; fills ``raw`` with the
    raw binding calls of some of them (raw_calls)."""
    n = 1 << log2
    g = torch.Generator(device="cuda").manual_seed(log2)
    f32 = torch.rand(n, device="cuda", generator=g)
    i32 = torch.randint(-(1 << 31), (1 << 31) - 1, (n,), device="cuda", dtype=torch.int32,
                        generator=g)
    mask = torch.rand(n, device="cuda", generator=g) < 0.5
    side = 1 << (log2 // 2)
    matrix = f32.view(side, n // side)
    d = 1 << (log2 // 4)
    tensor4 = f32.view(d, d, d, n // (d * d * d))
    axes = (0, 2, 3, 1)
    c = cupy.asarray(f32) if cupy is not None else None
    cmask = cupy.asarray(mask) if cupy is not None else None
    c4 = c.reshape(tensor4.shape) if c is not None else None
    cmatrix = c.reshape(matrix.shape) if c is not None else None
    selected = int(mask.sum())
    raw.update(raw_calls(f32, matrix, tensor4, axes))

    def with_cupy(peers, name, fn):
        if cupy is not None:
            peers[name] = cupy_call(fn)
        return peers

    yield ("sort f32", 8 * n, lambda: ppat.sort(f32),
           with_cupy({"torch.sort": lambda: torch.sort(f32, stable=True)}, "cupy.sort",
                     lambda: cupy.sort(c)))
    yield ("sort i32", 8 * n, lambda: ppat.sort(i32),
           {"torch.sort": lambda: torch.sort(i32, stable=True)})
    # int64 positions (below 2^24): the high bytes never vary, and ppat skips their passes.
    positions = torch.randint(0, 1 << 24, (n,), device="cuda", dtype=torch.int64, generator=g)
    yield ("sort i64 below 2^24", 16 * n, lambda: ppat.sort(positions),
           {"torch.sort": lambda: torch.sort(positions, stable=True)})
    yield (f"sort f32 {tuple(matrix.shape)} dim=0", 8 * n, lambda: ppat.sort(matrix, dim=0),
           {"torch.sort(dim=0)": lambda: torch.sort(matrix, dim=0, stable=True)})
    yield ("argsort f32", 4 * n + 8 * n, lambda: ppat.argsort(f32),
           with_cupy({"torch.argsort": lambda: torch.argsort(f32, stable=True)}, "cupy.argsort",
                     lambda: cupy.argsort(c)))
    yield ("cumsum f32", 8 * n, lambda: ppat.inclusive_scan(f32),
           with_cupy({"torch.cumsum": lambda: torch.cumsum(f32, 0)}, "cupy.cumsum",
                     lambda: cupy.cumsum(c)))
    yield ("cumsum i32", 8 * n, lambda: ppat.inclusive_scan(i32),
           {"torch.cumsum": lambda: torch.cumsum(i32, 0, dtype=torch.int32)})
    yield ("sum f32", 4 * n, lambda: ppat.reduce(f32),
           with_cupy({"torch.sum": lambda: torch.sum(f32)}, "cupy.sum", lambda: cupy.sum(c)))
    yield ("histc f32 256 bins", 4 * n, lambda: ppat.histogram_even(f32, 256, 0.0, 1.0,
                                                                     dtype="int32"),
           with_cupy({"torch.histc": lambda: torch.histc(f32, 256, 0.0, 1.0)},
                     "cupy.histogram", lambda: cupy.histogram(c, 256, (0.0, 1.0))))
    yield (f"transpose f32 {tuple(matrix.shape)}", 8 * n, lambda: ppat.transpose(matrix),
           with_cupy({"torch .t().contiguous()": lambda: matrix.t().contiguous()},
                     "cupy.ascontiguousarray(.T)", lambda: cupy.ascontiguousarray(cmatrix.T)))
    yield (f"permute f32 {tuple(tensor4.shape)} {axes}", 8 * n,
           lambda: ppat.permute(tensor4, axes),
           with_cupy({"torch .permute().contiguous()":
                      lambda: tensor4.permute(axes).contiguous()},
                     "cupy.ascontiguousarray(.transpose)",
                     lambda: cupy.ascontiguousarray(c4.transpose(axes))))
    yield ("masked_select f32", 4 * n + n + 4 * selected, lambda: ppat.select(f32, mask),
           with_cupy({"torch.masked_select": lambda: torch.masked_select(f32, mask)},
                     "cupy x[mask]", lambda: c[cmask]))
    # Rows of logits (a vocabulary of 32,768), and segments of 1,000 by offsets.
    cols = min(n, 1 << 15)
    logits = f32.view(n // cols, cols)
    clogits = c.reshape(logits.shape) if c is not None else None
    yield (f"topk f32 {tuple(logits.shape)} k=50", 4 * n, lambda: ppat.topk(logits, 50),
           {"torch.topk": lambda: torch.topk(logits, 50)})
    yield (f"sort f32 rows {tuple(logits.shape)}", 8 * n, lambda: ppat.sort(logits),
           with_cupy({"torch.sort(dim=-1)": lambda: torch.sort(logits, stable=True)},
                     "cupy.sort(axis=-1)", lambda: cupy.sort(clogits)))
    yield (f"argsort f32 rows {tuple(logits.shape)}", 4 * n + 8 * n,
           lambda: ppat.argsort(logits),
           {"torch.argsort(dim=-1)": lambda: torch.argsort(logits, stable=True)})
    top = min(n, 1000)
    yield (f"topk f32 k={top}", 4 * n, lambda: ppat.topk(f32, top),
           {"torch.topk": lambda: torch.topk(f32, top)})
    if log2 >= 24:
        # Issue 39's shapes: rows of logits of LLM vocabularies, and many short rows (MoE).
        for rows, cols, k in ((64, 131072, 50), (64, 131072, 1024), (256, 152064, 50),
                              (256, 152064, 1024), (65536, 1024, 8)):
            x = torch.randn(rows, cols, device="cuda")
            yield (f"topk f32 {(rows, cols)} k={k}", 4 * rows * cols,
                   lambda x=x, k=k: ppat.topk(x, k), {"torch.topk": lambda x=x, k=k: torch.topk(x, k)})
    offsets = torch.arange(0, n + 1000, 1000, device="cuda").clamp_(max=n)
    yield ("segment_reduce f32, segments of 1000", 4 * n, lambda: ppat.segment_reduce(f32, offsets),
           {"torch.segment_reduce": lambda: torch.segment_reduce(f32, "sum", offsets=offsets)})


def copy_seconds(nbytes: int) -> float:
    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    return time_call(lambda: dst.copy_(src), True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,16,20,28",
                        help="log2 of the sizes, comma-separated (each at least 8)")
    parser.add_argument("--out", default=".", help="folder for bench.json and bench.png")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)

    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, "
          f"cupy {cupy.__version__ if cupy else 'absent'}")
    try:
        import cuda.compute  # noqa: F401

        print("cuda.compute is installed; ppat's bench does not call it yet")
    except ImportError:
        print("cuda.compute is not installed: no cuda.compute column")
    rows = []
    for log2 in (int(size) for size in args.sizes.split(",")):
        large = log2 >= 24
        # Seconds a byte moved: a copy of B bytes reads B and writes B.
        per_copy = copy_seconds(8 << log2) / (2 * (8 << log2)) if large else None
        print(f"\n2^{log2} items" + (" (times a call, back to back)" if not large else ""))
        print(f"{'call':44} {'ppat us':>9} {'GB/s':>7} {'% copy':>7}   peers: time, ppat vs peer")
        raw_calls_by_name = {}
        for name, nbytes, call, peers in cases(log2, raw_calls_by_name):
            raw = raw_calls_by_name.get(name)
            seconds = time_call(call, large)
            row = {"call": name, "log2": log2, "ppat_us": seconds * 1e6,
                   "gbps": nbytes / seconds / 1e9, "peers": {}}
            if per_copy is not None:
                row["percent_copy"] = 100 * per_copy * nbytes / seconds
            if raw is not None and not large:
                row["binding_us"] = (seconds - time_call(raw, large)) * 1e6
            for peer, peer_call in peers.items():
                peer_seconds = time_call(peer_call, large)
                row["peers"][peer] = {"us": peer_seconds * 1e6, "ratio": peer_seconds / seconds}
            rows.append(row)
            copy_text = f"{row['percent_copy']:6.1f}%" if per_copy is not None else "      -"
            peer_text = "  ".join(f"{p} {v['us']:.1f} us {v['ratio']:.2f}x"
                                  for p, v in row["peers"].items())
            if "binding_us" in row:
                peer_text += f"  (binding {row['binding_us']:.1f} us)"
            print(f"{name:44} {seconds * 1e6:9.1f} {row['gbps']:7.0f} {copy_text}   {peer_text}")
            sys.stdout.flush()
            torch.cuda.empty_cache()
    with open(os.path.join(args.out, "bench.json"), "w") as f:
        json.dump(rows, f, indent=1)
    chart(rows, os.path.join(args.out, "bench.png"))


def chart(rows, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no chart")
        return
    sizes = sorted({r["log2"] for r in rows})
    fig, axes = plt.subplots(1, len(sizes), figsize=(7 * len(sizes), 6), squeeze=False)
    for ax, log2 in zip(axes[0], sizes):
        here = [r for r in rows if r["log2"] == log2]
        labels = [r["call"] for r in here]
        best = [max(v["ratio"] for v in r["peers"].values()) for r in here]
        worst = [min(v["ratio"] for v in r["peers"].values()) for r in here]
        y = range(len(here))
        ax.barh([i + 0.2 for i in y], best, height=0.4, label="vs the slowest peer")
        ax.barh([i - 0.2 for i in y], worst, height=0.4, label="vs the fastest peer")
        ax.axvline(1.0, color="black", linewidth=1)
        ax.set_yticks(list(y))
        ax.set_yticklabels(labels, fontsize=8)
        ax.set_xscale("log")
        ax.set_xlabel("peer time / ppat time (above 1: ppat faster)")
        ax.set_title(f"ppat from Python, 2^{log2} items")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"chart: {path}")


if __name__ == "__main__":
    main()
