"""Build strata's PyTorch extension (gpu/integration/torch) into PyTorch's
extension cache ($TORCH_EXTENSIONS_DIR), so the PyTorch pieces that follow load
it from there instead of each compiling it. Needs PyTorch and the CUDA
toolkit's headers, not a GPU.

    python3 gpu/check/build_torch_extension.py --out OUTDIR/results/torch-extension.json
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_common  # noqa: E402  (beside this file)


def main():
    """Build (or find built) the extension; failed with the compiler's complaint otherwise."""
    options = check_common.arguments(__doc__).parse_args()
    torch = check_common.import_or_skip(options.out, "torch")
    import strata_gpu
    clock = check_common.Stopwatch()
    try:
        extension = strata_gpu.torch_extension(verbose=True)
    except Exception as error:  # the build's own failure, reported as it is
        check_common.finish(options.out, "failed", "%s: %s" % (type(error).__name__, error),
                            seconds=clock.seconds(), torch=torch.__version__)
    check_common.finish(options.out, "passed", seconds=clock.seconds(), torch=torch.__version__,
                        module=extension.__file__,
                        cache=os.environ.get("TORCH_EXTENSIONS_DIR", "PyTorch's default"))


if __name__ == "__main__":
    main()
