#!/usr/bin/env python3
"""Write a small synthetic PyTorch memory snapshot (the pickle of
torch.cuda.memory._snapshot(), its keys and action names as PyTorch writes
them) for the converter's and strata-replay --gpu's test.

Device 0, stream 7: a 100 MiB block freed, then split by a 30 MiB request, so
80 MiB more runs out of a 128 MiB device (the trace ends in an oom), which
max_split_size_mb:64 avoids; small blocks on the default stream beside it.
Device 1 holds one block, and a "snapshot" action the converter skips.

usage: torch_snapshot_fixture.py OUT.pickle
"""

import pickle
import sys

MIB = 1 << 20
FRAMES = [{"filename": "train.py", "line": 42, "name": "forward"}]


def entry(action, addr, size, stream, time_us):
    return {"action": action, "addr": addr, "size": size, "stream": stream,
            "time_us": time_us, "frames": FRAMES}


def device0():
    big, small = 0x7F0000000000, 0x7F1000000000
    return [
        entry("segment_alloc", small, 2 * MIB, 0, 1),
        entry("alloc", small, 4096, 0, 2),
        entry("alloc", small + 4096, 1000, 0, 3),
        entry("segment_alloc", big, 100 * MIB, 7, 4),
        entry("alloc", big, 100 * MIB, 7, 5),
        entry("free_requested", small, 4096, 0, 6),
        entry("free_completed", small, 4096, 0, 7),
        entry("free_requested", big, 100 * MIB, 7, 8),
        entry("free_completed", big, 100 * MIB, 7, 9),
        entry("alloc", big, 30 * MIB, 7, 10),
        dict(entry("oom", 28 * MIB, 80 * MIB, 7, 11), device_free=28 * MIB),
    ]


def main(argv):
    snapshot = {
        "segments": [],
        "device_traces": [device0(), [entry("snapshot", 0, 0, 0, 1),
                                      entry("segment_alloc", 0x1000, 2 * MIB, 0, 2),
                                      entry("alloc", 0x1000, 512, 0, 3)]],
        "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": ""},
    }
    with open(argv[1], "wb") as f:
        pickle.dump(snapshot, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
