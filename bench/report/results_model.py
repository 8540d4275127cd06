"""Loads a strata-bench results.json and pools its records per scenario and column.

A column is an allocator, or, in a scenario that compares strategies (strata's session
heap, frame allocator or pools against the seed's std::pmr resources, mimalloc heap, bump
arena and malloc, all measured in one host allocator's worker), a strategy: such a
record is split by the strategy each metric and distribution names."""

import json
import statistics


class Metric:
    """One labelled quantity of one allocator, with its per-repetition values."""

    def __init__(self, raw):
        self.label = raw["label"]
        self.unit = raw["unit"]
        self.lower_is_better = raw.get("better", "lower") == "lower"
        self.series = raw.get("series")
        self.x = raw.get("x")
        self.values = [v for v in raw["values"] if v is not None]

    @property
    def median(self):
        return statistics.median(self.values) if self.values else None

    @property
    def low(self):
        return min(self.values) if self.values else None

    @property
    def high(self):
        return max(self.values) if self.values else None


class Measurement:
    """Everything one allocator measured in one scenario (records of several processes
    of the same scenario, as for cold starts, are pooled)."""

    def __init__(self):
        self.metrics = {}
        self.distributions = {}
        self.facts = {}
        self.malloc_from = ""

    def add_record(self, record):
        self.malloc_from = record.get("malloc_from", "")
        for raw in record.get("metrics", []):
            if raw["label"] in self.metrics:
                self.metrics[raw["label"]].values += Metric(raw).values
            else:
                self.metrics[raw["label"]] = Metric(raw)
        for raw in record.get("distributions", []):
            self.distributions.setdefault(raw["label"], raw)
        for key, value in record.get("facts", {}).items():
            self.facts[key] = pooled_fact(self.facts[key], value) if key in self.facts else value


def pooled_fact(seen, value):
    """One fact over several processes: a check passes only if it passed in every one;
    a number that differs between them becomes its (lowest, highest) range."""
    if isinstance(value, bool):
        return seen and value
    if isinstance(value, (int, float)):
        low, high = seen if isinstance(seen, tuple) else (seen, seen)
        low, high = min(low, value), max(high, value)
        return low if low == high else (low, high)
    return seen


def is_strata(column):
    """Whether an allocator or strategy column is strata's own."""
    return column == "strata" or column.startswith("strata ")


def split_by_strategy(record):
    """(strategy, record) for each strategy a strategy scenario's record names; the
    facts stay with the scenario."""
    parts = {}
    for member in ("metrics", "distributions"):
        for raw in record.get(member, []):
            part = parts.setdefault(raw.get("strategy", ""), {
                "malloc_from": record.get("malloc_from", ""), "metrics": [], "distributions": []})
            part[member].append(raw)
    return list(parts.items())


class Results:
    """The whole run: machine, allocators, scenarios and pooled measurements."""

    def __init__(self, document):
        self.document = document
        self.machine = document.get("machine", {})
        self.allocators = document.get("allocators", [])
        self.scenarios = document.get("scenarios", [])
        self.measurements = {}
        self.strategy_columns = {}
        self.scenario_facts = {}
        by_strategy = {s["name"] for s in self.scenarios if s.get("columns") == "strategies"}
        for record in document.get("results", []):
            name = record["scenario"]
            if name not in by_strategy:
                key = (name, record["allocator"])
                self.measurements.setdefault(key, Measurement()).add_record(record)
                continue
            facts = self.scenario_facts.setdefault(name, Measurement())
            facts.add_record({"facts": record.get("facts", {})})
            columns = self.strategy_columns.setdefault(name, [])
            for strategy, part in split_by_strategy(record):
                if strategy not in columns:
                    columns.append(strategy)
                self.measurements.setdefault((name, strategy), Measurement()).add_record(part)

    @classmethod
    def load(cls, path):
        with open(path, encoding="utf-8") as file:
            return cls(json.load(file))

    def allocator_names(self):
        """Every allocator in the run, in catalog order (strata first)."""
        return [a["name"] for a in self.allocators]

    def measured_names(self):
        """Allocators that produced numbers, with strata moved last."""
        names = [a["name"] for a in self.allocators if a["status"] in ("measured", "failed")]
        return [n for n in names if n != "strata"] + [n for n in names if n == "strata"]

    def compares_strategies(self, scenario):
        return scenario in self.strategy_columns or any(
            s["name"] == scenario and s.get("columns") == "strategies" for s in self.scenarios)

    def columns(self, scenario):
        """The columns of a scenario's tables: its strategies (strata's last) or the
        allocators that produced numbers (strata last)."""
        if not self.compares_strategies(scenario):
            return self.measured_names()
        names = self.strategy_columns.get(scenario, [])
        return [n for n in names if not is_strata(n)] + [n for n in names if is_strata(n)]

    def strata_column(self, scenario):
        """strata's column of a scenario: the allocator, or its first strategy (the one
        in default mode); None if it has none."""
        if not self.compares_strategies(scenario):
            return "strata" if "strata" in self.measured_names() else None
        return next((n for n in self.strategy_columns.get(scenario, []) if is_strata(n)), None)

    def host(self, scenario):
        """The allocator whose worker measured a strategy scenario."""
        return next((s.get("host", "") for s in self.scenarios if s["name"] == scenario), "")

    def allocator(self, name):
        return next(a for a in self.allocators if a["name"] == name)

    def measurement(self, scenario, allocator):
        return self.measurements.get((scenario, allocator))

    def scenarios_of_seed(self, seed):
        return [s for s in self.scenarios if s["seed"] == seed]

    def metric_labels(self, scenario):
        """The metric labels of a scenario, in the order the workers wrote them."""
        labels = []
        for (name, _), measurement in self.measurements.items():
            if name == scenario:
                labels += [label for label in measurement.metrics if label not in labels]
        return labels

    def distribution_labels(self, scenario):
        labels = []
        for (name, _), measurement in self.measurements.items():
            if name == scenario:
                labels += [label for label in measurement.distributions if label not in labels]
        return labels

    def fact_keys(self, scenario):
        if scenario in self.scenario_facts:
            return list(self.scenario_facts[scenario].facts)
        keys = []
        for (name, _), measurement in self.measurements.items():
            if name == scenario:
                keys += [key for key in measurement.facts if key not in keys]
        return keys

    def metric(self, scenario, allocator, label):
        measurement = self.measurement(scenario, allocator)
        return measurement.metrics.get(label) if measurement else None

    def best_competitor(self, scenario, label):
        """(column, median) of the best column that is not strata's for a metric, or None."""
        candidates = []
        for name in self.columns(scenario):
            metric = self.metric(scenario, name, label)
            if not is_strata(name) and metric and metric.median is not None:
                candidates.append((name, metric.median, metric.lower_is_better))
        if not candidates:
            return None
        lower = candidates[0][2]
        best = min(candidates, key=lambda c: c[1]) if lower else max(candidates, key=lambda c: c[1])
        return best[0], best[1]


def ratio_to_best(metric, best_value):
    """How many times worse than the best a median is (1.0 = the best, higher = slower)."""
    if metric is None or metric.median is None or not best_value or not metric.median:
        return None
    if metric.lower_is_better:
        return metric.median / best_value
    return best_value / metric.median
