#!/usr/bin/env python3
"""Draw `ppat bench --json` output as PNG charts: one per pattern.

Scan and histogram: throughput (GB/s of bytes that must move) against item count, one
panel per case, one line per variant, the device copy of the same bytes dashed.
Transpose: one panel per element type, one group of bars per shape.

    python3 scripts/plot.py bench.json --out docs/img
"""
import argparse
import json
import math
import os
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


def line_panel(ax, rows, title, colors):
    by_variant = group(rows, lambda r: r["variant"])
    for variant, points in by_variant.items():
        points = [p for p in points if p["gbps"] is not None]
        if not points:
            continue
        xs = [math.log2(p["n"]) for p in points]
        ys = [p["gbps"] for p in points]
        ax.plot(xs, ys, marker="o", markersize=3, label=variant.replace("textbook::", ""),
                **style_of(variant, colors))
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("log2(items)")
    ax.set_ylabel("GB/s")
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
    for pattern, pattern_rows in group(rows, lambda r: r["pattern"]).items():
        by_panel = group(pattern_rows, lambda r: r["case"])
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
                line_panel(ax, case_rows, f"{pattern}: {case}", colors)
        for ax in list(axes.flat)[len(by_panel):]:
            ax.axis("off")
        fig.suptitle(f"ppat bench on {device}: {pattern}", fontsize=11)
        fig.tight_layout()
        path = os.path.join(args.out, f"{pattern}.png")
        fig.savefig(path, dpi=110)
        print(path)


if __name__ == "__main__":
    main()
