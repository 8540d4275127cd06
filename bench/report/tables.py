"""Markdown tables of the report: machine, allocators, per-scenario results, seed
claims beside this machine's numbers, and the headline ratios."""

from number_format import fact, metric_cell, number, ratio
from results_model import is_strata, ratio_to_best


def table(header, rows):
    """A Markdown table; pipes inside cells are escaped."""
    def line(cells):
        return "| " + " | ".join(str(cell).replace("|", "\\|") for cell in cells) + " |"
    return "\n".join([line(header), "|" + "---|" * len(header)] + [line(row) for row in rows])


def machine_table(results):
    machine = results.machine
    timer = machine.get("timer", {})
    rows = [
        ("CPU", machine.get("cpu", "?")),
        ("logical CPUs (usable)", machine.get("logical_cpus", "?")),
        ("caches (per core unless shared)", machine.get("caches", "?")),
        ("memory", machine.get("memory", "?")),
        ("virtualised", machine.get("virtualised", "?")),
        ("transparent huge pages", machine.get("transparent_huge_pages", "?")),
        ("kernel", machine.get("kernel", "?")),
        ("OS", machine.get("os", "?")),
        ("compiler", machine.get("compiler", "?")),
        ("flags", f"`{machine.get('flags', '?').strip()}`"),
        ("timer", f"rdtsc between lfences, {number(1 / timer['ns_per_tick'] if timer.get('ns_per_tick') else None)} "
                  f"ticks/ns, empty measurement {number(timer.get('empty_measurement_ns'))} ns"),
    ]
    return table(["", ""], rows)


def allocator_table(results):
    packages = results.machine.get("packages", {})
    rows = []
    for allocator in results.allocators:
        malloc_from = ""
        for (_, name), measurement in results.measurements.items():
            if name == allocator["name"]:
                malloc_from = measurement.malloc_from
                break
        version = packages.get(allocator["package"], "")
        status = allocator["status"]
        if allocator["detail"]:
            status += f": {allocator['detail']}"
        rows.append((f"**{allocator['name']}**", status, f"`{allocator['library']}`",
                     f"{allocator['package']} {version}".strip(),
                     f"`{malloc_from}`" if malloc_from else "–"))
    return table(["allocator", "status", "preloaded library", "package", "malloc resolved to"], rows)


def metric_table(results, scenario):
    """Rows = metric labels, columns = allocators or strategies; median (min–max); the
    best competitor in bold."""
    name = scenario["name"]
    allocators = results.columns(name)
    rows = []
    for label in results.metric_labels(name):
        best = results.best_competitor(name, label)
        cells = []
        unit = ""
        for allocator in allocators:
            metric = results.metric(name, allocator, label)
            unit = metric.unit if metric else unit
            cell = metric_cell(metric)
            if best and allocator == best[0]:
                cell = f"**{cell}**"
            cells.append(cell)
        rows.append([label, unit] + cells)
    return table(["", "unit"] + allocators, rows) if rows else ""


def distribution_table(results, scenario):
    """Rows = distribution labels, columns = allocators or strategies; P50 / P99 / max in ns."""
    name = scenario["name"]
    allocators = results.columns(name)
    rows = []
    for label in results.distribution_labels(name):
        cells = []
        for allocator in allocators:
            measurement = results.measurement(name, allocator)
            d = measurement.distributions.get(label) if measurement else None
            cells.append(f"{number(d['p50'])} / {number(d['p99'])} / {number(d['max'])}" if d else "–")
        rows.append([label] + cells)
    return table(["P50 / P99 / max (ns)"] + allocators, rows) if rows else ""


def fact_table(results, scenario):
    name = scenario["name"]
    if name in results.scenario_facts:
        facts = results.scenario_facts[name].facts
        rows = [[key, fact(value)] for key, value in facts.items()]
        return table(["check", f"{results.host(name)} worker"], rows) if rows else ""
    allocators = results.measured_names()
    rows = []
    for key in results.fact_keys(name):
        cells = []
        for allocator in allocators:
            measurement = results.measurement(name, allocator)
            cells.append(fact(measurement.facts[key]) if measurement and key in measurement.facts
                         else "–")
        rows.append([key] + cells)
    return table(["check"] + allocators, rows) if rows else ""


def claim_value(results, scenario, label, statistic, allocator):
    """This machine's number for a seed claim: a metric median or a distribution percentile."""
    if statistic == "median":
        metric = results.metric(scenario, allocator, label)
        return metric.median if metric else None
    measurement = results.measurement(scenario, allocator)
    distribution = measurement.distributions.get(label) if measurement else None
    return distribution.get(statistic) if distribution else None


def claims_tables(results, claims):
    """The seed's figures beside this machine's: one table for the scenarios whose
    columns are allocators, one per scenario whose columns are strategies."""
    groups = {}
    for claim in claims:
        key = claim[0] if results.compares_strategies(claim[0]) else ""
        groups.setdefault(key, []).append(claim)
    return [claims_table(results, group, results.columns(key) if key else results.measured_names())
            for key, group in groups.items()]


def claims_table(results, claims, allocators):
    rows = []
    for scenario, label, statistic, seed_figure in claims:
        unit = _claim_unit(results, scenario, label, statistic)
        cells = [number(claim_value(results, scenario, label, statistic, a)) for a in allocators]
        what = f"`{scenario}` {label}" + ("" if statistic == "median" else f" {statistic.upper()}")
        rows.append([what, seed_figure, unit] + cells)
    return table(["measurement", "seed's figure", "unit"] + allocators, rows)


def _claim_unit(results, scenario, label, statistic):
    if statistic != "median":
        return "ns"
    for allocator in results.columns(scenario):
        metric = results.metric(scenario, allocator, label)
        if metric:
            return metric.unit
    return ""


def headline_table(results, rows):
    """Each headline metric as a ratio to the best competitor (1.00× = best; higher is
    slower), strata's column included (pending until its override library is built).
    In a row of a strategy scenario the best competitor is the best of the seed's
    strategies, the allocator columns do not apply, and strata's cell is its own
    allocator's (named in the row)."""
    competitors = [a for a in results.measured_names() if not is_strata(a)]
    strata = results.allocator("strata") if "strata" in results.allocator_names() else None
    header = ["scenario", "metric", "best competitor"] + competitors + ["strata"]
    lines = []
    for scenario, label in rows:
        best = results.best_competitor(scenario, label)
        if best is None:
            continue
        unit = _claim_unit(results, scenario, label, "median")
        if results.compares_strategies(scenario):
            own = results.strata_column(scenario)
            cells = ["·"] * len(competitors)
            strata_cell = ratio(ratio_to_best(results.metric(scenario, own, label), best[1]))
            label = f"{label} ({own})"
        else:
            cells = [ratio(ratio_to_best(results.metric(scenario, a, label), best[1]))
                     for a in competitors]
            if strata and strata["status"] in ("measured", "failed"):
                strata_cell = ratio(ratio_to_best(results.metric(scenario, "strata", label), best[1]))
            else:
                strata_cell = ("pending" if strata is None or strata["status"] == "pending"
                               else strata["status"])
        lines.append([f"`{scenario}`", label, f"{best[0]} {number(best[1])} {unit}"] + cells + [strata_cell])
    return table(header, lines)
