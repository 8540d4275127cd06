"""Out of memory under strata as PyTorch's allocator: a request for twice the
GPU's memory must raise torch.cuda.OutOfMemoryError (torch.OutOfMemoryError
from PyTorch 2.5) carrying strata's message, and allocation must work again
after it; torch.cuda.empty_cache must reach strata's cache.

    python3 gpu/check/torch_oom.py --out FILE
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_common  # noqa: E402  (beside this file)


def too_much(torch):
    """The error a request for twice the GPU's memory raised, or None when none was."""
    _, total = torch.cuda.mem_get_info()
    try:
        torch.empty(2 * total, dtype=torch.uint8, device="cuda")
    except RuntimeError as error:  # torch.cuda.OutOfMemoryError is one
        return error
    return None


def main():
    """Ask for too much, then check strata recovers and empties its cache on request."""
    options = check_common.arguments(__doc__).parse_args()
    torch, route = check_common.torch_with_allocator(options.out, "strata")
    kept = torch.ones(1 << 20, device="cuda")
    error = too_much(torch)
    if error is None:
        check_common.finish(options.out, "failed", "no torch.cuda.OutOfMemoryError was raised",
                            route=route)
    recovered = torch.ones(1 << 20, device="cuda")
    working = (recovered + kept).sum().item() == 2 * (1 << 20)
    del recovered
    before = check_common.strata_stats()
    torch.cuda.empty_cache()
    after = check_common.strata_stats()
    message = str(error)
    if not isinstance(error, torch.cuda.OutOfMemoryError):
        reason = "raised %s, not torch.cuda.OutOfMemoryError" % type(error).__name__
    elif "strata" not in message:
        reason = "the error does not carry strata's message"
    elif not working:
        reason = "allocation after the error computed a wrong sum"
    else:
        reason = None
    check_common.finish(options.out, "failed" if reason else "passed", reason, route=route,
                        message=message.splitlines()[0], error_type=type(error).__name__,
                        strata_ooms=after["ooms"],
                        reserved_bytes_before_empty_cache=before["reserved_bytes"],
                        reserved_bytes_after_empty_cache=after["reserved_bytes"])


if __name__ == "__main__":
    main()
