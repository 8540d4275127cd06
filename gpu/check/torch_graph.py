"""One CUDA graph captured and replayed with strata as PyTorch's allocator:
torch.cuda.graph over a small model's forward step (its allocations come from
strata's private graph pool), replayed 10 times on fresh inputs, each output
checked against the same step run eagerly; then the graph is dropped, which
releases its pool.

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


def main():
    """Capture, replay, compare, release; strata's totals at each stage."""
    options = check_common.arguments(__doc__).parse_args()
    os.environ.setdefault("STRATA_GPU_ALLOC_CONF", POOL_RESERVE)
    torch, route = check_common.torch_with_allocator(options.out, "strata")
    import strata_gpu
    if route != "extension":
        check_common.finish(options.out, "failed", "strata went in through the plain "
                            "CUDAPluggableAllocator: " + strata_gpu.LOST_WITHOUT_EXTENSION)
    missing = [name for name in GRAPH_POOL_ENTRY_POINTS if not hasattr(strata_gpu.library(), name)]
    if missing:
        check_common.finish(options.out, "failed", "%s lacks %s: torch.cuda.graph does not reach "
                            "strata" % (strata_gpu.library_path(), ", ".join(missing)))
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
        del graph, static_output
        torch.cuda.synchronize()
        stages["after_release"] = check_common.strata_stats()
    agreed = largest <= 1e-5
    check_common.finish(options.out, "passed" if agreed else "failed",
                        None if agreed else "replays differ from eager by %g" % largest,
                        replays=REPLAYS, largest_difference=largest, stages=stages,
                        strata_conf=os.environ["STRATA_GPU_ALLOC_CONF"])


if __name__ == "__main__":
    main()
