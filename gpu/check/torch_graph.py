"""CUDA graphs with strata as PyTorch's allocator. torch.cuda.graph captures a
small model's forward step (its allocations come from strata's private graph
pool); the graph is replayed 10 times on fresh inputs, each output checked
against the same step run eagerly; then the output and the graph are dropped,
which releases the pool. A second capture then drops its graph first, as
PyTorch allows: the output, a block of the released pool, must keep its values
while new tensors are allocated and written, until it is freed itself.

    python3 gpu/check/torch_graph.py --out FILE

Fails when strata went in without its extension or without the graph pool
entry points, since then torch.cuda.graph does not reach strata at all.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_common  # noqa: E402  (beside this file)

REPLAYS = 10
BATCH, WIDTH = 64, 256
# Memory strata sets aside for a capture (STRATA_GPU_ALLOC_CONF's
# graph_pool_reserve_mb): ample for this model; an existing setting is kept.
POOL_RESERVE = "graph_pool_reserve_mb:64"
# What the extension wires torch.cuda.graph's hooks to.
GRAPH_POOL_ENTRY_POINTS = ("strata_gpu_begin_allocate_to_pool", "strata_gpu_end_allocate_to_pool",
                           "strata_gpu_release_pool")


def make_model(torch):
    """A small MLP with a normalisation, in inference mode."""
    return torch.nn.Sequential(torch.nn.Linear(WIDTH, 4 * WIDTH), torch.nn.GELU(),
                               torch.nn.Linear(4 * WIDTH, WIDTH),
                               torch.nn.LayerNorm(WIDTH)).cuda().eval()


def capture(torch, model, static_input):
    """The graph of one forward step and its output tensor, warmed up on a side stream first."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            model(static_input)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_output = model(static_input)
    return graph, static_output


def replay_and_check(torch, model, graph, static_input, static_output):
    """The largest difference between a replay's output and the eager step, over REPLAYS inputs."""
    generator = torch.Generator().manual_seed(7)
    largest = 0.0
    for _ in range(REPLAYS):
        fresh = torch.randn(BATCH, WIDTH, generator=generator).cuda()
        static_input.copy_(fresh)
        graph.replay()
        expected = model(fresh)
        largest = max(largest, (static_output - expected).abs().max().item())
    return largest


def output_outlives_graph(torch, model, static_input):
    """Whether an output kept past its graph's release keeps its values under new allocations."""
    graph, static_output = capture(torch, model, static_input)
    graph.replay()
    expected = static_output.clone()
    del graph
    torch.cuda.synchronize()
    others = [torch.full((BATCH, WIDTH), float(n), device="cuda") for n in range(64)]
    torch.cuda.synchronize()
    kept = bool(torch.equal(static_output, expected))
    del others, static_output
    return kept


def library_can_capture(strata_gpu, route):
    """Why torch.cuda.graph cannot reach strata here, or None when it can."""
    if route != "extension":
        return ("strata went in through the plain CUDAPluggableAllocator: " +
                strata_gpu.LOST_WITHOUT_EXTENSION)
    missing = [name for name in GRAPH_POOL_ENTRY_POINTS if not hasattr(strata_gpu.library(), name)]
    if missing:
        return "%s lacks %s: torch.cuda.graph does not reach strata" % (
            strata_gpu.library_path(), ", ".join(missing))
    return None


def main():
    """Capture, replay, compare, release, then an output outliving its graph; strata's totals."""
    options = check_common.arguments(__doc__).parse_args()
    os.environ.setdefault("STRATA_GPU_ALLOC_CONF", POOL_RESERVE)
    torch, route = check_common.torch_with_allocator(options.out, "strata")
    import strata_gpu
    unable = library_can_capture(strata_gpu, route)
    if unable:
        check_common.finish(options.out, "failed", unable)
    stages = {}
    with torch.no_grad():
        model = make_model(torch)
        static_input = torch.randn(BATCH, WIDTH, device="cuda")
        stages["before_capture"] = check_common.strata_stats()
        try:
            graph, static_output = capture(torch, model, static_input)
        except RuntimeError as error:  # strata's refusal says why (missing hooks, pool too small)
            check_common.finish(options.out, "failed", "capture failed: %s" % error,
                                stages=stages)
        stages["after_capture"] = check_common.strata_stats()
        largest = replay_and_check(torch, model, graph, static_input, static_output)
        del static_output, graph
        torch.cuda.synchronize()
        stages["after_release"] = check_common.strata_stats()
        kept = output_outlives_graph(torch, model, static_input)
        stages["after_second_release"] = check_common.strata_stats()
    if largest > 1e-5:
        reason = "replays differ from eager by %g" % largest
    elif not kept:
        reason = "an output kept past its graph's release was overwritten by later allocations"
    else:
        reason = None
    check_common.finish(options.out, "failed" if reason else "passed", reason,
                        replays=REPLAYS, largest_difference=largest,
                        output_outliving_its_graph_kept=kept, stages=stages,
                        strata_conf=os.environ["STRATA_GPU_ALLOC_CONF"])


if __name__ == "__main__":
    main()
