"""Name addresses offline: each address's mapping gives the ELF file and the
offset into it, the file's program headers turn that into a link-time address,
and addr2line (binutils) names the function and line; without addr2line, or
for a file that is gone, the frame stays file+offset."""
import os
import shutil
import struct
import subprocess


def load_segments(path):
    """(file offset, virtual address, file size) of each PT_LOAD of a 64-bit ELF file."""
    with open(path, "rb") as f:
        header = f.read(64)
        if header[:4] != b"\x7fELF" or header[4] != 2:
            return []
        endian = "<" if header[5] == 1 else ">"
        phoff, = struct.unpack_from(endian + "Q", header, 32)
        phentsize, phnum = struct.unpack_from(endian + "HH", header, 54)
        f.seek(phoff)
        table = f.read(phentsize * phnum)
    out = []
    for i in range(phnum):
        p_type, _, p_offset, p_vaddr, _, p_filesz = struct.unpack_from(
            endian + "IIQQQQ", table, i * phentsize
        )
        if p_type == 1:
            out.append((p_offset, p_vaddr, p_filesz))
    return out


class Symboliser:
    def __init__(self, mappings):
        self.mappings = mappings
        self.segments = {}
        self.names = {}
        self.addr2line = shutil.which("addr2line")

    def file_address(self, address, mapping):
        """The link-time address of `address` in its mapping's file, or None."""
        path = mapping["path"]
        if path not in self.segments:
            try:
                self.segments[path] = load_segments(path)
            except OSError:
                self.segments[path] = []
        offset = address - mapping["start"] + mapping["offset"]
        for p_offset, p_vaddr, p_filesz in self.segments[path]:
            if p_offset <= offset < p_offset + p_filesz:
                return offset - p_offset + p_vaddr
        return None

    def lookup(self, path, address):
        """addr2line's function and line for one address (cached per address)."""
        key = (path, address)
        if key not in self.names:
            name = None
            if self.addr2line:
                out = subprocess.run(
                    [self.addr2line, "-f", "-C", "-e", path, hex(address)],
                    capture_output=True, text=True, check=False,
                ).stdout.split("\n")
                if len(out) >= 2 and out[0] not in ("??", ""):
                    line = out[1] if not out[1].startswith("??") else ""
                    name = out[0] + (f" {os.path.basename(line.split(' ')[0])}" if line else "")
            self.names[key] = name
        return self.names[key]

    def name(self, location):
        if location is None:
            return "[unknown]"
        address, mapping = location
        if mapping is None:
            return hex(address)
        base = os.path.basename(mapping["path"])
        file_address = self.file_address(address, mapping)
        if file_address is None:
            return f"{base}+{hex(address - mapping['start'] + mapping['offset'])}"
        return self.lookup(mapping["path"], file_address) or f"{base}+{hex(file_address)}"
