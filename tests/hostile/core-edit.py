#!/usr/bin/env python3
"""Hostile copies of a real x86_64 ELF core, for tests/run-hostile-core.sh.

    core-edit.py file-path CORE OUT OLD NEW   NT_FILE: every path OLD becomes NEW
    core-edit.py file-count CORE OUT N        NT_FILE: its count field says N
    core-edit.py note-size CORE OUT           NT_FILE: n_descsz says 2^31
    core-edit.py threads CORE OUT N           N more NT_PRSTATUS notes (copies of
                                              the first, tids 1000000..)
    core-edit.py gc-list CORE OUT G OFF N     N fake thread objects (5.x CommonHeader:
                                              next at 0, tag 8 at 8) in a new PT_LOAD,
                                              linked in front of the GC list whose head
                                              is at G + OFF
    core-edit.py note-past-end CORE OUT       one more PT_LOAD after the rest of the
                                              file (as in a kernel's core, where the
                                              notes come first), and the PT_NOTE's
                                              p_filesz 2^40
    core-edit.py mem-string CORE OUT OLD NEW  the first NUL-terminated OLD in the
                                              process's memory (a PT_LOAD) becomes
                                              NEW, of the same length
    core-edit.py list CORE                    the notes: type, size, what they say

gc-list writes the program headers anew after the end of the copy, one
more PT_LOAD with them.  The notes are written anew after the end of the copy and the PT_NOTE
program header points at them, so that any edit may change their size;
the rest of the file (every PT_LOAD) is the original's, byte for byte.
The copy is written with the original's bytes first, then the notes, in
one pass (a file of any size: the original is streamed, not read whole).
"""
import shutil
import struct
import sys

NT_PRSTATUS, NT_FILE = 1, 0x46494c45


def phdrs(f):
    f.seek(0)
    eh = f.read(64)
    if eh[:4] != b"\x7fELF" or eh[4] != 2 or struct.unpack_from("<H", eh, 16)[0] != 4:
        sys.exit("not a 64-bit ELF core")
    phoff, = struct.unpack_from("<Q", eh, 32)
    phentsize, phnum = struct.unpack_from("<HH", eh, 54)
    out = []
    for i in range(phnum):
        f.seek(phoff + i * phentsize)
        p = struct.unpack("<IIQQQQQQ", f.read(56))
        out.append((phoff + i * phentsize, p))
    return out


def note_phdr(f):
    for at, p in phdrs(f):
        if p[0] == 4:	# PT_NOTE
            return at, p
    sys.exit("no PT_NOTE")


def read_notes(f):
    at, p = note_phdr(f)
    f.seek(p[2])
    data = f.read(p[5])
    notes, off = [], 0
    while off + 12 <= len(data):
        namesz, descsz, typ = struct.unpack_from("<III", data, off)
        off += 12
        name = data[off:off + namesz]
        off += (namesz + 3) & ~3
        desc = data[off:off + descsz]
        off += (descsz + 3) & ~3
        notes.append([name, typ, desc, descsz])
    return notes


def pack(notes):
    out = bytearray()
    for name, typ, desc, descsz in notes:
        out += struct.pack("<III", len(name), descsz, typ)
        out += name + b"\0" * (-len(name) % 4)
        out += desc + b"\0" * (-len(desc) % 4)
    return bytes(out)


def write(src, dst, notes_bytes, chunks=None):
    """Copy src to dst, then append the notes (and chunks, an iterable of
    bytes that follow them inside the same PT_NOTE)."""
    with open(src, "rb") as f:
        at, p = note_phdr(f)
        f.seek(0, 2)
        size = f.tell()
    with open(src, "rb") as f, open(dst, "wb") as o:
        shutil.copyfileobj(f, o, 1 << 20)
        pad = -size % 8
        o.write(b"\0" * pad)
        off = size + pad
        o.write(notes_bytes)
        total = len(notes_bytes)
        for c in chunks or ():
            o.write(c)
            total += len(c)
        p = list(p)
        p[2], p[5] = off, total
        o.seek(at)
        o.write(struct.pack("<IIQQQQQQ", *p))


def gc_list(src, dst, g, off, count):
    """A GC list of count objects of 16 bytes at BASE: object k links to
    k + 1, the last to the list's old head; the head at g + off points at
    the first.  Each is tagged a thread (LUA_VTHREAD, 8) and is not one."""
    import array
    base = 0x100000000000
    with open(src, "rb") as f:
        ph = phdrs(f)
        head_at = None
        for at, p in ph:
            if p[0] == 1 and p[3] <= g + off < p[3] + p[5]:
                head_at = p[2] + (g + off - p[3])
        if head_at is None:
            sys.exit("the list head is in no PT_LOAD of the file")
        f.seek(head_at)
        old_head, = struct.unpack("<Q", f.read(8))
    words = array.array("Q", bytes(16 * count))
    words[0::2] = array.array("Q", range(base + 16, base + 16 * count + 1, 16))
    words[2 * (count - 1)] = old_head
    words[1::2] = array.array("Q", [8]) * count
    append_load(src, dst, base, words, patch=(head_at, struct.pack("<Q", base)))


def append_load(src, dst, vaddr, data, patch=None, note_size=None):
    """Copy src to dst with one more PT_LOAD (RW, at vaddr, holding data:
    bytes or an array) after the rest of the file, the program headers
    written anew after it; patch (offset, bytes) is written over the copy;
    note_size replaces the PT_NOTE's p_filesz."""
    with open(src, "rb") as f:
        ph = phdrs(f)
        f.seek(0, 2)
        size = f.tell()
        f.seek(0)
        eh = bytearray(f.read(64))
    data_off = size + (-size % 4096)
    seg_len = len(data) * getattr(data, "itemsize", 1)
    ph_off = data_off + seg_len
    with open(src, "rb") as f, open(dst, "wb") as o:
        shutil.copyfileobj(f, o, 1 << 20)
        o.write(b"\0" * (data_off - size))
        if hasattr(data, "tofile"):
            data.tofile(o)
        else:
            o.write(data)
        for at, p in ph:
            p = list(p)
            if p[0] == 4 and note_size is not None:
                p[5] = note_size
            o.write(struct.pack("<IIQQQQQQ", *p))
        o.write(struct.pack("<IIQQQQQQ", 1, 6, data_off, vaddr, 0, seg_len, seg_len, 4096))
        struct.pack_into("<Q", eh, 32, ph_off)
        struct.pack_into("<H", eh, 56, len(ph) + 1)
        o.seek(0)
        o.write(eh)
        if patch:
            o.seek(patch[0])
            o.write(patch[1])


def file_note(notes):
    for n in notes:
        if n[1] == NT_FILE and n[0].rstrip(b"\0") == b"CORE":
            return n
    sys.exit("no NT_FILE note")


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "list":
        with open(args[0], "rb") as f:
            for name, typ, desc, descsz in read_notes(f):
                extra = ""
                if typ == NT_FILE:
                    count, = struct.unpack_from("<Q", desc, 0)
                    names = desc[16 + 24 * count:].split(b"\0")
                    extra = " %d files: %s" % (count, b" ".join(sorted(set(names))).decode(errors="replace"))
                print("%s %#x %d%s" % (name.rstrip(b"\0").decode(), typ, descsz, extra))
        return
    src, dst = args[0], args[1]
    with open(src, "rb") as f:
        notes = read_notes(f)
    if cmd == "file-path":
        old, new = args[2].encode(), args[3].encode()
        n = file_note(notes)
        count, = struct.unpack_from("<Q", n[2], 0)
        head = n[2][:16 + 24 * count]
        names = n[2][16 + 24 * count:].split(b"\0")
        hits = sum(1 for x in names if x == old)
        if not hits:
            sys.exit("NT_FILE names no %s" % args[2])
        n[2] = head + b"\0".join(new if x == old else x for x in names)
        n[3] = len(n[2])
        write(src, dst, pack(notes))
    elif cmd == "file-count":
        n = file_note(notes)
        n[2] = struct.pack("<Q", int(args[2])) + n[2][8:]
        write(src, dst, pack(notes))
    elif cmd == "note-size":
        # The NT_FILE note's size field claims 2 GiB: the PT_NOTE's size
        # stays what the notes really take, and the file is whole.
        n = file_note(notes)
        body = pack(notes)
        i = body.find(struct.pack("<III", 5, n[3], NT_FILE) + b"CORE")
        if i < 0:
            sys.exit("NT_FILE header not found")
        body = body[:i + 4] + struct.pack("<I", 1 << 31) + body[i + 8:]
        write(src, dst, body)
    elif cmd == "threads":
        count = int(args[2])
        first = next(n for n in notes if n[1] == NT_PRSTATUS)
        desc = bytearray(first[2])
        body = pack(notes)

        def more():
            batch = bytearray()
            for i in range(count):
                # pr_pid at offset 32 of struct elf_prstatus (x86_64)
                struct.pack_into("<i", desc, 32, 1000000 + i)
                batch += pack([[first[0], NT_PRSTATUS, bytes(desc), len(desc)]])
                if len(batch) > 1 << 20:
                    yield bytes(batch)
                    batch = bytearray()
            yield bytes(batch)
        write(src, dst, body, more())
    elif cmd == "note-past-end":
        append_load(src, dst, 0x100000000000, b"\0" * 4096, note_size=1 << 40)
    elif cmd == "mem-string":
        old, new = args[2].encode() + b"\0", args[3].encode() + b"\0"
        if len(old) != len(new):
            sys.exit("%s and %s differ in length" % (args[2], args[3]))
        shutil.copyfile(src, dst)
        with open(dst, "r+b") as f:
            loads = [p for at, p in phdrs(f) if p[0] == 1 and p[5]]
            for p in loads:
                f.seek(p[2])
                i = f.read(p[5]).find(old)
                if i >= 0:
                    f.seek(p[2] + i)
                    f.write(new)
                    return
        sys.exit("no %s in the memory of the core" % args[2])
    elif cmd == "gc-list":
        gc_list(src, dst, int(args[2], 0), int(args[3], 0), int(args[4]))
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main()
