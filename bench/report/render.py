#!/usr/bin/env python3
"""Renders a strata-bench results.json into REPORT.md and PNG plots.

usage: render.py RESULTS_JSON [--out DIR] [--readme README.md]
"""

import argparse
import os
import sys

import plots
import tables
from readme_section import update_readme
from results_model import Results
from seed_claims import HEADLINE, SEEDS
from targets import target_rows

UNIFIED_PHASES = ["allocate", "free", "access", "total"]


def image(name, alt):
    return f"![{alt}]({name})"


def file_stem(scenario_name):
    return scenario_name.replace("/", "_")


def scenario_section(results, scenario, out_dir):
    """One scenario: what it measures, its tables and its figures (or why it is pending)."""
    name = scenario["name"]
    lines = [f"### {scenario['title']} — `{name}`", "", scenario["description"] + ".", ""]
    if scenario["status"] == "pending":
        lines += [f"**pending: {scenario['pending_on']}** — measured once that component exists.", ""]
        return lines
    if not any(results.measurement(name, a) for a in results.columns(name)):
        lines += ["*No allocator produced a result for this scenario in this run.*", ""]
        return lines
    if results.compares_strategies(name):
        host = results.host(name)
        # The GPU scenarios and the tracking one have no malloc column.
        malloc_note = (" (its `malloc` is the malloc column and the upstream of the std::pmr "
                       "resources)" if "malloc" in results.columns(name) else "")
        lines += [f"*Columns are strategies, all measured in turn in the {host} worker"
                  f"{malloc_note}; **bold** marks the best strategy that is not strata's.*", ""]
    for text in (tables.metric_table(results, scenario), tables.distribution_table(results, scenario),
                 tables.fact_table(results, scenario)):
        if text:
            lines += [text, ""]
    figures = [
        (plots.bar_chart, "bars", "grouped bars"),
        (plots.scaling_chart, "scaling", "thread scaling"),
        (plots.cdf_chart, "cdf", "latency CDF"),
    ]
    for draw, suffix, alt in figures:
        png = f"{file_stem(name)}_{suffix}.png"
        if draw(results, scenario, os.path.join(out_dir, png)):
            lines += [image(png, f"{name} {alt}"), ""]
    return lines


def seed_section(results, seed, out_dir):
    scenarios = results.scenarios_of_seed(seed["seed"])
    if not scenarios:
        return []
    lines = [f"## {seed['system']} (seed {seed['seed']}, `{seed['file']}`)", "",
             f"> **The seed's claim:** {seed['headline']}", ""]
    claims = [c for c in seed["claims"] if any(s["name"] == c[0] for s in scenarios)]
    if claims and results.measured_names():
        lines += ["**This machine, same measurements** (medians; the seed's figures come from "
                  "its own hardware):", ""]
        for text in tables.claims_tables(results, claims):
            lines += [text, ""]
    if seed["seed"] == "002":
        for phase in UNIFIED_PHASES:
            png = f"unified_heatmap_{phase}.png"
            if plots.phase_heatmap(results, scenarios, phase, os.path.join(out_dir, png)):
                lines += [image(png, f"heat map: {phase}"), ""]
        managed = [s for s in scenarios if results.compares_strategies(s["name"])]
        for side in ("CPU", "GPU"):
            for phase in UNIFIED_PHASES:
                label = f"{side} access: {phase}"
                png = f"unified_managed_heatmap_{side}_{phase}.png"
                if plots.strategy_heatmap(results, managed, label, os.path.join(out_dir, png)):
                    lines += [image(png, f"heat map: {label}"), ""]
    for scenario in scenarios:
        lines += scenario_section(results, scenario, out_dir)
    return lines


def headline_rows(results):
    selected = {s["name"] for s in results.scenarios}
    return [(s, l) for s, l in HEADLINE if s in selected and results.best_competitor(s, l)]


def machine_line(results):
    m = results.machine
    return (f"{m.get('cpu', '?')}, {m.get('logical_cpus', '?')} CPUs, {m.get('kernel', '?')}, "
            f"{m.get('compiler', '?')}; {results.document.get('mode', '?')} run of "
            f"{results.document.get('generated', '?')}")


def report(results, out_dir):
    doc = results.document
    lines = [
        "# strata-bench report", "",
        f"Generated {doc.get('generated', '?')} by `{doc.get('command', 'strata-bench')}` "
        f"({doc.get('mode', '?')} run, {doc.get('wall_seconds', 0):.0f} s).", "",
        "Each general-purpose allocator ran in its own worker process, selected with "
        "`LD_PRELOAD` (glibc: nothing preloaded), calling plain `malloc`/`free`. Numbers are "
        "medians over the measured repetitions, with (min–max); **bold** marks the best "
        "competitor. Latencies are P50 / P99 / max. Ratios are computed within this run. "
        "Regenerate with `scripts/bench.sh` (quick) or `scripts/bench.sh --full`.", "",
        "strata's own allocators (session heap, frame allocator, pools) are not malloc "
        "replacements, so they appear in *strategy scenarios* (`session/session-heap*`, "
        "`frame/frame-arena*`, `cell/pool-*`): each seed's strategies (std::pmr resources, a "
        "mimalloc heap, a plain bump arena, malloc) and strata's allocator take turns in one "
        "worker per pass, that of the host allocator (glibc, the seeds' plain malloc), with "
        "the same timers as the malloc scenarios; their tables have a column per strategy. "
        "In the headline, such a row compares strata's allocator (named in the row) with the "
        "best of the seed's strategies; the allocator columns do not apply there (·).", "",
        "## Machine", "", tables.machine_table(results), "",
        "## Allocators", "", tables.allocator_table(results), "",
    ]
    rows = headline_rows(results)
    if rows:
        lines += ["## Headline: each allocator against the best competitor", "",
                  tables.headline_table(results, rows), ""]
        if plots.ratio_heatmap(results, rows, os.path.join(out_dir, "headline_heatmap.png")):
            lines += [image("headline_heatmap.png", "ratio heat map"), ""]
    targets = target_rows(results)
    if targets:
        lines += ["## strata's targets for its own allocators", "",
                  "Checked against this run's medians (issue 17); the figures come from the "
                  "strategy scenarios below.", "",
                  tables.table(["target", "this run", "verdict"], targets), ""]
    for seed in SEEDS:
        lines += seed_section(results, seed, out_dir)
    pending = [s for s in results.scenarios if s["status"] == "pending"]
    if pending:
        lines += ["## Pending", "", tables.table(
            ["scenario", "waits for"], [(f"`{s['name']}`", s["pending_on"]) for s in pending]), ""]
    return "\n".join(lines)


def readme_section(results, report_link):
    """The headline table for a page of the docs; `report_link` leads from there to REPORT.md."""
    rows = headline_rows(results)
    return "\n".join([
        "### Latest benchmark", "",
        f"Machine: {machine_line(results)}. Each cell is that allocator's median divided by "
        "the best competitor's (1.00× = best, higher = slower). Rows of `session/session-heap*`, "
        "`frame/frame-arena*` and `cell/pool-*` compare strata's own allocator (named in the "
        "row) with the best of the seed's strategies (std::pmr resources, a mimalloc heap, a "
        "bump arena, glibc's malloc), all measured in one glibc worker; there the allocator "
        "columns do not apply (·). The full report, with every seed scenario, plots and the "
        f"seeds' own figures beside ours, is [report/REPORT.md]({report_link}).", "",
        tables.headline_table(results, rows) if rows else "*No headline scenario in this run.*", "",
        "Regenerate: `scripts/bench.sh --readme docs/benchmarks.md` (quick, a few minutes) or add "
        "`--full`; `build/release/bench/strata-bench/strata-bench --help` lists the scenarios.",
    ])


def main():
    parser = argparse.ArgumentParser(description="Render a strata-bench results.json.")
    parser.add_argument("results")
    parser.add_argument("--out", default=None, help="output folder (default: beside the JSON)")
    parser.add_argument("--readme", default=None, help="README to update between the markers")
    args = parser.parse_args()
    out_dir = args.out or os.path.dirname(os.path.abspath(args.results))
    os.makedirs(out_dir, exist_ok=True)
    results = Results.load(args.results)
    with open(os.path.join(out_dir, "REPORT.md"), "w", encoding="utf-8") as file:
        file.write(report(results, out_dir) + "\n")
    report_link = os.path.relpath(os.path.join(out_dir, "REPORT.md"),
                                  os.path.dirname(os.path.abspath(args.readme or ".")))
    if args.readme and not update_readme(args.readme, readme_section(results, report_link)):
        print(f"render.py: no bench markers in {args.readme}; left unchanged", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
