#!/usr/bin/env python3
"""Convert a PyTorch memory snapshot into a strata device trace.

A snapshot is the pickle that torch.cuda.memory._dump_snapshot() writes (the
dict torch.cuda.memory._snapshot() returns). Its "device_traces" hold, per
device, the caching allocator's actions: alloc, free_requested,
free_completed, segment_alloc, segment_free, segment_map and segment_unmap
(expandable segments), oom, with
addr, size and stream. They become device_records (include/strata/trace_format.hpp,
docs/trace.md) that `strata-replay --gpu` replays. torch is not needed: the
pickle is read with the standard library, and one that names any class (a
snapshot holds only dicts, lists, numbers and strings) is refused.

usage: torch_snapshot_to_trace.py SNAPSHOT.pickle TRACE
exit codes: 0 done, 2 bad input (one line on stderr saying what).
"""

import pickle
import struct
import sys

MAGIC = b"STRTRC01"
VERSION = 1
FLAG_DEVICE = 1
KINDS = {
    "alloc": 16,
    "free_requested": 17,
    "free_completed": 18,
    "segment_alloc": 19,
    "segment_free": 20,
    "oom": 21,
    "segment_map": 22,
    "segment_unmap": 23,
}
RECORD = struct.Struct("<QQQQIBBH")


class PlainUnpickler(pickle.Unpickler):
    """Builds builtin values only: a class in the pickle is refused, not imported."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(
            f"the pickle names a class ({module}.{name}); a memory snapshot holds only "
            "dicts, lists, numbers and strings")


def fail(message):
    """One line on stderr, exit code 2."""
    print(f"torch_snapshot_to_trace: {message}", file=sys.stderr)
    sys.exit(2)


def load(path):
    """The snapshot dict, or a clear refusal."""
    try:
        with open(path, "rb") as f:
            snapshot = PlainUnpickler(f).load()
    except OSError as e:
        fail(f"{path}: {e.strerror}")
    except (pickle.UnpicklingError, EOFError, ValueError) as e:
        fail(f"{path}: not a readable pickle: {e}")
    if not isinstance(snapshot, dict) or not isinstance(snapshot.get("device_traces"), list):
        fail(f"{path}: no device_traces list (not a torch.cuda.memory._snapshot() pickle, or "
             "recorded without torch.cuda.memory._record_memory_history())")
    return snapshot


def number(entry, key, where):
    """A non-negative integer field of a trace entry."""
    value = entry.get(key, 0)
    if not isinstance(value, int) or value < 0 or value >= 1 << 64:
        fail(f"{where}: {key} is {value!r}, not a non-negative 64-bit integer")
    return value


def records(snapshot):
    """(record bytes, skipped actions by name) in the order of each device's trace."""
    out = []
    skipped = {}
    for device, trace in enumerate(snapshot["device_traces"]):
        if not isinstance(trace, list):
            fail(f"device_traces[{device}] is not a list")
        for i, entry in enumerate(trace):
            where = f"device_traces[{device}][{i}]"
            if not isinstance(entry, dict):
                fail(f"{where} is not a dict")
            action = entry.get("action")
            if action not in KINDS:
                skipped[str(action)] = skipped.get(str(action), 0) + 1
                continue
            address = 0 if action == "oom" else number(entry, "addr", where)
            out.append(RECORD.pack(len(out), address, number(entry, "size", where),
                                   number(entry, "stream", where), device, KINDS[action], 0, 0))
    return out, skipped


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[-2], file=sys.stderr)
        return 2
    converted, skipped = records(load(argv[1]))
    with open(argv[2], "wb") as f:
        f.write(MAGIC + struct.pack("<II", VERSION, FLAG_DEVICE))
        f.writelines(converted)
    note = ", ".join(f"{count} {name}" for name, count in sorted(skipped.items()))
    print(f"{argv[2]}: {len(converted)} actions" + (f" (skipped: {note})" if note else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
