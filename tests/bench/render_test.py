#!/usr/bin/env python3
"""Renders the recorded fixture results.json and checks the report and its plots."""

import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
RENDERER = os.path.join(HERE, "..", "..", "bench", "report", "render.py")
FIXTURE = os.path.join(HERE, "fixtures", "results.json")
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench", "report"))
from results_model import pooled_fact, split_by_strategy  # noqa: E402
README_TEMPLATE = "# project\n\n<!-- bench:begin -->\nold table\n<!-- bench:end -->\n\nafter\n"


def check(condition, message):
    if not condition:
        print("FAIL:", message)
        sys.exit(1)


def check_pooled_facts():
    # Facts of several processes (passes, cold starts): a check fails if any failed,
    # a number that varied shows its range.
    check(pooled_fact(True, False) is False and pooled_fact(False, True) is False, "bool pooling")
    check(pooled_fact(True, True) is True, "bool pooling")
    check(pooled_fact(4000.0, 4000.0) == 4000.0, "equal numbers")
    check(pooled_fact(pooled_fact(4000.0, 3998.0), 4001.0) == (3998.0, 4001.0), "number range")
    check(pooled_fact("first", "second") == "first", "text keeps the first")


def check_split_by_strategy():
    # A strategy scenario's record becomes one column per strategy its metrics name.
    record = {"malloc_from": "libc", "facts": {"k": 1.0},
              "metrics": [{"strategy": "strata x", "label": "a", "unit": "ns", "values": [1]},
                          {"strategy": "malloc", "label": "a", "unit": "ns", "values": [2]}],
              "distributions": [{"strategy": "malloc", "label": "d", "p50": 1}]}
    parts = dict(split_by_strategy(record))
    check(sorted(parts) == ["malloc", "strata x"], f"strategies {sorted(parts)}")
    check(len(parts["malloc"]["metrics"]) == 1 and len(parts["malloc"]["distributions"]) == 1,
          "malloc's part")
    check(parts["strata x"]["metrics"][0]["values"] == [1] and not parts["strata x"]["distributions"],
          "strata's part")


def main():
    check_pooled_facts()
    check_split_by_strategy()
    with tempfile.TemporaryDirectory() as out:
        readme = os.path.join(out, "README.md")
        with open(readme, "w", encoding="utf-8") as file:
            file.write(README_TEMPLATE)
        subprocess.run([sys.executable, RENDERER, FIXTURE, "--out", out, "--readme", readme],
                       check=True)
        with open(os.path.join(out, "REPORT.md"), encoding="utf-8") as file:
            report = file.read()
        for text in ["## Machine", "## Allocators", "## Headline", "## XSigma (seed 000",
                     "## Cell (seed 001", "## Unified Allocator (seed 002",
                     "## SessionHeap (seed 003", "## framealloc (seed 004",
                     "pending: strata BFC allocator", "The seed's claim", "| glibc |",
                     "skipped: not installed", "libtbbmalloc2", "P50 / P99 / max",
                     "Columns are strategies, all measured in turn in the glibc worker",
                     "| strata frame_allocator (minimal) |", "| pmr::monotonic |",
                     "| bump arena |", "| mimalloc heap |", "batch API (separate blocks)",
                     "64 B (strata frame_allocator)", "| glibc worker |",
                     "## strata's targets for its own allocators",
                     "| frame allocator ≤ 2 ns per allocation at every size, default and minimal |"]:
            check(text in report, f"REPORT.md lacks {text!r}")
        for png in ["cell_single-pairs_bars.png", "cell_threads_scaling.png",
                    "session_single-allocation_cdf.png", "unified_heatmap_total.png",
                    "headline_heatmap.png", "xsigma_4k-x10000-cold_bars.png",
                    "frame_frame-arena_bars.png", "session_session-heap-latency_cdf.png"]:
            path = os.path.join(out, png)
            check(os.path.getsize(path) > 1000, f"{png} missing or empty")
            check(f"({png})" in report, f"REPORT.md does not show {png}")
        with open(readme, encoding="utf-8") as file:
            updated = file.read()
        check("old table" not in updated and "Latest benchmark" in updated and
              updated.endswith("<!-- bench:end -->\n\nafter\n"), "README section not replaced")
    print("render_test: ok")


if __name__ == "__main__":
    main()
