#!/usr/bin/env python3
"""pad.py: turn a fuzz input into the image the targets see, for
reproducing a finding with the programs.

    tests/fuzz/pad.py INPUT IMAGE

IMAGE gets INPUT's bytes, then a hole up to the size the boot sector claims
(BPB total sectors times bytes per sector, or on exFAT VolumeLength times
2^BytesPerSectorShift; at most 2 TiB + 1 MiB), as tests/fuzz/image.c does.
"""

import shutil
import struct
import sys

MAX = (2 << 40) + (1 << 20)


def claimed(head):
    if head[3:11] == b"EXFAT   " and len(head) >= 109:
        secs = struct.unpack_from("<Q", head, 72)[0]
        if head[108] > 12 or secs > MAX:
            return MAX
        return secs << head[108]
    if len(head) < 36:
        return 0
    secs = struct.unpack_from("<H", head, 19)[0] or struct.unpack_from("<I", head, 32)[0]
    return secs * struct.unpack_from("<H", head, 11)[0]


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: pad.py INPUT IMAGE")
    src, dst = sys.argv[1], sys.argv[2]
    shutil.copyfile(src, dst)
    with open(dst, "r+b") as f:
        head = f.read(512)
        size = f.seek(0, 2)
        want = min(claimed(head), MAX)
        if want > size:
            f.truncate(want)


if __name__ == "__main__":
    main()
