#!/usr/bin/env python3
"""bench/warm.py FILE...: make a fresh copy of an image look like a card
that has been in use a while, before it is timed.

`cp --sparse=always` leaves the copy's data dirty in the page cache, or
(copy_file_range) not in it at all: the first fsync of the timed run would
write back the copy, and its first reads would wait for the disk.  A
per-cluster run pays that once among thousands of fsyncs, a batched run
among five, so the set-up would be charged to the side with the fewest
fsyncs.  This fsyncs each FILE and reads its data extents (holes are
skipped: a 4.5 GiB sparse image holds a few MiB of data), so the run
measures its own reads and writes only.
"""
import os
import sys

CHUNK = 1 << 20

for path in sys.argv[1:]:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        end = os.fstat(fd).st_size
        off = 0
        while off < end:
            try:
                off = os.lseek(fd, off, os.SEEK_DATA)
            except OSError:  # ENXIO: no data past off
                break
            hole = os.lseek(fd, off, os.SEEK_HOLE)
            while off < hole:
                n = len(os.pread(fd, min(CHUNK, hole - off), off))
                if n == 0:
                    break
                off += n
    finally:
        os.close(fd)
