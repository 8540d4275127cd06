#!/usr/bin/env python3
"""Plot strata-replay's JSON: replay time and peak RSS per allocator, side by side,
with the trace's peak live bytes as the floor every allocator's RSS stands on.

Usage: plot_replay.py RESULTS.json OUT.png
"""
import json
import sys

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit(3)  # strata-replay then tries the next python3


def main():
    with open(sys.argv[1]) as f:
        results = json.load(f)
    rows = results["allocators"]
    names = [r["name"] for r in rows]
    seconds = [r["time_ns"] / 1e9 for r in rows]
    rss_mib = [r["peak_rss_bytes"] / 2**20 for r in rows]
    live_mib = results["trace_peak_live_bytes"] / 2**20
    colours = ["tab:red" if n == "strata" else "tab:blue" for n in names]

    fig, (time_axis, memory_axis) = plt.subplots(1, 2, figsize=(11, 4.2))
    time_axis.bar(names, seconds, color=colours)
    time_axis.set_ylabel("replay time (s)")
    time_axis.set_title("time (lower is better)")
    memory_axis.bar(names, rss_mib, color=colours)
    memory_axis.axhline(live_mib, color="black", linestyle="--", label=f"peak live {live_mib:.1f} MiB")
    memory_axis.set_ylabel("peak RSS added (MiB)")
    memory_axis.set_title("memory (lower is better)")
    memory_axis.legend()
    for axis in (time_axis, memory_axis):
        axis.tick_params(axis="x", rotation=30)
    trace = results["trace"].split("/")[-1]
    fig.suptitle(f"strata-replay: {trace}, {results['records']:,} records, {results['threads']} thread(s)")
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
