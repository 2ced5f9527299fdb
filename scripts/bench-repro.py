#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Reproducibility of the guest figures (`make bench-repro`).

Boots `make -s bench-guest BENCH_REVS=<rev>` --repeats times per revision, keeps each boot's
console in build/bench-repro/rev<R>-<i>.log, and writes build/bench-repro.md: per revision and
run, IOPS (or MB/s for 128 KiB runs) of every boot, the spread ±(max-min)/2 in % of the median,
p50 and p99 per boot with p99/p50, and the guest's job CPU. The host's 1-minute load average at
each boot's start is recorded too: a loaded host is the first suspect of a slow boot.
`--logs DIR` summarises logs that already exist instead of booting.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

# The guest case `library: nvmedl-bench figures` prints one summary line per run on the QEMU
# console (qemu/guest-lab/src/bench.rs, `figures`); this pattern reads that line. There is no
# JSON on the console to read instead: the guest prints nvmedl-bench's text totals.
LINE = re.compile(
    r"^# nvmedl-bench (?P<args>.*?) --runtime \d+: total: \d+ I/Os in [\d.]+ s: "
    r"(?P<iops>[\d.]+) IOPS, (?P<mbs>[\d.]+) MB/s; latency \(us\): mean [\d.]+ p50 (?P<p50>[\d.]+) "
    r"p99 (?P<p99>[\d.]+).*?(?:; cpu: (?P<cpu>[\d.]+)%.*)?$"
)


def parse(path):
    """The runs of one boot's log: {args: {iops, mbs, p50, p99, cpu}}."""
    runs = {}
    with open(path, errors="replace") as f:
        for line in f:
            m = LINE.match(line.strip())
            if m:
                d = {k: float(m[k]) for k in ("iops", "mbs", "p50", "p99")}
                d["cpu"] = float(m["cpu"]) if m["cpu"] else None
                runs[m["args"]] = d
    return runs


def spread(vals):
    med = statistics.median(vals)
    return 100.0 * (max(vals) - min(vals)) / 2 / med if med else 0.0


def table(rev, boots, loads):
    out = [f"## rev {rev}: {len(boots)} boots", ""]
    if loads:
        out += ["host load average (1 min) at each boot's start: " + ", ".join(f"{l:.2f}" for l in loads), ""]
    out += [
        "| run | figure per boot | spread | p50 µs per boot | p99 µs per boot | p99/p50 | job CPU % |",
        "|---|---|---|---|---|---|---|",
    ]
    order = []
    for b in boots:
        order += [a for a in b if a not in order]
    worst = 0.0
    for args in order:
        rs = [b[args] for b in boots if args in b]
        if len(rs) < len(boots):
            out.append(f"| `{args}` | missing in {len(boots) - len(rs)} boot(s) | | | | | |")
            continue
        key, unit = ("mbs", "MB/s") if "128k" in args else ("iops", "IOPS")
        vals = [r[key] for r in rs]
        sp = spread(vals)
        worst = max(worst, sp)
        fig = " / ".join(f"{v:.0f}" for v in vals) + f" {unit}"
        ratio = " / ".join(f"{r['p99'] / r['p50']:.1f}" if r["p50"] else "-" for r in rs)
        cpu = " / ".join(f"{r['cpu']:.0f}" if r["cpu"] is not None else "-" for r in rs)
        out.append(
            f"| `{args}` | {fig} | ±{sp:.1f}% | "
            + " / ".join(f"{r['p50']:.0f}" for r in rs)
            + " | "
            + " / ".join(f"{r['p99']:.0f}" for r in rs)
            + f" | {ratio} | {cpu} |"
        )
    out += ["", f"largest spread: ±{worst:.1f}%", ""]
    return out, worst


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--revs", default="1 2")
    ap.add_argument("--logs", help="summarise existing logs in this directory, no boots")
    ap.add_argument("--out", default="build/bench-repro.md")
    a = ap.parse_args()
    revs = a.revs.split()
    logdir = a.logs or "build/bench-repro"
    os.makedirs(logdir, exist_ok=True)
    loads = {r: [] for r in revs}
    if not a.logs:
        for i in range(1, a.repeats + 1):
            for r in revs:
                path = os.path.join(logdir, f"rev{r}-{i}.log")
                loads[r].append(os.getloadavg()[0])
                t = time.time()
                with open(path, "w") as f:
                    rc = subprocess.call(["make", "-s", "bench-guest", f"BENCH_REVS={r}"], stdout=f, stderr=subprocess.STDOUT)
                print(f"bench-repro: rev {r} boot {i}: {time.time() - t:.0f} s, exit {rc} ({path})", file=sys.stderr)
                if rc != 0:
                    print(f"bench-repro: boot failed, see {path}", file=sys.stderr)
                    return 1
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    lines = [f"# make bench-repro ({stamp}; logs in {logdir})", ""]
    for r in revs:
        paths = sorted(p for p in os.listdir(logdir) if re.fullmatch(rf"rev{r}-\d+\.log", p))
        boots = [parse(os.path.join(logdir, p)) for p in paths]
        boots = [b for b in boots if b]
        if not boots:
            print(f"bench-repro: no figures for rev {r} in {logdir}", file=sys.stderr)
            return 1
        t, _ = table(r, boots, loads.get(r))
        lines += t
    with open(a.out, "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
