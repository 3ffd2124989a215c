#!/usr/bin/python3
"""Writes the example rasters (8-bit grayscale PNGs) with the standard
library only. Deterministic: run it again and the files are the same."""

import math
import os
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))


def write_png(path, width, height, value):
    rows = b"".join(
        b"\x00" + bytes(value(i, j) for i in range(width)) for j in range(height))

    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data +
                struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n")
        f.write(chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)))
        f.write(chunk(b"IDAT", zlib.compress(rows, 9)))
        f.write(chunk(b"IEND", b""))


def forest_density(i, j):
    # Bright (dense) towards the north-east, with two groves.
    x, y = i / 255.0, 1 - j / 255.0
    v = 0.25 + 0.35 * (x + y) / 2
    for cx, cy, r in ((0.3, 0.7, 0.15), (0.75, 0.3, 0.12)):
        d = math.hypot(x - cx, y - cy) / r
        v += 0.5 * math.exp(-d * d)
    return max(0, min(255, int(round(255 * min(v, 1.0)))))


if __name__ == "__main__":
    write_png(os.path.join(HERE, "forest_density.png"), 256, 256, forest_density)
