"""The report's figures, drawn with matplotlib: grouped bars, thread-scaling lines,
latency CDFs and allocator × scenario heat maps."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
import matplotlib.ticker  # noqa: E402

from results_model import is_strata, ratio_to_best  # noqa: E402

COLOURS = {
    "strata": "#d62728",
    "glibc": "#7f7f7f",
    "mimalloc": "#1f77b4",
    "mimalloc3": "#aec7e8",
    "jemalloc": "#2ca02c",
    "tcmalloc": "#ff7f0e",
    "tbbmalloc": "#9467bd",
    "malloc": "#7f7f7f",
    "pmr::monotonic": "#1f77b4",
    "pmr::unsynchronized_pool": "#2ca02c",
    "mimalloc heap": "#17becf",
    "bump arena": "#ff7f0e",
}
STRATA_SHADES = ["#d62728", "#ff9896", "#8c1c13"]


def colour(column):
    """An allocator's or strategy's colour; strata's own strategies in shades of red."""
    if column in COLOURS:
        return COLOURS[column]
    if is_strata(column):
        return STRATA_SHADES[sum(map(ord, column)) % len(STRATA_SHADES)]
    return "#bcbd22"


def save(figure, path):
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)


def bar_chart(results, scenario, path):
    """Grouped bars (one group per metric, one bar per allocator, min–max whiskers),
    one panel per unit. Returns False when the scenario has no such metrics."""
    allocators = results.columns(scenario["name"])
    labels = [l for l in results.metric_labels(scenario["name"])
              if not _is_series(results, scenario["name"], l)]
    units = []
    for label in labels:
        unit = _unit(results, scenario["name"], label)
        if unit not in units:
            units.append(unit)
    if not labels or not allocators:
        return False
    figure, axes = plt.subplots(1, len(units), figsize=(min(16, max(6, 2.2 * len(labels))), 4), squeeze=False)
    for axis, unit in zip(axes[0], units):
        unit_labels = [l for l in labels if _unit(results, scenario["name"], l) == unit]
        width = 0.8 / len(allocators)
        for index, allocator in enumerate(allocators):
            medians, below, above = [], [], []
            for label in unit_labels:
                metric = results.metric(scenario["name"], allocator, label)
                median = metric.median if metric and metric.median is not None else 0
                medians.append(median)
                below.append(median - metric.low if metric and metric.values else 0)
                above.append(metric.high - median if metric and metric.values else 0)
            positions = [i + (index - (len(allocators) - 1) / 2) * width
                         for i in range(len(unit_labels))]
            axis.bar(positions, medians, width, yerr=[below, above], capsize=2,
                     label=allocator, color=colour(allocator))
        axis.set_xticks(range(len(unit_labels)))
        axis.set_xticklabels(unit_labels, rotation=20 if len(unit_labels) > 4 else 0, ha="right"
                             if len(unit_labels) > 4 else "center", fontsize=8)
        axis.set_ylabel(unit)
        values = [m for m in _all_medians(results, scenario["name"], unit_labels) if m > 0]
        if values and max(values) / min(values) > 100:
            axis.set_yscale("log")
    axes[0][0].legend(fontsize=8)
    figure.suptitle(f"{scenario['name']}: {scenario['title']}", fontsize=10)
    save(figure, path)
    return True


def scaling_chart(results, scenario, path):
    """Median against thread count, one line per allocator, one panel per series."""
    name = scenario["name"]
    series_labels = {}
    for label in results.metric_labels(name):
        for allocator in results.columns(name):
            metric = results.metric(name, allocator, label)
            if metric and metric.series:
                series_labels.setdefault(metric.series, []).append(label)
                break
    if not series_labels:
        return False
    figure, axes = plt.subplots(1, len(series_labels), figsize=(5 * len(series_labels), 4),
                                squeeze=False)
    for axis, (series, labels) in zip(axes[0], series_labels.items()):
        for allocator in results.columns(name):
            points = []
            for label in labels:
                metric = results.metric(name, allocator, label)
                if metric and metric.median is not None:
                    points.append((metric.x, metric.median))
            if points:
                points.sort()
                axis.plot([p[0] for p in points], [p[1] for p in points], marker="o",
                          label=allocator, color=colour(allocator))
                axis.set_ylabel(metric.unit, fontsize=8)
        axis.set_xlabel("threads")
        axis.set_title(series, fontsize=9)
        axis.set_xscale("log", base=2)
        axis.set_ylim(bottom=0)
    axes[0][0].legend(fontsize=8)
    figure.suptitle(f"{name}: {scenario['title']}", fontsize=10)
    save(figure, path)
    return True


def cdf_chart(results, scenario, path):
    """Latency CDFs from the recorded quantile curves, one panel per distribution."""
    name = scenario["name"]
    labels = results.distribution_labels(name)
    if not labels:
        return False
    columns = min(len(labels), 4)
    rows = (len(labels) + columns - 1) // columns
    figure, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 3.2 * rows), squeeze=False)
    for index, label in enumerate(labels):
        axis = axes[index // columns][index % columns]
        for allocator in results.columns(name):
            measurement = results.measurement(name, allocator)
            distribution = measurement.distributions.get(label) if measurement else None
            if not distribution or not distribution.get("quantiles"):
                continue
            quantiles = distribution["quantiles"]
            fractions = [i / (len(quantiles) - 1) for i in range(len(quantiles))]
            axis.plot([max(q, 0.1) for q in quantiles], fractions, label=allocator,
                      color=colour(allocator))
        axis.set_xscale("log")
        axis.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        axis.set_title(label, fontsize=8)
        axis.set_xlabel("ns", fontsize=8)
        axis.grid(alpha=0.3)
    for index in range(len(labels), rows * columns):
        axes[index // columns][index % columns].axis("off")
    axes[0][0].set_ylabel("fraction ≤ x")
    axes[0][0].legend(fontsize=7)
    figure.suptitle(f"{name}: {scenario['title']} (CDF)", fontsize=10)
    save(figure, path)
    return True


def phase_heatmap(results, scenarios, phase, path):
    """002-style heat map: allocators × scenarios, the median of one phase (ms)."""
    return _median_heatmap(results, scenarios, results.measured_names(), phase, path)


def strategy_heatmap(results, scenarios, label, path):
    """002-style heat map for scenarios whose columns are strategies: strategies ×
    scenarios, the median of one metric (ms)."""
    strategies = []
    for scenario in scenarios:
        for name in results.columns(scenario["name"]):
            if name not in strategies and results.metric(scenario["name"], name, label):
                strategies.append(name)
    return _median_heatmap(results, scenarios, strategies, label, path)


def _median_heatmap(results, scenarios, rows, label, path):
    """Rows (allocators or strategies) × the scenarios that have the metric: its median."""
    columns = [s for s in scenarios if any(results.metric(s["name"], r, label) for r in rows)]
    if not columns or not rows:
        return False
    grid = []
    for name in rows:
        row = []
        for scenario in columns:
            metric = results.metric(scenario["name"], name, label)
            row.append(metric.median if metric and metric.median is not None else float("nan"))
        grid.append(row)
    _draw_heatmap(grid, rows, [s["name"].split("/")[1] for s in columns],
                  f"{label} (ms, median) — darker is slower", path, "{:.2f}")
    return True


def ratio_heatmap(results, rows, path):
    """Allocators × headline metrics: each median divided by the best competitor's. In
    a strategy scenario's column only strata's row has a cell: its own allocator's."""
    allocators = results.measured_names()
    if not rows or not allocators:
        return False
    grid = []
    for allocator in allocators:
        row = []
        for scenario, label in rows:
            best = results.best_competitor(scenario, label)
            column = allocator
            if results.compares_strategies(scenario):
                column = results.strata_column(scenario) if allocator == "strata" else None
            metric = results.metric(scenario, column, label) if column else None
            value = ratio_to_best(metric, best[1]) if best else None
            row.append(value if value is not None else float("nan"))
        grid.append(row)
    names = [f"{scenario.split('/')[1]}\n{label}" for scenario, label in rows]
    _draw_heatmap(grid, allocators, names, "× the best competitor (1.00 = best, higher = slower)",
                  path, "{:.2f}")
    return True


def _draw_heatmap(grid, row_names, column_names, title, path, number_format):
    figure, axis = plt.subplots(figsize=(max(6, 1.3 * len(column_names)), 0.6 * len(row_names) + 2))
    image = axis.imshow(grid, cmap="YlOrRd", aspect="auto")
    axis.set_xticks(range(len(column_names)))
    axis.set_xticklabels(column_names, fontsize=7, rotation=30, ha="right")
    axis.set_yticks(range(len(row_names)))
    axis.set_yticklabels(row_names)
    for r, row in enumerate(grid):
        for c, value in enumerate(row):
            if value == value:  # not NaN
                axis.text(c, r, number_format.format(value), ha="center", va="center", fontsize=7)
    figure.colorbar(image, ax=axis)
    axis.set_title(title, fontsize=10)
    save(figure, path)


def _is_series(results, scenario, label):
    for allocator in results.columns(scenario):
        metric = results.metric(scenario, allocator, label)
        if metric:
            return bool(metric.series)
    return False


def _unit(results, scenario, label):
    for allocator in results.columns(scenario):
        metric = results.metric(scenario, allocator, label)
        if metric:
            return metric.unit
    return ""


def _all_medians(results, scenario, labels):
    medians = []
    for allocator in results.columns(scenario):
        for label in labels:
            metric = results.metric(scenario, allocator, label)
            if metric and metric.median is not None:
                medians.append(metric.median)
    return medians
