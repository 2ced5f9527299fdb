#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Draw the arbitration experiment (`make wrr`) with the one Fig. 13 plot of the project
(scripts/figures_plot.py, matplotlib, the same figure `make figures` draws from fio's logs):
foreground and background IOPS over time, one panel per weight setting. Input: the guest
console log with `# wrr <label> <t_ms> <fg_iops> <bg_iops>` samples and the `wrr: <label>: ...`
summary lines of `dnvm-guest-lab wrr` (qemu/guest-lab/src/wrr.rs). Also writes the samples
and the shares as CSV next to the SVG (<name>-timeline.csv, <name>.csv).

    scripts/wrr-plot.py console.log build/wrr.svg
"""
import csv
import os
import re
import sys
from collections import OrderedDict

import figures_plot

# The guest's run labels as weights high:low.
LABELS = {"wrr-128-1": "128:1", "rr-1-1": "1:1"}
SUMMARY = re.compile(r"^wrr: (\S+): foreground solo (\d+) IOPS, during burst (\d+) IOPS \(([\d.]+)% of solo\), "
                     r"background (\d+) IOPS")


def parse(path):
    samples, shares = OrderedDict(), OrderedDict()
    with open(path, errors="replace") as f:
        for line in f:
            parts = line.split()
            if len(parts) == 6 and parts[0] == "#" and parts[1] == "wrr":
                label = LABELS.get(parts[2], parts[2])
                samples.setdefault(label, []).append([label] + [float(v) for v in parts[3:6]])
            m = SUMMARY.match(line.strip())
            if m:
                label = LABELS.get(m[1], m[1])
                shares[label] = [label, int(m[2]), int(m[3]), float(m[4]), int(m[5])]
    return samples, shares


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    samples, shares = parse(sys.argv[1])
    if not samples:
        sys.exit("wrr-plot: no '# wrr' samples in " + sys.argv[1])
    # A setting whose summary line is missing (the run failed) is drawn without its share.
    rows = [shares.get(label, [label, 0, 0, 0, 0]) for label in samples]
    flat = [s for label in samples for s in samples[label]]
    out, name = os.path.split(sys.argv[2])
    out = out or "."
    stem = os.path.splitext(name)[0]
    with open(os.path.join(out, f"{stem}-timeline.csv"), "w", newline="") as f:
        csv.writer(f).writerows([["weights", "t_ms", "fg_iops", "bg_iops"]] + flat)
    with open(os.path.join(out, f"{stem}.csv"), "w", newline="") as f:
        csv.writer(f).writerows([["weights", "fg_solo_iops", "fg_burst_iops", "fg_share_pct", "bg_burst_iops"]] + rows)
    bg = (float(os.environ.get("WRR_BG_START", 2)), float(os.environ.get("WRR_BG_END", 6)))
    figures_plot.fig13(out, flat, rows, name=name, bg=bg)
    print(sys.argv[2])


if __name__ == "__main__":
    main()
