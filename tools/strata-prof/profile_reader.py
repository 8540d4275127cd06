"""Decode pprof's profile.proto (uncompressed or gzip) into the few fields a heap
profile needs; any malformed byte raises ProfileError with where it was."""
import gzip
import zlib


class ProfileError(Exception):
    pass


class Profile:
    def __init__(self):
        self.sample_types = []  # (type, unit)
        self.samples = []  # (location ids, values)
        self.locations = {}  # id -> (address, mapping)
        self.mappings = {}  # id -> dict(start, limit, offset, path)
        self.period = 0


def varint(data, pos):
    """The varint at pos and the position after it."""
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ProfileError(f"truncated varint at byte {pos}")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ProfileError(f"varint too long at byte {pos}")


def fields(data):
    """(field number, wire type, value) of each field of a message: ints for
    varints, bytes for length-delimited fields; other wire types are errors."""
    pos = 0
    while pos < len(data):
        key, pos = varint(data, pos)
        field, wire = key >> 3, key & 7
        if field == 0:
            raise ProfileError(f"field number 0 at byte {pos}")
        if wire == 0:
            value, pos = varint(data, pos)
        elif wire == 2:
            length, pos = varint(data, pos)
            if pos + length > len(data):
                raise ProfileError(f"field {field} runs past the end ({length} bytes at byte {pos})")
            value, pos = data[pos : pos + length], pos + length
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            if pos + size > len(data):
                raise ProfileError(f"truncated fixed field at byte {pos}")
            value, pos = int.from_bytes(data[pos : pos + size], "little"), pos + size
        else:
            raise ProfileError(f"unknown wire type {wire} at byte {pos}")
        yield field, wire, value


def repeated_ints(wire, value):
    """A repeated integer field, packed or not."""
    if wire == 0:
        return [value]
    out, pos = [], 0
    while pos < len(value):
        v, pos = varint(value, pos)
        out.append(v)
    return out


def signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def message(wire, value, what):
    if wire != 2:
        raise ProfileError(f"{what} is not a message")
    return dict_of(value)


def dict_of(data):
    """Field number -> list of (wire, value)."""
    out = {}
    for field, wire, value in fields(data):
        out.setdefault(field, []).append((wire, value))
    return out


def first(msg, field, default=0):
    values = msg.get(field)
    return values[0][1] if values else default


def read_profile(data):
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as e:
            raise ProfileError(f"bad gzip data ({e})") from None
    if not data:
        raise ProfileError("empty file")
    top = dict_of(data)
    strings = []
    for wire, value in top.get(6, []):
        if wire != 2:
            raise ProfileError("a string table entry is not a string")
        strings.append(value.decode("utf-8", "replace"))
    if not strings or strings[0] != "":
        raise ProfileError("no string table (or its first entry is not empty)")

    def string(i):
        if not 0 <= i < len(strings):
            raise ProfileError(f"string index {i} out of range")
        return strings[i]

    p = Profile()
    for wire, value in top.get(1, []):
        m = message(wire, value, "a sample type")
        p.sample_types.append((string(first(m, 1)), string(first(m, 2))))
    if not p.sample_types:
        raise ProfileError("no sample types")
    for wire, value in top.get(3, []):
        m = message(wire, value, "a mapping")
        p.mappings[first(m, 1)] = dict(
            start=first(m, 2), limit=first(m, 3), offset=first(m, 4), path=string(first(m, 5))
        )
    for wire, value in top.get(4, []):
        m = message(wire, value, "a location")
        mapping_id = first(m, 2)
        if mapping_id and mapping_id not in p.mappings:
            raise ProfileError(f"location names mapping {mapping_id}, which is missing")
        p.locations[first(m, 1)] = (first(m, 3), p.mappings.get(mapping_id))
    for wire, value in top.get(2, []):
        m = message(wire, value, "a sample")
        ids = [i for w, v in m.get(1, []) for i in repeated_ints(w, v)]
        values = [signed(x) for w, v in m.get(2, []) for x in repeated_ints(w, v)]
        if len(values) != len(p.sample_types):
            raise ProfileError(f"a sample has {len(values)} values for {len(p.sample_types)} types")
        for i in ids:
            if i not in p.locations:
                raise ProfileError(f"a sample names location {i}, which is missing")
        p.samples.append((ids, values))
    p.period = first(top, 12)
    return p
