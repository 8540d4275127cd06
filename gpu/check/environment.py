"""The machine the device check ran on: GPU, driver, CUDA toolkit, PyTorch, CuPy,
compute-sanitizer and the build tools, each probed on its own so a missing one
is recorded as missing rather than stopping the rest.

    python3 gpu/check/environment.py --out OUTDIR/results/environment.json
"""

import os
import platform
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_common  # noqa: E402  (beside this file)


def command_output(*command):
    """The command's stdout, stripped, or None when it is missing, fails or hangs."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=15, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def gpus():
    """Each GPU nvidia-smi lists: name, driver, memory and compute capability."""
    text = command_output("nvidia-smi", "--query-gpu=name,driver_version,memory.total,compute_cap",
                          "--format=csv,noheader")
    if not text:
        return []
    fields = ("name", "driver_version", "memory_total", "compute_capability")
    return [dict(zip(fields, (part.strip() for part in line.split(","))))
            for line in text.splitlines() if line.strip()]


def cuda_driver_api_version():
    """The CUDA version the driver supports, from nvidia-smi's banner."""
    match = re.search(r"CUDA Version:\s*([\d.]+)", command_output("nvidia-smi") or "")
    return match.group(1) if match else None


def first_line_matching(text, pattern):
    """The first match of `pattern` in `text` (its first group), or None."""
    match = re.search(pattern, text or "")
    return match.group(1) if match else None


def torch_versions():
    """PyTorch's version, the CUDA it was built for, cuDNN's, and the device it sees."""
    try:
        import torch
    except ImportError as error:
        return {"installed": False, "error": str(error)}
    found = {"installed": True, "version": torch.__version__, "cuda": torch.version.cuda,
             "cuda_available": torch.cuda.is_available()}
    if found["cuda_available"]:
        found["device"] = torch.cuda.get_device_name(0)
        found["cudnn"] = torch.backends.cudnn.version()
    return found


def cupy_versions():
    """CuPy's version and the CUDA runtime and driver versions it reports."""
    try:
        import cupy
    except ImportError as error:
        return {"installed": False, "error": str(error)}
    found = {"installed": True, "version": cupy.__version__}
    try:
        found["cuda_runtime"] = cupy.cuda.runtime.runtimeGetVersion()
        found["cuda_driver"] = cupy.cuda.runtime.driverGetVersion()
    except Exception as error:  # no GPU or no driver: CuPy says which
        found["error"] = str(error)
    return found


def tool_versions():
    """The build and check tools' versions (None where a tool is missing)."""
    return {
        "nvcc": first_line_matching(command_output("nvcc", "--version"), r"release ([^\n]+)"),
        "compute_sanitizer": first_line_matching(command_output("compute-sanitizer", "--version"),
                                                 r"Version ([^\s]+)"),
        "cmake": first_line_matching(command_output("cmake", "--version"), r"version (\S+)"),
        "ninja": command_output("ninja", "--version"),
        "gcc": first_line_matching(command_output("gcc", "--version"), r"\) (\S+)"),
        "python": platform.python_version(),
    }


def main():
    """Probe everything and write the result (always passed: missing pieces are facts)."""
    options = check_common.arguments(__doc__).parse_args()
    listed = gpus()
    check_common.finish(
        options.out, "passed",
        gpus=listed,
        gpu=listed[0]["name"] if listed else None,
        driver=listed[0]["driver_version"] if listed else None,
        cuda_driver_api=cuda_driver_api_version(),
        torch=torch_versions(),
        cupy=cupy_versions(),
        tools=tool_versions(),
        host={"name": platform.node(), "cpus": os.cpu_count(), "system": platform.platform()},
        commit=command_output("git", "rev-parse", "HEAD"))


if __name__ == "__main__":
    main()
