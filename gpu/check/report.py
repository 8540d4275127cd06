"""The device check's report: OUTDIR/gpu-check.json and OUTDIR/gpu-check.md, from
what scripts/gpu-check.sh left in OUTDIR (steps.tsv, results/, logs/, bench/).

    python3 gpu/check/report.py OUTDIR --gpu yes|no --exit-status N --budget S

Every step appears with its status, duration and the key numbers its result
files hold; the report says which GPU the numbers were measured on, or that no
GPU answered and which numbers come from a machine without one.
"""

import argparse
import csv
import datetime
import json
import os
import statistics
import xml.etree.ElementTree as ElementTree

TITLES = {
    "environment": "Machine and versions",
    "torch-extension": "strata's PyTorch extension (JIT build)",
    "configure": "CMake configure of build/gpu-check",
    "build": "Build: gpu/, strata-bench, strata-malloc",
    "ctest": "GPU test suite: CUDA instances and integration tests",
    "memcheck": "compute-sanitizer memcheck",
    "racecheck": "compute-sanitizer racecheck",
    "bench": "strata-bench GPU scenarios",
    "torch-alloc-bench": "Allocate+free through PyTorch",
    "torch-e2e": "Transformer training: PyTorch's allocator vs strata's",
    "torch-graph": "CUDA graph capture and replay under strata",
    "torch-record-stream": "Tensor.record_stream under strata",
    "torch-oom": "Out of memory under strata",
    "cupy": "CuPy workload through strata",
    "cupy-per-thread": "CuPy on per-thread default streams, two threads",
}
# The steps whose numbers come from the GPU (the rest are the build and its facts).
GPU_STEPS = ("ctest", "memcheck", "racecheck", "bench", "torch-alloc-bench", "torch-e2e",
             "torch-graph", "torch-record-stream", "torch-oom", "cupy", "cupy-per-thread")
ALLOCATOR_NAMES = {"native": "PyTorch caching allocator", "native-async": "PyTorch cudaMallocAsync",
                   "strata": "strata"}
MIB = 1 << 20


class Outdir:
    """Reading the files one run left in OUTDIR; a missing or broken file reads as None."""

    def __init__(self, path):
        self.path = path

    def file(self, *parts):
        """The full path of a file under OUTDIR."""
        return os.path.join(self.path, *parts)

    def json(self, *parts):
        """A JSON file's contents, or None."""
        try:
            with open(self.file(*parts), encoding="utf-8") as file:
                return json.load(file)
        except (OSError, ValueError):
            return None

    def tsv(self, *parts):
        """A tab-separated file's rows, or []."""
        try:
            with open(self.file(*parts), encoding="utf-8", newline="") as file:
                return list(csv.reader(file, delimiter="\t", quoting=csv.QUOTE_NONE))
        except OSError:
            return []

    def tail(self, name, lines=25):
        """The last lines of a step's log."""
        try:
            with open(self.file("logs", name + ".log"), encoding="utf-8",
                      errors="replace") as file:
                return file.read().splitlines()[-lines:]
        except OSError:
            return []


# ---- each step's key numbers, from its result files (None where it left none)

def environment_numbers(found):
    """GPU, driver and versions."""
    found = found.json("results", "environment.json")
    if not found:
        return None
    torch, cupy, tools = found.get("torch", {}), found.get("cupy", {}), found.get("tools", {})
    return {"gpu": found.get("gpu"), "driver": found.get("driver"),
            "cuda_driver_api": found.get("cuda_driver_api"), "nvcc": tools.get("nvcc"),
            "compute_sanitizer": tools.get("compute_sanitizer"),
            "torch": torch.get("version"), "torch_cuda": torch.get("cuda"),
            "cupy": cupy.get("version"), "cmake": tools.get("cmake"), "gcc": tools.get("gcc"),
            "python": tools.get("python"), "host": found.get("host", {}).get("name"),
            "cpus": found.get("host", {}).get("cpus"), "commit": found.get("commit")}


def extension_numbers(found):
    """How long the JIT build took and where it went."""
    result = found.json("results", "torch-extension.json")
    return result and {key: result[key] for key in ("seconds", "torch", "module", "reason")
                       if result.get(key) is not None}


def ctest_numbers(found):
    """Test counts from the JUnit XML, all and the CUDA instances apart."""
    try:
        suite = ElementTree.parse(found.file("results", "ctest-junit.xml")).getroot()
    except (OSError, ElementTree.ParseError):
        return None
    outcomes = {"run": "passed", "fail": "failed", "notrun": "skipped", "disabled": "skipped"}
    counts = {"all": {}, "cuda": {}}
    failed = {}
    for case in suite.iter("testcase"):
        outcome = outcomes.get(case.get("status"), case.get("status"))
        name = case.get("name", "")
        for group in ("all", "cuda") if "cuda" in name else ("all",):
            counts[group][outcome] = counts[group].get(outcome, 0) + 1
        if outcome == "failed":
            failed[name] = (case.findtext("system-out") or "").strip().splitlines()[-12:]
    return {"tests": counts["all"], "cuda_instances": counts["cuda"], "failed": failed}


def sanitizer_numbers(found, tool):
    """Per test program: its CUDA tests and what the tool found."""
    rows = found.tsv("results", tool + ".tsv")
    if not rows:
        return None
    programs = [{"program": row[0], "cuda_tests": int(row[1]), "status": row[2],
                 "seconds": row[3], "summary": row[4] if len(row) > 4 else ""}
                for row in rows if len(row) >= 4]
    return {"programs": programs,
            "clean": sum(p["status"] == "clean" for p in programs if p["cuda_tests"]),
            "run": sum(1 for p in programs if p["cuda_tests"])}


# gpu/fragmentation's figures the report shows, per sequence and strategy.
FRAGMENTATION_FIGURES = ("peak reserved", "peak allocated", "peak reserved / peak allocated",
                         "fragmentation at peak", "time")


def bench_numbers(found):
    """strata-bench's backend and its median µs per block for each GPU allocation strategy."""
    results = found.json("bench", "results.json")
    if not results:
        return None
    allocations, backend, scenarios, fragmentation = {}, None, [], {}
    for result in results.get("results", []):
        scenarios.append(result["scenario"])
        if result["scenario"] == "gpu/fragmentation":
            for metric in result.get("metrics", []):
                sequence, _, figure = metric["label"].partition(": ")
                if figure in FRAGMENTATION_FIGURES:
                    fragmentation.setdefault(sequence, {}).setdefault(
                        metric["strategy"], {}).setdefault(figure, []).extend(metric["values"])
            continue
        if result["scenario"] != "xsigma/gpu-allocators":
            continue
        backend = result.get("facts", {}).get("backend", backend)
        for metric in result.get("metrics", []):
            if metric["label"].endswith(": allocate+free"):
                case = metric["label"].split(":")[0]
                values = allocations.setdefault(case, {}).setdefault(metric["strategy"], [])
                values.extend(metric["values"])
    medians = {case: {strategy: round(statistics.median(values), 3)
                      for strategy, values in strategies.items()}
               for case, strategies in allocations.items()}
    fragmentation = {sequence: {strategy: {figure: round(statistics.median(values), 3)
                                           for figure, values in figures.items()}
                                for strategy, figures in strategies.items()}
                     for sequence, strategies in fragmentation.items()}
    return {"backend": backend, "us_per_block": medians, "fragmentation": fragmentation,
            "scenarios": sorted(set(scenarios)), "wall_seconds": results.get("wall_seconds")}


def alloc_bench_numbers(found):
    """ns per allocate+free pair through PyTorch, per allocator."""
    runs = {allocator: found.json("results", "torch-alloc-bench-%s.json" % allocator)
            for allocator in ALLOCATOR_NAMES}
    measured = {allocator: run["ns_per_pair"] for allocator, run in runs.items()
                if run and run.get("status") == "passed"}
    return measured or None


def e2e_numbers(found):
    """Each run's step time, peak memory and final loss, and whether the losses agree."""
    compared = found.json("results", "torch-e2e.json")
    if compared and "runs" in compared:
        return {key: compared.get(key) for key in
                ("runs", "final_loss_relative_difference", "largest_step_loss_relative_difference",
                 "tolerance", "step_time_ratio", "reason")}
    runs = {}
    for allocator in ("native", "strata"):
        run = found.json("results", "torch-e2e-%s.json" % allocator)
        if run and run.get("status") == "passed":
            runs[allocator] = {"median_step_ms": run["median_step_ms"],
                               "final_loss": run["final_loss"],
                               "max_reserved_bytes": run["memory"]["max_reserved_bytes"],
                               "max_allocated_bytes": run["memory"]["max_allocated_bytes"],
                               "memory_counters": run["memory"]["counters"],
                               "route": run.get("route")}
    return {"runs": runs} if runs else None


def result_numbers(name, *keys):
    """A reader for one result file's listed keys."""
    def read(found):
        result = found.json("results", name + ".json")
        return result and {key: result[key] for key in keys if key in result}
    return read


NUMBERS = {
    "environment": environment_numbers,
    "torch-extension": extension_numbers,
    "ctest": ctest_numbers,
    "memcheck": lambda found: sanitizer_numbers(found, "memcheck"),
    "racecheck": lambda found: sanitizer_numbers(found, "racecheck"),
    "bench": bench_numbers,
    "torch-alloc-bench": alloc_bench_numbers,
    "torch-e2e": e2e_numbers,
    "torch-graph": result_numbers("torch-graph", "replays", "largest_difference",
                                  "output_outliving_its_graph_kept", "stages", "reason"),
    "torch-record-stream": result_numbers("torch-record-stream", "with_record_stream",
                                          "control_without_record_stream", "reason"),
    "torch-oom": result_numbers("torch-oom", "error_type", "message", "strata_ooms",
                                "reserved_bytes_before_empty_cache",
                                "reserved_bytes_after_empty_cache", "reason"),
    "cupy": result_numbers("cupy", "rounds", "threads", "seconds", "current_stream_handle",
                           "stream_notices", "strata", "reason"),
    "cupy-per-thread": result_numbers("cupy-per-thread", "rounds", "threads", "seconds",
                                      "current_stream_handle", "stream_notices", "strata",
                                      "reason"),
}


def steps(found):
    """Every step in run order, with its key numbers."""
    listed = []
    for row in sorted(found.tsv("steps.tsv"), key=lambda row: int(row[0])):
        position, name, status, seconds, note = (row + [""] * 5)[:5]
        listed.append({"position": int(position), "name": name, "title": TITLES.get(name, name),
                       "status": status, "seconds": float(seconds or 0), "note": note,
                       "log": "logs/%s.log" % name,
                       "numbers": NUMBERS.get(name, lambda _: None)(found)})
    return listed


# ---- the Markdown

def mib(value):
    """Bytes as MiB with one decimal."""
    return "%.1f" % (value / MIB) if isinstance(value, (int, float)) else "-"


def provenance(gpu, environment):
    """The sentence that says where the numbers come from."""
    if gpu and environment and environment.get("gpu"):
        return ("Every number from the GPU steps (%s) was measured in this run on **%s** "
                "(driver %s, CUDA %s), host %s."
                % (", ".join(GPU_STEPS), environment["gpu"], environment.get("driver"),
                   environment.get("cuda_driver_api"), environment.get("host")))
    return ("**No GPU answered on %s**: the steps that need one were skipped. The numbers "
            "below come from this machine without a GPU: ctest ran the suite with its CUDA "
            "instances skipping, and strata-bench ran its GPU scenarios on the simulated device "
            "(its backend line says so). None of them is a GPU measurement."
            % ((environment or {}).get("host") or "this machine"))


def versions_table(environment):
    """Markdown lines: the versions found."""
    if not environment:
        return ["(the environment step left no result)"]
    rows = [("GPU", "gpu"), ("Driver", "driver"), ("CUDA (driver API)", "cuda_driver_api"),
            ("CUDA toolkit (nvcc)", "nvcc"), ("compute-sanitizer", "compute_sanitizer"),
            ("PyTorch", "torch"), ("PyTorch's CUDA", "torch_cuda"), ("CuPy", "cupy"),
            ("CMake", "cmake"), ("GCC", "gcc"), ("Python", "python"), ("CPUs", "cpus"),
            ("Commit", "commit")]
    return ["| | |", "|---|---|"] + ["| %s | %s |" % (label, environment.get(key) or "not found")
                                     for label, key in rows]


def steps_table(listed):
    """Markdown lines: one row per step."""
    lines = ["| # | Step | Status | Seconds | Note |", "|---|---|---|---|---|"]
    for step in listed:
        note = step["note"].replace("|", "\\|")
        lines.append("| %d | %s (`%s`) | %s | %.1f | %s |" % (
            step["position"], step["title"], step["name"], step["status"], step["seconds"], note))
    return lines


def ctest_section(numbers):
    """Markdown lines for the test suite."""
    tests, cuda = numbers["tests"], numbers["cuda_instances"]
    lines = ["All selected tests: %s." % ", ".join("%d %s" % (n, k) for k, n in tests.items()),
             "CUDA instances: %s." % (", ".join("%d %s" % (n, k) for k, n in cuda.items())
                                      or "none")]
    for name, output in numbers["failed"].items():
        lines += ["", "Failed: `%s`, its output's end:" % name, "", "```"] + output + ["```"]
    return lines


def sanitizer_section(numbers):
    """Markdown lines for one compute-sanitizer tool."""
    lines = ["| Program | CUDA tests | Outcome | Seconds | Summary |", "|---|---|---|---|---|"]
    lines += ["| %s | %d | %s | %s | %s |" % (p["program"], p["cuda_tests"], p["status"],
                                              p["seconds"], p["summary"])
              for p in numbers["programs"]]
    return lines


def bench_section(numbers):
    """Markdown lines for strata-bench: µs per block by case and strategy."""
    lines = ["Backend: %s." % numbers["backend"], ""]
    strategies = sorted({s for per_case in numbers["us_per_block"].values() for s in per_case})
    lines += ["| Case | %s |" % " | ".join(strategies), "|---|%s" % ("---|" * len(strategies))]
    for case, per_strategy in numbers["us_per_block"].items():
        lines.append("| %s | %s |" % (case, " | ".join(
            str(per_strategy.get(s, "-")) for s in strategies)))
    lines += ["", "µs per block allocated and freed (median of the rounds); scenarios run: %s; "
              "the full results are in bench/results.json." % ", ".join(numbers["scenarios"])]
    for sequence, per_strategy in numbers.get("fragmentation", {}).items():
        lines += ["", "gpu/fragmentation, %s (MB = 2^20 bytes, time in ms):" % sequence, "",
                  "| Strategy | %s |" % " | ".join(FRAGMENTATION_FIGURES),
                  "|---|%s" % ("---|" * len(FRAGMENTATION_FIGURES))]
        lines += ["| %s | %s |" % (strategy, " | ".join(
            str(figures.get(f, "-")) for f in FRAGMENTATION_FIGURES))
                  for strategy, figures in per_strategy.items()]
    return lines


def alloc_bench_section(numbers):
    """Markdown lines: ns per pair by case and allocator."""
    allocators = list(numbers)
    cases = list(next(iter(numbers.values())))
    lines = ["| Case | %s |" % " | ".join(ALLOCATOR_NAMES[a] for a in allocators),
             "|---|%s" % ("---|" * len(allocators))]
    lines += ["| %s | %s |" % (case, " | ".join(str(numbers[a].get(case, "-")) for a in allocators))
              for case in cases]
    return lines + ["", "ns per allocate+free pair through torch.empty/del (median of 5 repeats), "
                        "each allocator in its own process."]


def e2e_section(numbers):
    """Markdown lines: the two training runs side by side."""
    lines = ["| Allocator | Median step (ms) | Peak reserved (MiB) | Peak allocated (MiB) | "
             "Final loss | Memory counters |", "|---|---|---|---|---|---|"]
    for allocator, run in numbers["runs"].items():
        lines.append("| %s | %s | %s | %s | %.6f | %s |" % (
            ALLOCATOR_NAMES.get(allocator, allocator), run["median_step_ms"],
            mib(run["max_reserved_bytes"]), mib(run["max_allocated_bytes"]), run["final_loss"],
            run["memory_counters"]))
    if numbers.get("final_loss_relative_difference") is not None:
        lines += ["", "Final losses differ by %.3g relative (limit %g); strata's median step "
                      "time is %sx PyTorch's." % (numbers["final_loss_relative_difference"],
                                                  numbers["tolerance"], numbers["step_time_ratio"])]
    return lines


def plain_section(numbers):
    """Markdown lines: a step's numbers as a JSON block."""
    return ["```json", json.dumps(numbers, indent=2, sort_keys=True), "```"]


SECTIONS = {"ctest": ctest_section, "memcheck": sanitizer_section, "racecheck": sanitizer_section,
            "bench": bench_section, "torch-alloc-bench": alloc_bench_section,
            "torch-e2e": e2e_section}


def where_measured(name, report):
    """Where a step's numbers come from, for its heading."""
    if name not in GPU_STEPS:
        return "needs no GPU"
    if report["gpu_present"]:
        return "measured on %s" % (report["measured_on"] or "the GPU")
    return "no GPU on this machine"


def markdown(report, found):
    """The whole Markdown report."""
    environment = report["environment"]
    lines = ["# strata GPU check", "",
             "**Result: %s** (exit status %d), %s, %.0f s of a %d s budget." % (
                 report["result"], report["exit_status"], report["generated"],
                 report["wall_seconds"], report["budget_s"]), "",
             provenance(report["gpu_present"], environment), "", "## Versions", ""]
    lines += versions_table(environment) + ["", "## Steps", ""] + steps_table(report["steps"])
    for step in report["steps"]:
        numbers = step["numbers"]
        if step["name"] in ("environment", "configure", "build") or not numbers or \
                step["status"] == "skipped":
            continue
        lines += ["", "## %s: %s (`%s`, %s)" % (step["title"], step["status"], step["name"],
                                                step["numbers_from"]), ""]
        lines += SECTIONS.get(step["name"], plain_section)(numbers)
    # ctest's failures are shown from its JUnit XML above; every other failure by its log.
    failed = [step for step in report["steps"] if step["status"] in ("failed", "timed out")
              and not (step["name"] == "ctest" and step["numbers"])]
    for step in failed:
        lines += ["", "## Log tail: `%s` (%s)" % (step["name"], step["log"]), "", "```"]
        lines += found.tail(step["name"]) + ["```"]
    return "\n".join(lines) + "\n"


def overall(gpu, exit_status):
    """The run's result in words."""
    if exit_status == 0:
        return "passed"
    if exit_status == 3:
        return "no GPU (every step that could run passed)"
    return "failed" if gpu else "failed (and no GPU)"


def main():
    """Read OUTDIR, write gpu-check.json and gpu-check.md there."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("outdir")
    parser.add_argument("--gpu", choices=("yes", "no"), required=True)
    parser.add_argument("--exit-status", type=int, required=True)
    parser.add_argument("--budget", type=int, required=True)
    parser.add_argument("--wall-seconds", type=float, default=0.0)
    options = parser.parse_args()
    found = Outdir(options.outdir)
    listed = steps(found)
    gpu = options.gpu == "yes"
    environment = NUMBERS["environment"](found)
    report = {
        "schema": 1,
        "generated": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "result": overall(gpu, options.exit_status),
        "exit_status": options.exit_status,
        "gpu_present": gpu,
        "measured_on": (environment or {}).get("gpu") if gpu else None,
        "budget_s": options.budget,
        "wall_seconds": options.wall_seconds,
        "environment": environment,
        "steps": listed,
    }
    for step in listed:
        step["numbers_from"] = where_measured(step["name"], report)
    with open(found.file("gpu-check.json"), "w", encoding="utf-8") as file:
        json.dump(report, file, indent=2)
        file.write("\n")
    with open(found.file("gpu-check.md"), "w", encoding="utf-8") as file:
        file.write(markdown(report, found))


if __name__ == "__main__":
    main()
