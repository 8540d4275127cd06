"""Formatting of measured numbers for Markdown tables."""


def number(value):
    """A number with three significant digits, thousands separated: 12.3, 4,560, 0.0123."""
    if value is None:
        return "–"
    if value == 0:
        return "0"
    magnitude = abs(value)
    if magnitude >= 1000:
        return f"{value:,.0f}"
    if magnitude >= 100:
        return f"{value:.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    if magnitude >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"


def metric_cell(metric):
    """Median with the min–max spread of the repetitions."""
    if metric is None or metric.median is None:
        return "–"
    if len(metric.values) == 1:
        return number(metric.median)
    return f"{number(metric.median)} ({number(metric.low)}–{number(metric.high)})"


def ratio(value):
    return "–" if value is None else f"{value:.2f}×"


def fact(value):
    if isinstance(value, bool):
        return "pass" if value else "**FAIL**"
    if isinstance(value, (int, float)):
        return number(value)
    if isinstance(value, tuple):  # a range over several processes
        return f"{number(value[0])}–{number(value[1])}"
    return str(value)
