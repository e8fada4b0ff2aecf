#!/usr/bin/env python3
"""Draw `ppat bench --json` output as PNG charts: one per pattern.

Scan, reduce, select and histogram: throughput (GB/s of bytes that must move) against item
count, one panel per case, one line per variant, the device copy of the same bytes dashed.
Sort: keys a second against item count, one panel per case, one line per variant (no copy:
a sort's passes are compared with CUB's, not with one pass's bytes).
Transpose: one panel per element type, one group of bars per shape.
A sweep (`ppat bench --sweep --json`): one heatmap per pattern, a row per case, a column
per size (transpose: per shape), each cell the speedup of the ppat call over its peer
(peer time / ppat time), red below 1.00x and green above.

    python3 scripts/plot.py bench.json --out docs/img
"""
import argparse
import json
import math
import os
import re
from collections import OrderedDict, defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def group(rows, key):
    groups = OrderedDict()
    for row in rows:
        groups.setdefault(key(row), []).append(row)
    return groups


def is_copy(variant):
    return variant.startswith("copy")


def style_of(variant, colors):
    if is_copy(variant):
        return dict(color="black", linestyle="--", linewidth=1)
    return dict(color=colors[variant])


def case_of(row):
    """A row's case, the same at every size: select's labels carry the share kept as
    measured, which moves a little with the size, so it is rounded to a whole percent
    (49.9% and 50.0% are one case, 5.0% another)."""
    return re.sub(r"\(([0-9.]+)% kept\)",
                  lambda kept: f"(about {round(float(kept.group(1)))}% kept)", row["case"])


def line_panel(ax, rows, title, colors, keys_per_second=False):
    by_variant = group(rows, lambda r: r["variant"])
    for variant, points in by_variant.items():
        if keys_per_second:
            points = [p for p in points if not is_copy(variant) and p["time_us"]]
            ys = [p["n"] / p["time_us"] / 1e3 for p in points]  # Gkeys/s
        else:
            points = [p for p in points if p["gbps"] is not None]
            ys = [p["gbps"] for p in points]
        if not points:
            continue
        xs = [math.log2(p["n"]) for p in points]
        ax.plot(xs, ys, marker="o", markersize=3, label=variant.replace("textbook::", ""),
                **style_of(variant, colors))
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("log2(items)")
    ax.set_ylabel("Gkeys/s" if keys_per_second else "GB/s")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6)


def bar_panel(ax, rows, title, colors):
    shapes = list(OrderedDict.fromkeys(r["shape"] for r in rows))
    variants = list(OrderedDict.fromkeys(r["variant"] for r in rows))
    width = 0.8 / max(len(variants), 1)
    for i, variant in enumerate(variants):
        values = defaultdict(float)
        for r in rows:
            if r["variant"] == variant and r["gbps"] is not None:
                values[r["shape"]] = r["gbps"]
        xs = [s + i * width for s in range(len(shapes))]
        color = "lightgray" if is_copy(variant) else colors[variant]
        ax.bar(xs, [values[s] for s in shapes], width, label=variant.replace("textbook::", ""),
               color=color)
    ax.set_xticks([s + 0.4 - width / 2 for s in range(len(shapes))])
    ax.set_xticklabels(shapes, rotation=30, fontsize=7, ha="right")
    ax.set_title(title, fontsize=9)
    ax.set_ylabel("GB/s")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=6)


def size_label(n):
    if n & (n - 1) == 0:
        return f"2^{n.bit_length() - 1}"
    return str(n)


def heatmap(rows, pattern, device, path):
    """One cell per (case, size or shape): the public call's speedup over its peer."""
    cells = [r for r in rows if r["variant"].startswith("ppat::") and r["vs_peer"] is not None]
    if not cells:
        return False
    row_of = lambda r: case_of(r) + ("" if r["peer"] != "copy" else "  [vs copy]")
    if pattern == "transpose":
        column_of = lambda r: r["shape"]
        columns = list(OrderedDict.fromkeys(column_of(r) for r in cells))
    else:
        column_of = lambda r: r["n"]
        columns = sorted(set(column_of(r) for r in cells))
    cases = list(OrderedDict.fromkeys(row_of(r) for r in cells))
    grid = [[math.nan] * len(columns) for _ in cases]
    for r in cells:
        grid[cases.index(row_of(r))][columns.index(column_of(r))] = r["vs_peer"]
    width = max(6.0, 0.55 * len(columns) + 4)
    height = max(2.5, 0.28 * len(cases) + 1.8)
    fig, ax = plt.subplots(figsize=(width, height))
    # Log colour scale centred on 1.00x: half and twice the peer's speed are equally far.
    norm = matplotlib.colors.LogNorm(vmin=0.25, vmax=4)
    image = ax.imshow(grid, cmap="RdYlGn", norm=norm, aspect="auto")
    for i, line in enumerate(grid):
        for j, value in enumerate(line):
            if not math.isnan(value):
                ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=5,
                        color="black" if 0.5 < value < 2 else "white")
    ax.set_xticks(range(len(columns)))
    ax.set_xticklabels([c if isinstance(c, str) else size_label(c) for c in columns],
                       rotation=60, ha="right", fontsize=6)
    ax.set_yticks(range(len(cases)))
    ax.set_yticklabels(cases, fontsize=6)
    fig.colorbar(image, ax=ax, label="speedup: peer time / ppat time")
    losses = sum(1 for r in cells if r["vs_peer"] < 1)
    ax.set_title(f"ppat bench --sweep on {device}: {pattern} ({losses} of {len(cells)} cells "
                 f"below 1.00x)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return True


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json", help="output of ppat bench --json")
    parser.add_argument("--out", default=".", help="folder for the PNG files")
    args = parser.parse_args()
    with open(args.json) as f:
        report = json.load(f)
    device = report["device"]["name"]
    os.makedirs(args.out, exist_ok=True)
    rows = [r for r in report["results"] if r["pattern"] != "overhead"]
    if report.get("sweep"):
        for pattern, pattern_rows in group(rows, lambda r: r["pattern"]).items():
            path = os.path.join(args.out, f"sweep-{pattern}.png")
            if heatmap(pattern_rows, pattern, device, path):
                print(path)
        return
    for pattern, pattern_rows in group(rows, lambda r: r["pattern"]).items():
        by_panel = group(pattern_rows, case_of)
        # One colour per variant across the panels; the baselines take the first.
        variants = OrderedDict.fromkeys(r["variant"] for r in pattern_rows if r["variant"] == r["baseline"])
        variants.update(OrderedDict.fromkeys(r["variant"] for r in pattern_rows))
        colors = {v: f"C{i}" for i, v in enumerate(v for v in variants if not is_copy(v))}
        columns = min(3, len(by_panel))
        lines = math.ceil(len(by_panel) / columns)
        fig, axes = plt.subplots(lines, columns, figsize=(5.5 * columns, 4 * lines), squeeze=False)
        for ax, (case, case_rows) in zip(axes.flat, by_panel.items()):
            if pattern == "transpose":
                bar_panel(ax, case_rows, f"{pattern} {case}", colors)
            else:
                line_panel(ax, case_rows, f"{pattern}: {case}", colors,
                           keys_per_second=pattern == "sort")
        for ax in list(axes.flat)[len(by_panel):]:
            ax.axis("off")
        fig.suptitle(f"ppat bench on {device}: {pattern}", fontsize=11)
        fig.tight_layout()
        path = os.path.join(args.out, f"{pattern}.png")
        fig.savefig(path, dpi=110)
        print(path)


if __name__ == "__main__":
    main()
