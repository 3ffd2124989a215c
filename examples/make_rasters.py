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


def world_density(i, j):
    # Rolling woodland over 8 x 8 tiles: two scales of hills, and a
    # meandering river (dark: sparse) from west to east.
    x, y = (i + 0.5) / 256.0, 1 - (j + 0.5) / 256.0
    v = (0.55 + 0.25 * math.sin(2 * math.pi * (1.5 * x + 0.3)) *
         math.cos(2 * math.pi * 1.2 * y) +
         0.15 * math.sin(2 * math.pi * (3.1 * x + 2.3 * y)))
    river = 0.5 + 0.15 * math.sin(2 * math.pi * 1.3 * x)
    d = (y - river) / 0.035
    v *= 1 - math.exp(-d * d)
    return max(0, min(255, int(round(255 * v))))


if __name__ == "__main__":
    write_png(os.path.join(HERE, "forest_density.png"), 256, 256, forest_density)
    write_png(os.path.join(HERE, "world_density.png"), 256, 256, world_density)
