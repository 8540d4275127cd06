#!/usr/bin/env python3
"""Runs strata-bench on three tiny scenarios, in two passes, and checks the results.json
it writes: two malloc scenarios, run in every allocator's worker, and one strategy
scenario, run in the host's (glibc's) worker only, with a metric per strategy.

usage: smoke_test.py STRATA_BENCH_EXECUTABLE"""

import json
import os
import subprocess
import sys
import tempfile

SCENARIOS = ["cell/single-pairs", "cell/pool-pairs", "session/overflow"]
MALLOC_SCENARIOS = ["cell/single-pairs", "session/overflow"]
POOL_STRATEGIES = {"strata object_pool<T>", "strata fixed_pool", "pmr::unsynchronized_pool",
                   "malloc"}


def check(condition, message):
    if not condition:
        print("FAIL:", message)
        sys.exit(1)


def main():
    executable = sys.argv[1]
    with tempfile.TemporaryDirectory() as out:
        command = [executable, "--only", ",".join(SCENARIOS), "--allocators",
                   "strata,glibc,mimalloc", "--repetitions", "2", "--warmups", "0",
                   "--out", out, "--no-render", "--json",
                   "--strata-lib", os.path.join(out, "no-such-libstrata-malloc.so")]
        finished = subprocess.run(command, capture_output=True, text=True, timeout=120)
        check(finished.returncode == 0, f"exit status {finished.returncode}: {finished.stderr}")
        with open(os.path.join(out, "results.json"), encoding="utf-8") as file:
            results = json.load(file)
        check(json.loads(finished.stdout) == results, "--json output differs from results.json")

    check([s["name"] for s in results["scenarios"]] == SCENARIOS, "--only selected other scenarios")
    pool = next(s for s in results["scenarios"] if s["name"] == "cell/pool-pairs")
    check(pool["columns"] == "strategies" and pool["host"] == "glibc", f"strategy scenario {pool}")
    status = {a["name"]: a for a in results["allocators"]}
    check(status["strata"]["status"] == "pending", "strata without its library is not pending")
    check(status["glibc"]["status"] == "measured", f"glibc not measured: {status['glibc']}")
    check(results["machine"].get("cpu"), "machine description missing")

    measured = [a for a in ("glibc", "mimalloc") if status[a]["status"] == "measured"]
    for allocator in measured:
        mine = [r for r in results["results"] if r["allocator"] == allocator]
        # One record per scenario and pass, one measured round each; the strategy
        # scenario in the host's worker only.
        expected = SCENARIOS if allocator == "glibc" else MALLOC_SCENARIOS
        check(sorted(r["scenario"] for r in mine) == sorted(expected * 2),
              f"{allocator}: records {sorted(r['scenario'] for r in mine)}")
        records = {r["scenario"]: r for r in mine}
        pairs = {m["label"]: m for m in records["cell/single-pairs"]["metrics"]}
        check(set(pairs) >= {"16 B", "1 KB", "16 KB"}, f"{allocator}: pair sizes {sorted(pairs)}")
        for metric in pairs.values():
            check(len(metric["values"]) == 1 and metric["values"][0] > 0,
                  f"{allocator}: bad value in {metric}")
        overflow = records["session/overflow"]["distributions"][0]
        check(overflow["count"] > 0 and len(overflow["quantiles"]) == 101,
              f"{allocator}: overflow distribution {overflow['count']}")
    for record in (r for r in results["results"] if r["scenario"] == "cell/pool-pairs"):
        strategies = {m.get("strategy") for m in record["metrics"]}
        check(strategies == POOL_STRATEGIES, f"pool strategies {strategies}")
        check(all(len(m["values"]) == 1 and m["values"][0] > 0 for m in record["metrics"]),
              f"bad pool pair values {record['metrics']}")
    if "mimalloc" in measured:
        record = next(r for r in results["results"] if r["allocator"] == "mimalloc")
        check("mimalloc" in record["malloc_from"], f"LD_PRELOAD not in effect: {record['malloc_from']}")
    print("smoke_test: ok")


if __name__ == "__main__":
    main()
