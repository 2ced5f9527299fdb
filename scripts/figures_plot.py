# SPDX-License-Identifier: MIT OR Apache-2.0
"""Plots of `make figures` (matplotlib, Debian's python3-matplotlib), one SVG per figure (text kept as text, so the files stay small), from
the rows scripts/figures.py wrote to the CSVs. Every plot is titled as emulation."""
import os

import matplotlib

matplotlib.use("Agg")
matplotlib.rcParams["svg.fonttype"] = "none"
matplotlib.rcParams["svg.hashsalt"] = "directnvm-figures"  # stable ids: reruns diff cleanly
import matplotlib.pyplot as plt  # noqa: E402  (after the backend choice)

NOTE = "emulation: QEMU TCG, debug guest kernel, loaded 2-core host"


def _save(f, out, name, title):
    f.suptitle(f"{title}\n({NOTE})", fontsize=10)
    f.tight_layout()
    f.savefig(os.path.join(out, name), metadata={"Date": None})
    plt.close(f)


def fig09b(out, rows):
    f, ax = plt.subplots(figsize=(6, 3.6))
    labels = [r[0] for r in rows]
    x = range(len(rows))
    for k, (col, name) in enumerate(((2, "mean"), (3, "p50"), (4, "p99"), (5, "p99.9"))):
        ax.bar([i + 0.2 * k - 0.3 for i in x], [r[col] for r in rows], 0.2, label=name)
    ax.set_xticks(list(x), labels)
    ax.set_ylabel("completion latency (µs)")
    ax.set_yscale("log")
    ax.legend(fontsize=8)
    _save(f, out, "fig09b-qd1-latency.svg", "Fig. 9b: 4 KiB QD1 latency, directnvm engine, rev 2")


def sweep(out, rows, name, xlabel, title, control=None):
    f, ax = plt.subplots(figsize=(6, 3.6))
    xs = [r[0] for r in rows]
    ax.plot(xs, [r[1] for r in rows], "o-", label="IOPS")
    if control:
        ax.plot([r[0] for r in control], [r[1] for r in control], "^:", color="tab:gray",
                label="IOPS, model capped at 8 in flight")
        ax.legend(fontsize=7, loc="upper left")
    ax.set_xscale("log", base=2)
    ax.set_xticks(xs, [str(x) for x in xs])
    ax.set_xlabel(xlabel)
    ax.set_ylabel("4 KiB random-read IOPS")
    ax.set_ylim(bottom=0)
    ax2 = ax.twinx()
    ax2.plot(xs, [r[2] for r in rows], "s--", color="tab:red", label="mean clat")
    ax2.set_ylabel("mean completion latency (µs)", color="tab:red")
    _save(f, out, name, title)


def bars(out, rows, name, xlabel, ylabel, title, col=1, labels=None):
    f, ax = plt.subplots(figsize=(6, 3.6))
    ax.bar([str(r[0]) for r in rows] if labels is None else labels, [r[col] for r in rows])
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    _save(f, out, name, title)


def fig13(out, samples, shares, name="fig13-wrr.svg", bg=(2, 6)):
    """Fig. 13, one panel per weight setting: `samples` rows (weights, t_ms, fg_iops, bg_iops),
    `shares` rows (weights, fg_solo, fg_burst, fg_share_pct, ...), the burst from bg[0] to bg[1] s.
    `make figures` (fio's IOPS logs) and `make wrr` (scripts/wrr-plot.py) both draw it here."""
    labels = [r[0] for r in shares]
    f, axs = plt.subplots(len(labels), 1, figsize=(6.5, 2.2 * len(labels)), sharex=True, squeeze=False)
    axs = axs[:, 0]
    for ax, lab, sh in zip(axs, labels, shares):
        pts = [s for s in samples if s[0] == lab]
        ax.plot([p[1] / 1000 for p in pts], [p[2] for p in pts], label="foreground (core 0, high)")
        ax.plot([p[1] / 1000 for p in pts], [p[3] for p in pts], label="background (cores 1-3, low)")
        ax.axvspan(bg[0], bg[1], color="grey", alpha=0.15)
        ax.set_ylabel("IOPS")
        ax.set_title(f"WRR {lab}: foreground keeps {sh[3]}% of its solo IOPS in the burst", fontsize=9)
    axs[0].legend(fontsize=7, loc="upper right")
    axs[-1].set_xlabel("time (s); background burst shaded")
    _save(f, out, name, "Fig. 13: foreground vs background burst, SSD model slowed to ~4000 IOPS")


def baseline(out, rows):
    f, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.8))
    labels = [f"{r[1].replace('-', chr(10))}\nQD{r[2]}" for r in rows]
    colors = ["tab:green" if r[0] == "directnvm" else "tab:blue" for r in rows]
    a1.bar(labels, [r[8] for r in rows], color=colors)
    a1.set_ylabel("guest core-ms per million I/Os")
    a1.set_yscale("log")
    a2.bar(labels, [r[3] for r in rows], color=colors)
    a2.set_ylabel("IOPS")
    for a in (a1, a2):
        a.tick_params(axis="x", labelsize=7)
    _save(f, out, "baseline-cpu.svg",
          "directnvm (green) vs kernel nvme driver (blue), 4 KiB random read, one CPU, device latency out")


def plot_all(out, fig):
    fig09b(out, fig["fig09b"])
    sweep(out, fig["fig10a"], "fig10a-queue-depth.svg", "iodepth", "Fig. 10: I/O queue depth, one core, rev 2",
          control=fig.get("fig10a_capped"))
    sweep(out, fig["fig10b"], "fig10b-staging-depth.svg", "requests staged per HDU batch (QD128)",
          "Fig. 10: staging depth, one core, rev 2")
    bars(out, fig["fig11"], "fig11-cores.svg", "cores (QD32 each)", "aggregate IOPS", "Fig. 11: 1..4 cores, rev 2")
    bars(out, fig["fig12"], "fig12-urgency.svg", "urgency class (urgent capped at 1000 IOPS)", "IOPS",
         "Fig. 12: four classes competing, WRR 8:4:1, SSD ~4000 IOPS", col=2)
    fig13(out, fig["fig13_samples"], fig["fig13"])
    bars(out, fig["fig14c"], "fig14c-latency-stddev.svg", "iodepth", "clat stddev (µs)",
         "Fig. 14c: latency standard deviation, one core, rev 2", col=3)
    f, ax = plt.subplots(figsize=(6, 3.6))
    for k, r in enumerate(fig["mix"]):
        ax.bar([i + 0.4 * k - 0.2 for i in range(4)], r[2:6], 0.4, label=r[0])
    ax.set_xticks(range(4), ["p50", "p95", "p99", "p99.9"])
    ax.set_ylabel("completion latency (µs)")
    ax.set_yscale("log")
    ax.legend(fontsize=8)
    _save(f, out, "mix-70-30.svg", "seed 001 §5.3: 70/30 mix, exponential sizes 4k..128k, QD16")
    baseline(out, fig["baseline"])
