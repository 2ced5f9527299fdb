#!/usr/bin/python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""`make figures`, host side: take fio's reports out of the guest console logs of the
`figures` boots (qemu/guest-lab/src/figures.rs prints them between `DNVM-FIG-BEGIN <run>
json|log <file>` and `DNVM-FIG-END <run>` lines), keep them under OUT/json and OUT/logs, write
one CSV per figure, plot each (scripts/figures_plot.py, matplotlib) and write OUT/summary.md,
each measured figure next to the paper's claim.

    scripts/figures.py OUT CONSOLE.log...   (make figures: paper, arbitration, baseline)

fio's JSON is parsed with the json module and its IOPS logs (`msec, value, ddir, bs, offset`)
with the csv module. Exits non-zero when a run is missing or a report does not parse.
"""
import csv
import json
import os
import sys

import figures_plot

WRR = [("wrr-1-1", "1:1"), ("wrr-8-1", "8:1"), ("wrr-128-1", "128:1")]
BG_START_MS, BG_END_MS = 2000, 6000  # wrr-fg-bg.fio: startdelay=2, runtime=4


def extract(path):
    """{run: {"json": report, "logs": {file: text}}} from one console log."""
    runs, cur, buf = {}, None, []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\r\n")
            if line.startswith("DNVM-FIG-BEGIN "):
                cur, buf = line.split()[1:], []
            elif line.startswith("DNVM-FIG-END ") and cur:
                run = runs.setdefault(cur[0], {"json": None, "logs": {}})
                if cur[1] == "json":
                    run["json"] = json.loads("".join(buf))
                else:
                    run["logs"][cur[2]] = "\n".join(buf) + "\n"
                cur = None
            elif cur:
                buf.append(line)
    return runs


def jobs(runs, run):
    if run not in runs or runs[run]["json"] is None:
        sys.exit(f"figures: no fio report for run '{run}' in the console logs")
    return runs[run]["json"]["jobs"]


def us(ns):
    return round(ns / 1000.0, 1)


def pct(d, p):
    return d["clat_ns"].get("percentile", {}).get(f"{p:.6f}", 0)


def write_csv(out, name, header, rows):
    with open(os.path.join(out, name), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    return rows


def iops_log(text):
    """[(msec, iops)] of one fio IOPS log (summed over directions)."""
    pts = {}
    for rec in csv.reader(text.splitlines()):
        if len(rec) >= 2 and rec[0].strip():
            t = int(rec[0])
            pts[t] = pts.get(t, 0) + int(rec[1])
    return sorted(pts.items())


def wrr_series(run):
    """Foreground and summed background IOPS per 100 ms window of one wrr-fg-bg run."""
    fg, bg = [], {}
    for name, text in sorted(run["logs"].items()):
        pts = iops_log(text)
        if name.startswith("fg_"):
            fg = pts
            continue
        # A delayed job's log time counts from its own start in some fio versions: put the
        # background's samples on the foreground's clock.
        shift = BG_START_MS if pts and pts[0][0] < BG_START_MS / 2 else 0
        for t, v in pts:
            key = (t + shift) // 100 * 100
            bg[key] = bg.get(key, 0) + v
    return [(t, v, bg.get(t // 100 * 100, 0)) for t, v in fg]


def window_mean(series, lo, hi, idx=1):
    vals = [p[idx] for p in series if lo < p[0] <= hi]
    return sum(vals) / len(vals) if vals else 0.0


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(os.path.join(out, "json"), exist_ok=True)
    runs = {}
    for log in sys.argv[2:]:
        runs.update(extract(log))
    for run, r in runs.items():
        if r["json"] is not None:
            with open(os.path.join(out, "json", f"{run}.json"), "w") as f:
                json.dump(r["json"], f, indent=1)
        for name, text in r["logs"].items():
            os.makedirs(os.path.join(out, "logs", run), exist_ok=True)
            with open(os.path.join(out, "logs", run, name), "w") as f:
                f.write(text)

    fig = {}
    rows = []
    for j in jobs(runs, "qd1-latency"):
        d = j["read"] if j["read"]["total_ios"] else j["write"]
        rows.append([j["jobname"], round(d["iops"]), us(d["clat_ns"]["mean"]), us(pct(d, 50)),
                     us(pct(d, 99)), us(pct(d, 99.9)), us(d["clat_ns"]["stddev"])])
    fig["fig09b"] = write_csv(out, "fig09b-qd1-latency.csv",
                              ["job", "iops", "clat_mean_us", "p50_us", "p99_us", "p99.9_us", "stddev_us"], rows)
    for key, run, col, name in (("fig10a", "depth-sweep", "iodepth", "fig10a-queue-depth.csv"),
                                ("fig10a_capped", "depth-sweep-capped", "iodepth", "fig10a-queue-depth-capped.csv"),
                                ("fig10b", "staging-sweep", "batch", "fig10b-staging-depth.csv")):
        # the median too: on a loaded host, stalls of the emulation inflate the mean, not p50
        rows = [[int(j["jobname"].lstrip("qdbatch")), round(j["read"]["iops"]), us(j["read"]["clat_ns"]["mean"]),
                 us(pct(j["read"], 50))] for j in jobs(runs, run)]
        fig[key] = write_csv(out, name, [col, "iops", "clat_mean_us", "clat_p50_us"], sorted(rows))
    rows = [[int(j["jobname"].lstrip("cores")), round(j["read"]["iops"])] for j in jobs(runs, "four-cores")]
    fig["fig11"] = write_csv(out, "fig11-cores.csv", ["cores", "iops"], sorted(rows))
    rows = [[j["jobname"], j["job options"].get("priority", ""), round(j["read"]["iops"]),
             us(j["read"]["clat_ns"]["mean"])] for j in jobs(runs, "urgency")]
    fig["fig12"] = write_csv(out, "fig12-urgency.csv", ["class", "priority", "iops", "clat_mean_us"], rows)
    samples, shares = [], []
    for run, label in WRR:
        jobs(runs, run)
        s = wrr_series(runs[run])
        samples += [[label, t, fg, bg] for t, fg, bg in s]
        solo = (window_mean(s, 500, BG_START_MS) + window_mean(s, BG_END_MS + 500, 8000)) / 2
        burst = window_mean(s, BG_START_MS + 500, BG_END_MS)
        bg = window_mean(s, BG_START_MS + 500, BG_END_MS, 2)
        shares.append([label, round(solo), round(burst), round(100 * burst / solo, 1) if solo else 0, round(bg)])
    write_csv(out, "fig13-wrr-timeline.csv", ["weights", "t_ms", "fg_iops", "bg_iops"], samples)
    fig["fig13"] = write_csv(out, "fig13-wrr.csv",
                             ["weights", "fg_solo_iops", "fg_burst_iops", "fg_share_pct", "bg_burst_iops"], shares)
    fig["fig13_samples"] = samples
    rows = [[int(j["jobname"].lstrip("qd")), round(j["read"]["iops"]), us(j["read"]["clat_ns"]["mean"]),
             us(j["read"]["clat_ns"]["stddev"])] for j in jobs(runs, "latency-stddev")]
    fig["fig14c"] = write_csv(out, "fig14c-latency-stddev.csv", ["iodepth", "iops", "clat_mean_us", "stddev_us"], rows)
    j = jobs(runs, "mix-70-30")[0]
    rows = [[dd, round(j[dd]["iops"]), us(pct(j[dd], 50)), us(pct(j[dd], 95)), us(pct(j[dd], 99)),
             us(pct(j[dd], 99.9))] for dd in ("read", "write")]
    fig["mix"] = write_csv(out, "mix-70-30.csv", ["dir", "iops", "p50_us", "p95_us", "p99_us", "p99.9_us"], rows)
    rows = []
    for j in jobs(runs, "baseline-cpu"):
        if j["jobname"].startswith("prefill"):
            continue
        d = j["read"]
        ios = d["total_ios"]
        cpu_ms = (j["usr_cpu"] + j["sys_cpu"]) / 100.0 * j["job_runtime"]
        stack = "directnvm" if j["jobname"].startswith("directnvm") else "kernel nvme"
        engine, qd = j["jobname"].rsplit("-qd", 1)
        rows.append([stack, engine, int(qd), round(d["iops"]), round(j["usr_cpu"], 1), round(j["sys_cpu"], 1),
                     j["job_runtime"], ios, round(cpu_ms / ios * 1e6) if ios else 0])
    fig["baseline"] = write_csv(out, "baseline-cpu.csv", ["stack", "engine", "iodepth", "iops", "usr_cpu_pct",
                                "sys_cpu_pct", "runtime_ms", "ios", "core_ms_per_mio"], rows)

    figures_plot.plot_all(out, fig)
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write(summary(fig))
    print(f"figures: {out}/summary.md, {len(os.listdir(out))} files")


def summary(fig):
    def get(rows, key, col):
        return next((r[col] for r in rows if r[0] == key), 0)

    d10, s10 = fig["fig10a"], fig["fig10b"]
    gain = lambda rows: (100.0 * (get(rows, 128, 1) / get(rows, 64, 1) - 1)) if get(rows, 64, 1) else 0
    cores = fig["fig11"]
    shares = {r[0]: r[3] for r in fig["fig13"]}
    order = "yes" if shares.get("128:1", 0) > shares.get("8:1", 0) > shares.get("1:1", 0) else "no"
    base = fig["baseline"]
    dn = {r[2]: r for r in base if r[0] == "directnvm"}
    lines = [
        "# fio figures (`make figures`)",
        "",
        "Emulation: QEMU TCG (no KVM, 4 vCPUs) on a shared, loaded 2-core host; the guest runs the debug",
        "test kernel (KASAN, lockdep, kmemleak); the fake HDU + NVMe controller + SSD model run in a host",
        "process. Single runs. Compare shapes with the paper, not absolute numbers. Plots: `*.svg` here.",
        "",
        "| figure | the paper's claim | measured here |",
        "|---|---|---|",
        "| Fig. 9b QD1 latency, 4 KiB, rev 2 | software is 91% of a kernel NVMe I/O's latency; DirectNVM "
        "takes it out of the I/O path (DESIGN.md) | " + "; ".join(f"{r[0]}: {r[1]} IOPS, mean {r[2]} µs, p99 {r[4]} µs" for r in fig["fig09b"])
        + " (SSD model read latency 40 µs) |",
        f"| Fig. 10 queue depth 1..128 | beyond 64 adds ~4% | QD64 {get(d10, 64, 1)} IOPS, QD128 {get(d10, 128, 1)} "
        f"({gain(d10):+.1f}%); QD1 {get(d10, 1, 1)}; all: " + ", ".join(f"QD{r[0]} {r[1]}" for r in d10)
        + " IOPS; clat p50 " + ", ".join(f"{r[3]:g}" for r in d10) + " µs |",
        "| Fig. 10 control: the same sweep, model capped at 8 commands in flight (the arbitration boot) | "
        "the cap bounds the device's parallelism (control, not a paper figure) | "
        + ", ".join(f"QD{r[0]} {r[1]}" for r in fig["fig10a_capped"]) + " IOPS; clat p50 "
        + ", ".join(f"{r[3]:g}" for r in fig["fig10a_capped"]) + " µs |",
        f"| Fig. 10 staging depth 1..128 (QD128) | beyond 64 adds ~4% | batch 64 {get(s10, 64, 1)} IOPS, 128 "
        f"{get(s10, 128, 1)} ({gain(s10):+.1f}%); batch 1 {get(s10, 1, 1)} |",
        "| Fig. 11 cores 1..4, QD32 each | aggregate throughput on 1..4 cores (no number in the project's sources) | "
        + ", ".join(f"{r[0]}: {r[1]}" for r in cores) + " IOPS (4 vCPUs + the device model on 2 host cores) |",
        "| Fig. 12 urgency classes competing (SSD model slowed to ~4000 IOPS, WRR 8:4:1, urgent capped at 1000 IOPS) | "
        "throughput per urgency class (no number in the project's sources) | "
        + ", ".join(f"{r[0]}: {r[2]}" for r in fig["fig12"]) + " IOPS |",
        "| Fig. 13 fg (high) vs bg burst (low, 3 cores) | 128:1 protects the foreground better than 8:1 | fg keeps "
        + ", ".join(f"{r[3]}% at {r[0]}" for r in fig["fig13"]) + f" of its solo IOPS; ordered 128:1 > 8:1 > 1:1: {order} |",
        "| Fig. 14c latency stddev | latency standard deviation (no number in the project's sources) | "
        + "; ".join(f"QD{r[0]}: mean {r[2]} µs, stddev {r[3]} µs" for r in fig["fig14c"]) + " |",
        "| seed 001 §5.3 70/30 mix, exponential sizes | p50/p95/p99/p99.9 reported | "
        + "; ".join(f"{r[0]} p50 {r[2]} / p95 {r[3]} / p99 {r[4]} / p99.9 {r[5]} µs" for r in fig["mix"]) + " |",
        f"| kernel baseline, CPU per I/O (seed 001) | DirectNVM 42 vs kernel 328 core-ms per million I/Os | "
        f"directnvm QD1 {get_cpu(dn, 1)}, QD32 {get_cpu(dn, 32)}; kernel: "
        + ", ".join(f"{r[1]} QD{r[2]} {r[8]}" for r in base if r[0] != "directnvm") + " (table below) |",
        "",
        "Kernel baseline, 4 KiB random read, one CPU, device latency out (fake SSD `--timing none`;",
        "QEMU `-device nvme` on a RAM-backed file, `nvme.poll_queues=2`). Guest CPU per I/O =",
        "(usr_cpu + sys_cpu) x runtime / I/Os of the fio thread; the device models run outside the guest.",
        "",
        "| stack | fio engine | QD | IOPS | usr % | sys % | core-ms per million I/Os |",
        "|---|---|---|---|---|---|---|",
    ] + [f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]} | {r[5]} | {r[8]} |" for r in base] + [""]
    return "\n".join(lines)


def get_cpu(dn, qd):
    return dn[qd][8] if qd in dn else "n/a"


if __name__ == "__main__":
    main()
