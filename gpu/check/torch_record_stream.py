"""Tensor.record_stream with strata as PyTorch's allocator. A buffer allocated
on the main stream is written by a side stream at the end of a long run of
matmuls there, record_stream'd to the side stream and freed at once; a new
allocation of the same size on the main stream, made while the side stream is
still busy, must not overlap it, and the main stream's writes to the new
tensor must survive the side stream's late write.

    python3 gpu/check/torch_record_stream.py --out FILE

The same sequence without record_stream runs after, as the control: there a
caching allocator may hand the buffer straight back (it was freed in the main
stream's order), and the side stream's write then lands in the new tensor. The
control is reported, not judged: it shows the check can see the hazard.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_common  # noqa: E402  (beside this file)

BUFFER_ELEMENTS = 16 << 20  # 64 MB of float32
MATMUL_SIZE = 4096
MATMULS = 60  # a few hundred milliseconds of side-stream work on a current GPU


def overlaps(first, second, size):
    """Whether the byte ranges [first, first + size) and [second, second + size) meet."""
    return first < second + size and second < first + size


def free_under_side_work(torch, side, operand, record):
    """One round: a side stream's late write into a freed buffer, then a main-stream tensor."""
    main = torch.cuda.current_stream()
    buffer = torch.empty(BUFFER_ELEMENTS, device="cuda")
    side.wait_stream(main)
    with torch.cuda.stream(side):
        for _ in range(MATMULS):
            torch.mm(operand, operand)
        buffer.fill_(1.0)  # the side stream's last write, far behind the main stream
        if record:
            buffer.record_stream(side)
    address, size = buffer.data_ptr(), buffer.numel() * buffer.element_size()
    del buffer
    side_busy = not side.query()
    fresh = torch.empty(BUFFER_ELEMENTS, device="cuda")
    overlapped = overlaps(address, fresh.data_ptr(), size)
    fresh.fill_(2.0)
    side.synchronize()
    torch.cuda.synchronize()
    intact = bool((fresh == 2.0).all().item())
    return {"side_stream_busy_at_allocation": side_busy, "overlapped": overlapped,
            "data_intact": intact}


def main():
    """The checked round (with record_stream) and the control round (without)."""
    options = check_common.arguments(__doc__).parse_args()
    torch, route = check_common.torch_with_allocator(options.out, "strata")
    import strata_gpu
    if route != "extension":
        check_common.finish(options.out, "failed", "strata went in through the plain "
                            "CUDAPluggableAllocator: " + strata_gpu.LOST_WITHOUT_EXTENSION)
    side = torch.cuda.Stream()
    operand = torch.randn(MATMUL_SIZE, MATMUL_SIZE, device="cuda")
    torch.mm(operand, operand)  # cuBLAS set up before the timed rounds
    torch.cuda.synchronize()
    checked = free_under_side_work(torch, side, operand, record=True)
    control = free_under_side_work(torch, side, operand, record=False)
    if not checked["side_stream_busy_at_allocation"]:
        reason = "inconclusive: the side stream finished before the new allocation"
    elif checked["overlapped"] or not checked["data_intact"]:
        reason = "the new tensor reused the recorded buffer while the side stream still wrote it"
    else:
        reason = None
    check_common.finish(options.out, "failed" if reason else "passed", reason,
                        with_record_stream=checked, control_without_record_stream=control,
                        strata=check_common.strata_stats())


if __name__ == "__main__":
    main()
