#!/usr/bin/env python3
"""mutate.py CORE OUT SEED ADDR...

Writes OUT: CORE with 1 to 8 aligned 8-byte words replaced, each in the
64 KiB either side of one of the ADDRs (a thread, a VM: where the
decoder reads) and within the bytes a PT_LOAD segment holds in the
file.  The new word is, at random, zero, all ones, a small number, an
address near the old value, the old value with one bit flipped, or
random bits.  Deterministic for a SEED.
"""
import random
import struct
import sys


def segments(data):
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    out = []
    for i in range(phnum):
        p_type, _flags, off, vaddr, _pa, filesz, _memsz, _al = struct.unpack_from(
            "<IIQQQQQQ", data, phoff + i * phentsize)
        if p_type == 1 and filesz:
            out.append((vaddr, off, filesz))
    return out


def main():
    core, out, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
    addrs = [int(a, 16) for a in sys.argv[4:]]
    rnd = random.Random(seed)
    data = bytearray(open(core, "rb").read())
    segs = segments(data)
    spots = []
    for a in addrs:
        for vaddr, off, filesz in segs:
            lo, hi = max(vaddr, a - 65536), min(vaddr + filesz, a + 65536)
            if lo < hi:
                spots.append((lo & ~7, hi, vaddr, off))
    if not spots:
        sys.exit("mutate: no segment holds the addresses")
    for _ in range(rnd.randint(1, 8)):
        lo, hi, vaddr, off = rnd.choice(spots)
        at = off + (rnd.randrange(lo, max(lo + 8, hi - 8)) & ~7) - vaddr
        old, = struct.unpack_from("<Q", data, at)
        new = rnd.choice([
            0, (1 << 64) - 1, rnd.randrange(1, 256),
            (old + rnd.randrange(-4096, 4096)) & ((1 << 64) - 1),
            old ^ (1 << rnd.randrange(64)), rnd.getrandbits(64)])
        struct.pack_into("<Q", data, at, new)
    open(out, "wb").write(data)


main()
