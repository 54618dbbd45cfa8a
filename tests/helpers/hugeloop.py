#!/usr/bin/env python3
"""hugeloop.py: a sparse FAT32 image that claims the largest cluster count
FAT32 allows (0x0FFFFFF5 clusters of 512 bytes, one FAT of 1 GiB), written
from scratch so that it costs about 12 KiB of disk. Its root directory
(cluster 2) holds LOOP.BIN, whose chain 3 -> 4 -> 3 loops, and LOOPDIR, a
directory whose chain 5 -> 6 -> 5 loops and whose first cluster holds only
"." and "..". A chain walk that counts to the volume's cluster count
before it calls a loop a loop takes seconds and, collecting a run per
link, gigabytes.

    hugeloop.py IMAGE
"""

import struct
import sys

NCLUS = 0x0FFFFFF5
SEC = 512
RSVD = 32


def slot(name, attr, clus, size):
    e = bytearray(32)
    e[0:11] = name
    e[11] = attr
    struct.pack_into("<H", e, 20, clus >> 16)
    struct.pack_into("<H", e, 26, clus & 0xFFFF)
    struct.pack_into("<I", e, 28, size)
    return bytes(e)


def main(path):
    fat_secs = ((NCLUS + 2) * 4 + SEC - 1) // SEC
    tot = RSVD + fat_secs + NCLUS
    bs = bytearray(SEC)
    bs[0:11] = b"\xeb\x58\x90MSWIN4.1"
    struct.pack_into("<HBHBHHBHHHII", bs, 11, SEC, 1, RSVD, 1, 0, 0, 0xF8,
                     0, 63, 255, 0, tot)
    struct.pack_into("<IHHIHH", bs, 36, fat_secs, 0, 0, 2, 1, 6)
    bs[66] = 0x29
    struct.pack_into("<I", bs, 67, 0x1234)
    bs[71:90] = b"NO NAME    FAT32   "
    bs[510:512] = b"\x55\xaa"
    fsi = bytearray(SEC)
    struct.pack_into("<I", fsi, 0, 0x41615252)
    struct.pack_into("<III", fsi, 484, 0x61417272, 0xFFFFFFFF, 0xFFFFFFFF)
    fsi[510:512] = b"\x55\xaa"
    data = (RSVD + fat_secs) * SEC
    eoc = 0x0FFFFFFF
    with open(path, "wb") as f:
        f.truncate(tot * SEC)
        for sec in (0, 6):
            f.seek(sec * SEC)
            f.write(bs + fsi)
        f.seek(RSVD * SEC)
        f.write(struct.pack("<7I", 0x0FFFFFF8, eoc, eoc, 4, 3, 6, 5))
        f.seek(data)
        f.write(slot(b"LOOP    BIN", 0x20, 3, 1024))
        f.write(slot(b"LOOPDIR    ", 0x10, 5, 0))
        f.seek(data + 3 * SEC)
        f.write(slot(b".          ", 0x10, 5, 0))
        f.write(slot(b"..         ", 0x10, 0, 0))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: hugeloop.py IMAGE")
    main(sys.argv[1])
