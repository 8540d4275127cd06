"""End to end under PyTorch: a small transformer (4 layers, d_model 512, 8 heads)
trained for a fixed number of steps on random tokens whose sequence lengths
vary from step to step (64 to 1024, a fixed seeded list: the case that
fragments a caching allocator), once per allocator, each in its own process.

    python3 gpu/check/torch_e2e.py run --allocator native --out native.json
    python3 gpu/check/torch_e2e.py run --allocator strata --out strata.json
    python3 gpu/check/torch_e2e.py compare native.json strata.json --out e2e.json

Same seed, deterministic algorithms, no dropout: the two runs compute the same
losses, and compare passes when the final losses agree within 1e-3 relative.
Each run reports the median step time after the warm-up steps, the peak
memory reserved and allocated, and every step's loss. PyTorch's own counters
(torch.cuda.max_memory_reserved) are not kept for a pluggable allocator, so
for strata the peaks are strata's (strata_gpu.stats: reserved_bytes_peak and
allocated_bytes_peak), and the result says which counters it read.
"""

import argparse
import json
import os
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_common  # noqa: E402  (beside this file)

SEED = 20240611
STEPS = 60
WARM_UP_STEPS = 10
BATCH = 16
VOCABULARY = 8192
D_MODEL, HEADS, LAYERS, FEED_FORWARD = 512, 8, 4, 2048
SEQUENCE_LENGTHS = (64, 96, 128, 192, 256, 384, 512, 640, 768, 896, 1024)
LOSS_TOLERANCE = 1e-3


def sequence_lengths():
    """Each step's sequence length, drawn from SEQUENCE_LENGTHS by the fixed seed."""
    draw = random.Random(SEED)
    return [draw.choice(SEQUENCE_LENGTHS) for _ in range(STEPS)]


def make_model(torch):
    """Token embedding, a transformer encoder stack and a vocabulary head."""
    layer = torch.nn.TransformerEncoderLayer(D_MODEL, HEADS, FEED_FORWARD, dropout=0.0,
                                             batch_first=True)
    return torch.nn.Sequential(torch.nn.Embedding(VOCABULARY, D_MODEL),
                               torch.nn.TransformerEncoder(layer, LAYERS,
                                                           enable_nested_tensor=False),
                               torch.nn.Linear(D_MODEL, VOCABULARY)).cuda()


def batch_of_tokens(torch, step, length):
    """Step `step`'s random tokens, the same in every run (drawn on the CPU)."""
    generator = torch.Generator().manual_seed(SEED + step)
    return torch.randint(0, VOCABULARY, (BATCH, length + 1), generator=generator).cuda()


def train(torch):
    """Train STEPS steps; each step's seconds and loss."""
    model = make_model(torch)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    seconds, losses = [], []
    for step, length in enumerate(sequence_lengths()):
        tokens = batch_of_tokens(torch, step, length)
        torch.cuda.synchronize()
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        logits = model(tokens[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, VOCABULARY),
                                                 tokens[:, 1:].reshape(-1))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())  # waits for the step
        seconds.append(time.perf_counter() - start)
    return seconds, losses


def peak_memory(torch, allocator):
    """Peak bytes reserved and allocated, from the counters the allocator keeps."""
    if allocator == "strata":
        totals = check_common.strata_stats()
        return {"counters": "strata_gpu.stats (PyTorch keeps none for a pluggable allocator)",
                "max_reserved_bytes": totals["reserved_bytes_peak"],
                "max_allocated_bytes": totals["allocated_bytes_peak"], "strata": totals}
    return {"counters": "torch.cuda.max_memory_reserved / max_memory_allocated",
            "max_reserved_bytes": torch.cuda.max_memory_reserved(),
            "max_allocated_bytes": torch.cuda.max_memory_allocated()}


def run(options):
    """One training run under one allocator."""
    # cuBLAS reads this when its first handle is made: deterministic workspaces.
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch, route = check_common.torch_with_allocator(options.out, options.allocator)
    torch.manual_seed(SEED)
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cudnn.benchmark = False
    clock = check_common.Stopwatch()
    seconds, losses = train(torch)
    measured = seconds[WARM_UP_STEPS:]
    check_common.finish(
        options.out, "passed", allocator=options.allocator, route=route,
        device=torch.cuda.get_device_name(0), torch=torch.__version__,
        steps=STEPS, warm_up_steps=WARM_UP_STEPS, batch=BATCH,
        median_step_ms=round(1e3 * statistics.median(measured), 3),
        measured_steps_s=round(sum(measured), 3), total_s=clock.seconds(),
        final_loss=losses[-1], losses=losses, sequence_lengths=sequence_lengths(),
        memory=peak_memory(torch, options.allocator))


def compare(options):
    """The two runs side by side; passed when their final losses agree within LOSS_TOLERANCE."""
    runs = []
    for path in options.runs:
        with open(path, encoding="utf-8") as file:
            runs.append(json.load(file))
    if any(each.get("status") != "passed" for each in runs):
        check_common.finish(options.out, "failed", "a run did not finish: " + ", ".join(
            "%s %s" % (path, each.get("status")) for path, each in zip(options.runs, runs)))
    first, second = runs
    difference = abs(first["final_loss"] - second["final_loss"]) / abs(first["final_loss"])
    largest = max(abs(a - b) / abs(a) for a, b in zip(first["losses"], second["losses"]))
    summary = {each["allocator"]: {key: each[key] for key in
                                   ("median_step_ms", "measured_steps_s", "final_loss", "route")}
               | {"max_reserved_bytes": each["memory"]["max_reserved_bytes"],
                  "max_allocated_bytes": each["memory"]["max_allocated_bytes"],
                  "memory_counters": each["memory"]["counters"]}
               for each in runs}
    agreed = difference <= LOSS_TOLERANCE
    check_common.finish(
        options.out, "passed" if agreed else "failed",
        None if agreed else "final losses differ by %.3g relative (limit %g)"
        % (difference, LOSS_TOLERANCE),
        runs=summary, final_loss_relative_difference=difference,
        largest_step_loss_relative_difference=largest, tolerance=LOSS_TOLERANCE,
        step_time_ratio=round(second["median_step_ms"] / first["median_step_ms"], 3),
        device=first["device"])


def main():
    """`run` one allocator, or `compare` two runs."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    one = commands.add_parser("run", help="train under one allocator")
    one.add_argument("--allocator", choices=check_common.TORCH_ALLOCATORS, required=True)
    one.add_argument("--out", required=True)
    both = commands.add_parser("compare", help="compare two runs' results")
    both.add_argument("runs", nargs=2, help="the two runs' result files")
    both.add_argument("--out", required=True)
    options = parser.parse_args()
    (run if options.command == "run" else compare)(options)


if __name__ == "__main__":
    main()
