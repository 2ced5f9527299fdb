#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Draw the arbitration experiment (`make wrr`) as an SVG: foreground and background IOPS over
time, one panel per weight setting. Input: the guest console log with `# wrr <label> <t_ms>
<fg_iops> <bg_iops>` lines. Standard library only.

    scripts/wrr-plot.py console.log build/wrr.svg
"""
import sys
from collections import OrderedDict

W, H, PAD = 720, 260, 50


def panel(label, pts, y0, ymax, tmax):
    out = [f'<text x="{PAD}" y="{y0 + 18}" font-size="14">{label}</text>']
    x = lambda t: PAD + (W - 2 * PAD) * t / tmax
    y = lambda v: y0 + H - PAD + 10 - (H - 2 * PAD) * v / ymax
    out.append(f'<line x1="{PAD}" y1="{y(0)}" x2="{W - PAD}" y2="{y(0)}" stroke="black"/>')
    out.append(f'<line x1="{PAD}" y1="{y(0)}" x2="{PAD}" y2="{y(ymax)}" stroke="black"/>')
    for frac in (0, 0.5, 1):
        v = ymax * frac
        out.append(f'<text x="{PAD - 5}" y="{y(v) + 4}" font-size="10" text-anchor="end">{v:.0f}</text>')
    for s in range(0, int(tmax / 1000) + 1):
        out.append(f'<text x="{x(s * 1000)}" y="{y(0) + 14}" font-size="10" text-anchor="middle">{s}s</text>')
    for col, name, idx in (("#1f77b4", "foreground (core 0, high)", 1), ("#d62728", "background (cores 1-3, low)", 2)):
        line = " ".join(f"{x(p[0]):.1f},{y(p[idx]):.1f}" for p in pts)
        out.append(f'<polyline fill="none" stroke="{col}" stroke-width="2" points="{line}"/>')
        ly = y0 + 18 + 14 * idx
        out.append(f'<text x="{W - PAD}" y="{ly}" font-size="11" fill="{col}" text-anchor="end">{name} IOPS</text>')
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    runs = OrderedDict()
    with open(sys.argv[1], errors="replace") as f:
        for line in f:
            parts = line.split()
            if len(parts) == 6 and parts[0] == "#" and parts[1] == "wrr":
                runs.setdefault(parts[2], []).append(tuple(float(v) for v in parts[3:6]))
    if not runs:
        sys.exit("wrr-plot: no '# wrr' samples in " + sys.argv[1])
    ymax = max(max(p[1], p[2]) for pts in runs.values() for p in pts) * 1.1 or 1
    tmax = max(p[0] for pts in runs.values() for p in pts) or 1
    body = []
    for i, (label, pts) in enumerate(runs.items()):
        body += panel(label, pts, i * H, ymax, tmax)
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H * len(runs)}" font-family="sans-serif">',
           f'<rect width="100%" height="100%" fill="white"/>', *body, "</svg>"]
    with open(sys.argv[2], "w") as f:
        f.write("\n".join(svg) + "\n")
    print(sys.argv[2])


if __name__ == "__main__":
    main()
