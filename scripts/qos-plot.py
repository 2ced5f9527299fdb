#!/usr/bin/python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""The QoS evidence from a guest console log: plots (matplotlib, SVG) and Markdown tables.

    scripts/qos-plot.py evidence build/qos/evidence.log build/qos   (make qos-evidence)
    scripts/qos-plot.py advise   build/qos/advise.log   build/qos   (make qos-advise)
    scripts/qos-plot.py advise-wrr build/qos/advise-wrr.log build/qos (make qos-advise-wrr)

Input lines (qemu/guest-lab/src/qos_runs.rs, qos_mix.rs): `# qos-json <exp> <label> <json>`
`# qos-advise <rho> <model table line>` and `# qos-advise-wrr <load> <nvmedl advise --json>`.
Output: qos-mix.svg, qos-tiers.svg, qos-tenants.svg, evidence.md (evidence); qos-advise.svg,
advise.md (advise); qos-advise-wrr.svg, advise-wrr.md (advise-wrr); QOS_PLOT_PNG=1
adds PNG copies. Debian's python3-matplotlib (scripts/deps.sh).
"""
import json
import os
import re
import statistics
import sys
from collections import OrderedDict, defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

plt.rcParams["svg.hashsalt"] = "directnvm-qos"  # stable SVG ids across runs


def records(log):
    """{exp: OrderedDict(label -> json)} and the advise table lines."""
    runs, model = defaultdict(OrderedDict), defaultdict(list)
    with open(log, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.strip()
            m = re.match(r"^# qos-json (\S+) (\S+) (\{.*\})\s*$", line)
            if m:
                runs[m.group(1)][m.group(2)] = json.loads(m.group(3))
                continue
            m = re.match(r"^# qos-advise (\S+) (.*)$", line)
            if m:
                model[m.group(1)].append(m.group(2))
    return runs, model


def save(fig, path):
    fig.tight_layout()
    fig.savefig(path, format="svg", metadata={"Date": None})
    with open(path, encoding="utf-8") as f:
        svg = f.read()
    head, _, rest = svg.partition("\n")  # after the XML declaration
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"{head}\n<!-- SPDX-License-Identifier: MIT OR Apache-2.0 -->\n{rest}")
    if os.environ.get("QOS_PLOT_PNG"):  # a PNG copy next to the SVG, for a quick look
        fig.savefig(path[:-4] + ".png", format="png", dpi=70)
    plt.close(fig)
    print(f"qos-plot: wrote {path}")


# ------------------------------------------------------------------------------ evidence


def mix_kind(name):
    """fixed, adaptive or adaptive-ss (slow start) from a mix label such as adaptive-ss-20000us."""
    for kind in ("adaptive-ss", "adaptive", "fixed"):
        if name.startswith(kind + "-"):
            return kind
    return name


def mix_target(name):
    """The number in a mix label (depth or target µs)."""
    m = re.search(r"(\d+)(us)?$", name)
    return int(m.group(1)) if m else 0


def time_to_limit(trace, frac):
    """Seconds until the limit first reached frac x the trace's median limit (None: never)."""
    if not trace:
        return None
    goal = frac * statistics.median(p["iodepth"] for p in trace)
    return next((p["t_ms"] / 1000 for p in trace if p["iodepth"] >= goal), None)


def mix(runs, out, md):
    """70/30 mix: p99 and IOPS per configuration (rounds as points), depth over time."""
    groups = OrderedDict()
    for label, r in runs.items():
        groups.setdefault(label.split("/")[0], []).append(r)
    if not groups:
        return
    names = list(groups)
    fig, axs = plt.subplots(2, 2, figsize=(13, 8.4))
    front, ax = axs[0][0], [axs[0][1], axs[1][0], axs[1][1]]
    # p99 against throughput: the fixed depths draw the trade-off curve; an adaptive point on
    # or below it is as good as the best fixed depth of its throughput.
    for kind, style in (("fixed", "o-"), ("adaptive", "s"), ("adaptive-ss", "^")):
        pts = []
        for n in names:
            if mix_kind(n) == kind:
                rs = groups[n]
                pts.append((statistics.median(r["iops"] for r in rs), statistics.median(r["lat_us"]["p99"] for r in rs) / 1000, n))
        pts.sort()
        if pts:
            front.plot([p[0] for p in pts], [p[1] for p in pts], style, label=kind, ms=6)
            for x, y, n in pts:
                front.annotate(n.split("-", 1)[1], (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
    front.set_yscale("log")
    front.set_xlabel("IOPS (median of rounds)")
    front.set_ylabel("p99 ms (median of rounds)")
    front.set_title("p99 vs throughput (lower right is better)")
    front.legend(fontsize=7)
    for i, (key, unit, title) in enumerate((("p99", "µs", "p99 latency"), ("iops", "IOPS", "throughput"))):
        vals = [[(r["lat_us"]["p99"] if key == "p99" else r["iops"]) for r in groups[n]] for n in names]
        ax[i].bar(range(len(names)), [statistics.median(v) for v in vals], color="#9ecae1")
        for x, v in enumerate(vals):
            ax[i].plot([x] * len(v), v, "k.", ms=6)
        ax[i].set_xticks(range(len(names)), names, rotation=30, fontsize=7)
        ax[i].set_ylabel(unit)
        ax[i].set_title(f"{title} (bar: median, dots: rounds)")
        if key == "p99":
            ax[i].set_yscale("log")
    for n in names:
        for k, r in enumerate(groups[n]):
            tr = r["jobs"][0].get("trace", [])
            if n.startswith("adaptive") and tr:
                ls = "--" if mix_kind(n) == "adaptive-ss" else "-"
                ax[2].step([p["t_ms"] / 1000 for p in tr], [p["iodepth"] for p in tr], ls, where="post", label=f"{n} round {k + 1}")
    for qd in (8, 16, 32, 64, 128):
        ax[2].axhline(qd, color="grey", lw=0.6, ls=":")
    ax[2].set_yscale("log", base=2)
    ax[2].set_xlabel("s")
    ax[2].set_ylabel("in-flight limit")
    ax[2].set_title("adaptive: depth over time (dashed: slow start; dotted: fixed depths)")
    ax[2].legend(fontsize=7)
    save(fig, f"{out}/qos-mix.svg")
    md.append("### 70/30 mix, exponential sizes (mean 8 KiB, max 64 KiB)\n")
    md.append("adaptive-ss: adaptive with `--slow-start`. ¾ limit: seconds until the limit first reached 3/4 of the run's median limit (each round).\n")
    md.append("| configuration | rounds | IOPS (each round) | MB/s | p50 µs | p99 µs (each round) | p99.9 µs | final / median limit | ¾ limit s |")
    md.append("|---|---|---|---|---|---|---|---|---|")
    # Beside each other: every adaptive target's slow-start rows follow its plain rows.
    fixed = [n for n in names if mix_kind(n) == "fixed"]
    adaptive = sorted((n for n in names if n not in fixed), key=lambda n: (mix_target(n), mix_kind(n) == "adaptive-ss"))
    for n in fixed + adaptive:
        rs = groups[n]
        med = lambda f: statistics.median(f(r) for r in rs)  # noqa: E731
        depth = [statistics.median(p["iodepth"] for p in r["jobs"][0].get("trace", [])) if r["jobs"][0].get("trace") else r["iodepth"] for r in rs]
        iops = " / ".join("%.0f" % r["iops"] for r in rs)
        p99 = " / ".join("%.0f" % r["lat_us"]["p99"] for r in rs)
        final = " / ".join(str(r["jobs"][0]["qos"]["final_iodepth"]) for r in rs)
        rise = " / ".join("-" if t is None else f"{t:.1f}" for t in (time_to_limit(r["jobs"][0].get("trace", []), 0.75) for r in rs)) if mix_kind(n) != "fixed" else "-"
        md.append(
            f"| {n} | {len(rs)} | {iops} | {med(lambda r: r['mb_s']):.1f} | {med(lambda r: r['lat_us']['p50']):.0f} | "
            f"{p99} | {med(lambda r: r['lat_us']['p999']):.0f} | {final} / {statistics.median(depth):.0f} | {rise} |"
        )
    md.append("")


def tiers(runs, out, md):
    if not runs:
        return
    fig, axes = plt.subplots(2, len(runs), figsize=(5 * len(runs), 6.5), sharex=True, squeeze=False)
    md.append("### Two tiers under a background burst\n")
    md.append("| scheduler | top tier IOPS solo → burst | top share in burst | top p99 µs solo → burst | background IOPS in burst | background longest gap | background longest level-1 wait | longest poll step (loop / handle, guard armed) | forced by guard |")
    md.append("|---|---|---|---|---|---|---|---|---|")
    for c, (label, r) in enumerate(runs.items()):
        t = [v / 1000 for v in r["t_ms"]]
        top, bg = r["streams"][0], r["streams"][1]
        for s, col in ((top, "#1f77b4"), (bg, "#d62728")):
            axes[0][c].plot(t, [v * 10 for v in s["s_ios"]], color=col, label=f"{s['name']} (class {s['class']})")
            axes[1][c].plot(t, [v if v > 0 else float("nan") for v in s["s_p99_us"]], color=col)
        for a in (axes[0][c], axes[1][c]):
            a.axvspan(r["burst"][0], r["burst"][1], color="#eeeeee")
        waits = (r.get("tiers") or {}).get("max_wait_ms")
        l1 = f"{waits[bg['class']]:.2f} ms" if waits and waits[bg["class"]] > 0 else "-"
        axes[0][c].set_title(label if l1 == "-" else f"{label} (background's longest level-1 wait {l1})", fontsize=9)
        axes[0][c].set_ylabel("IOPS (100 ms)")
        axes[1][c].set_ylabel("p99 µs (100 ms; gap: no completion)")
        axes[1][c].set_yscale("log")
        axes[1][c].set_xlabel("s (grey: burst)")
        axes[0][c].legend(fontsize=7)
        share = top["burst"]["iops"] / max(top["burst"]["iops"] + bg["burst"]["iops"], 1e-9)
        forced = r["tiers"]["forced"] if r.get("tiers") else "-"
        st = r.get("steps") or {}
        guard_step = f"{st['guard_max_step_ms']:.2f} ms" if st.get("guard_max_step_ms") else "-"
        step = f"{st['app_max_step_ms']:.2f} ms / {guard_step}" if "app_max_step_ms" in st else "-"
        md.append(
            f"| {label} | {top['solo']['iops']:.0f} → {top['burst']['iops']:.0f} | {100 * share:.1f} % | "
            f"{top['solo']['p99_us']:.0f} → {top['burst']['p99_us']:.0f} | {bg['burst']['iops']:.0f} | "
            f"{bg['max_gap_ms']:.1f} ms | {l1} | {step} | {forced} |"
        )
    md.append("")
    save(fig, f"{out}/qos-tiers.svg")


def tenants(runs, out, md):
    if not runs:
        return
    label, r = next(iter(runs.items()))
    t = [v / 1000 for v in r["t_ms"]]
    fig, ax = plt.subplots(1, 2, figsize=(12, 4))
    tot = [sum(s["s_bytes"][i] for s in r["streams"]) or 1 for i in range(len(t))]
    for k, (s, col) in enumerate(zip(r["streams"], ("#1f77b4", "#d62728"))):
        ax[0].plot(t, [s["s_bytes"][i] / tot[i] for i in range(len(t))], color=col, label=f"{s['name']} share of bytes")
        ax[1].plot(t, [b[k] for b in r["tenant_boost"]], color=col, label=f"tenant {s['tenant']} boost")
    for a in ax:
        a.axvline(r["burst"][0], color="grey", ls="--")
        a.set_xlabel("s (dashed: tenant 2's target set)")
        a.legend(fontsize=8)
    ax[0].axhline(r.get("target") or 0.4, color="#d62728", ls=":", lw=1)
    ax[0].set_ylabel("share (100 ms; dotted: tenant 2's target)")
    ax[1].set_ylabel("boost")
    save(fig, f"{out}/qos-tenants.svg")
    md.append("### Tenant boosting\n")
    md.append("| tenant | request size | bytes share before target | after | IOPS before → after | p99 µs before → after |")
    md.append("|---|---|---|---|---|---|")
    b0, b1 = (sum(s["bytes"][p] for s in r["streams"]) or 1 for p in (0, 1))
    for s in r["streams"]:
        md.append(
            f"| {s['tenant']} | {s['len'] // 1024} KiB | {100 * s['bytes'][0] / b0:.1f} % | {100 * s['bytes'][1] / b1:.1f} % | "
            f"{s['solo']['iops']:.0f} → {s['burst']['iops']:.0f} | {s['solo']['p99_us']:.0f} → {s['burst']['p99_us']:.0f} |"
        )
    md.append("")


# ------------------------------------------------------------------------------ advise


def advise(runs, model, out, md):
    service = None
    rows = defaultdict(dict)  # rho -> K -> (P_block, IOPS, W_us)
    for rho, lines in model.items():
        if rho == "service_us":
            service = float(lines[0])
            continue
        for l in lines:
            m = re.match(r"^\s*(\d+)\s+(\S+)\s+([\d.]+)\s+([\d.]+)\s*$", l)
            if m:
                pb = 0.0 if m.group(2).startswith("≈") else float(m.group(2))
                rows[rho][int(m.group(1))] = (pb, float(m.group(3)), float(m.group(4)))
    fig, ax = plt.subplots(1, 2, figsize=(12, 4))
    md.append(f"M/D/1/K model (`nvmedl advise`, service {service} µs = 1/IOPS of a saturated closed loop) next to "
              "`nvmedl-bench --rate` (open loop, Poisson arrivals; an arrival finding K outstanding is blocked).\n")
    md.append("| ρ | K | P_block model | P_block measured | IOPS model | IOPS measured | W model µs | mean latency measured µs |")
    md.append("|---|---|---|---|---|---|---|---|")
    for i, rho in enumerate(sorted(rows, key=float)):
        ks = sorted(k for k in rows[rho] if f"rho{rho}-K{k}" in runs)
        meas = [runs[f"rho{rho}-K{k}"] for k in ks]
        pbm = [r["jobs"][0]["open_loop"]["p_block"] for r in meas]
        col = f"C{i}"
        ax[0].plot(ks, [rows[rho][k][0] for k in ks], "-", color=col, label=f"ρ={rho} model")
        ax[0].plot(ks, pbm, "o", color=col, label=f"ρ={rho} measured")
        ax[1].plot(ks, [rows[rho][k][1] for k in ks], "-", color=col)
        ax[1].plot(ks, [r["iops"] for r in meas], "o", color=col)
        for k, r in zip(ks, meas):
            pm, xm, wm = rows[rho][k]
            md.append(f"| {rho} | {k} | {pm:.4f} | {r['jobs'][0]['open_loop']['p_block']:.4f} | {xm:.0f} | {r['iops']:.0f} | {wm:.0f} | {r['lat_us']['mean']:.0f} |")
    ax[0].set_xscale("log", base=2)
    ax[0].set_ylabel("blocking probability")
    ax[0].set_xlabel("depth K")
    ax[0].legend(fontsize=7)
    ax[1].set_xscale("log", base=2)
    ax[1].set_ylabel("IOPS (line: model, dots: measured)")
    ax[1].set_xlabel("depth K")
    save(fig, f"{out}/qos-advise.svg")
    md.append("")


# ------------------------------------------------------------------------------ advise-wrr


def wrr_records(log):
    """The WRR sweep's model lines: ({load: nvmedl advise --json}, arbitration lines)."""
    model, info = OrderedDict(), []
    with open(log, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.strip()
            m = re.match(r"^# qos-advise-wrr (\S+) (\{.*\})\s*$", line)
            if m:
                model[m.group(1)] = json.loads(m.group(2))
            m = re.match(r"^# qos-advise-wrr-info (.*)$", line)
            if m:
                info.append(m.group(1))
    return model, info


CLASS_NAMES = {0: "urgent", 1: "high", 2: "medium", 3: "low"}
WRR_CLASSES = (1, 3)  # model class 0 = urgency high, class 1 = urgency low (qos_runs.rs)


def wrr_class(run, urgency):
    """The per-class record (priority, iops, lat_us, open_loop) of urgency `urgency` in a bench run:
    the job of that class (a job per class) or the class of the one job (--prio-mix)."""
    jobs = run["jobs"]
    pool = jobs if len(jobs) > 1 else jobs[0]["classes"]
    return next(c for c in pool if c["priority"] == urgency)


def advise_wrr(runs, log, out, md):
    model, info = wrr_records(log)
    md.append("Per-class M/D/1/K model under WRR (`nvmedl advise --classes`, service D = 1/IOPS of both classes saturated "
              "together, measured before each load) next to `nvmedl-bench` open loop "
              "per class (`--rate` per job, or `--prio-mix --class-depth K` in one job; Poisson arrivals; an arrival finding K "
              "of its class outstanding is blocked). Each class is its own M/D/1/K with service D·Σw/w_c.\n")
    if info:
        md.append("Controller: " + "; ".join(info) + "\n")
    for load in model:
        sat = runs.get(f"saturation-{load}")
        if sat:
            cs = [wrr_class(sat, u) for u in WRR_CLASSES]
            split = ", ".join(f"{CLASS_NAMES.get(c['priority'], c['priority'])} {c['iops']:.0f}" for c in cs)
            share = 100 * cs[0]["iops"] / max(sum(c["iops"] for c in cs), 1e-9)
            how = "QD 16 per class, a job each" if len(sat["jobs"]) > 1 else "one job, 32 outstanding, classes drawn 1:1"
            md.append(f"* before {load}: saturated (closed loop, {how}) {sat['iops']:.0f} IOPS, "
                      f"D = {model[load]['service_us']:.1f} µs; {split} IOPS (high {share:.1f} % of the two)")
    md.append("")
    md.append("| load | ρ total | class (weight) | ρ class | K | P_block model | P_block measured | IOPS model | IOPS measured | W model µs | mean latency measured µs |")
    md.append("|---|---|---|---|---|---|---|---|---|---|---|")
    loads = list(model)
    if not loads:
        return
    fig, axs = plt.subplots(2, len(loads), figsize=(5 * len(loads), 7), squeeze=False)
    for col, load in enumerate(loads):
        mj = model[load]
        rows = {r["total"]["depth"]: r for r in mj["rows"]}
        ks = sorted(k for k in rows if f"{load}-K{k}" in runs)
        rho_total = mj["rate"] * mj["service_us"] * 1e-6
        for c, cls in enumerate(mj["classes"]):
            pm, pmeas, xm, xmeas = [], [], [], []
            for k in ks:
                r = runs[f"{load}-K{k}"]
                job = wrr_class(r, WRR_CLASSES[c])
                mc = rows[k]["classes"][c]
                pm.append(mc["p_block"])
                pmeas.append(job["open_loop"]["p_block"])
                xm.append(mc["iops"])
                xmeas.append(job["iops"])
                name = CLASS_NAMES.get(job["priority"], str(job["priority"]))
                md.append(
                    f"| {load} | {rho_total:.2f} | {name} ({cls['weight']:.0f}) | {mc['rho']:.2f} | {k} | {mc['p_block']:.4f} | "
                    f"{job['open_loop']['p_block']:.4f} | {mc['iops']:.0f} | {job['iops']:.0f} | {mc['w_us']:.0f} | {job['lat_us']['mean']:.0f} |"
                )
            color = f"C{c}"
            label = f"{CLASS_NAMES[WRR_CLASSES[c]]} (w {cls['weight']:.0f})"
            axs[0][col].plot(ks, pm, "-", color=color, label=f"{label} model")
            axs[0][col].plot(ks, pmeas, "o", color=color, label=f"{label} measured")
            axs[1][col].plot(ks, xm, "-", color=color)
            axs[1][col].plot(ks, xmeas, "o", color=color)
        for row, ylabel in ((0, "blocking probability"), (1, "IOPS (line: model, dots: measured)")):
            axs[row][col].set_xscale("log", base=2)
            axs[row][col].set_xlabel("depth K per class")
            axs[row][col].set_ylabel(ylabel)
        axs[0][col].set_title(f"{load} (ρ total {rho_total:.2f})", fontsize=9)
        axs[0][col].legend(fontsize=7)
    save(fig, f"{out}/qos-advise-wrr.svg")
    md.append("")


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("evidence", "advise", "advise-wrr"):
        sys.exit(__doc__)
    what, log, out = sys.argv[1:]
    runs, model = records(log)
    md = []
    if what == "evidence":
        if not (runs.get("mix") or runs.get("tiers") or runs.get("tenants")):
            sys.exit(f"qos-plot: no qos-json lines in {log}")
        mix(runs.get("mix", {}), out, md)
        tiers(runs.get("tiers", {}), out, md)
        tenants(runs.get("tenants", {}), out, md)
    elif what == "advise":
        if not runs.get("advise"):
            sys.exit(f"qos-plot: no advise lines in {log}")
        advise(runs["advise"], model, out, md)
    else:
        if not runs.get("advise-wrr"):
            sys.exit(f"qos-plot: no advise-wrr lines in {log}")
        advise_wrr(runs["advise-wrr"], log, out, md)
    path = f"{out}/{what}.md"
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))
    print(f"qos-plot: wrote {path}")


if __name__ == "__main__":
    main()
