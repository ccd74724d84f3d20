"""Write a big LIBSVM file: Fashion-MNIST repeated with a seeded augmentation.

For measuring ``kernsolve-train --stream`` on data larger than the memory it
may use (issue 17 item 4).  Copy 0 is the source file's rows as they are
(so the first rows of the output are Fashion-MNIST itself); copy ``c >= 1``
holds every source row again, augmented:

* a shift of the 28 x 28 image by (dy, dx), each in {-2, ..., 2} (pixels
  shifted out are dropped, the ones shifted in are 0);
* on the pixels with ink (non-zero after the shift), a contrast factor in
  [0.8, 1.2] per image and Gaussian noise of 8/255, rounded back to the
  source's grid of k/255 and clipped to [0, 1].

Values are written as the source writes them (``%g`` of k/255), so the
output parses to the same kind of data.  Everything drawn comes from
``numpy.random.default_rng([seed, copy, block])`` for blocks of
``BLOCK_ROWS`` rows, so the output is a function of (source, seed) alone and
a smaller ``--size-mb`` writes a prefix of a larger one.  Rows are written
block by block (the source is held as 8-bit pixels, 47 MB for 60000 rows),
and the file stops after the block that reaches the requested size.

Usage::

    python benchmarks/make_big_file.py SOURCE OUT [--size-mb 2100 | --rows N] [--seed 0]
        [--shift 2] [--contrast 0.2] [--noise 8] [--flip]

SOURCE is Fashion-MNIST in LIBSVM format (``fashion-mnist.scale``, plain or
``.xz``; 784 features scaled to [0, 1]).
"""
import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import kernsolve  # noqa: E402
from kernsolve._fileutil import open_read  # noqa: E402

SIDE = 28
PIXELS = SIDE * SIDE
BLOCK_ROWS = 1000        # rows per seeded block (and per write)
MAX_SHIFT = 2
NOISE = 8.0              # standard deviation of the noise, in units of 1/255
READ_BYTES = 16 << 20    # source bytes per read window

# "idx:value " for every index and 8-bit level, as the source writes them
_VALUES = ["%g" % (k / 255.0) for k in range(256)]
_TOKENS = np.array([f"{i + 1}:{v}".encode() for i in range(PIXELS) for v in _VALUES],
                   dtype=object)


def read_source(path):
    """(labels, pixels): the source as uint8 levels k (value k/255), read in
    byte windows so that only the 8-bit copy is ever whole in memory."""
    size = _decompressed_size(path)
    labels, rows = [], []
    for offset in range(0, size, READ_BYTES):
        y, X = kernsolve.read_problem(path, n_features=PIXELS, zero_based=False,
                                      offset=offset, length=min(READ_BYTES, size - offset))
        levels = np.rint(X.toarray() * 255.0)
        if np.any(np.abs(levels - X.toarray() * 255.0) > 1e-3) or levels.max(initial=0) > 255:
            raise ValueError(f"{path}: values are not on the grid k/255, k = 0..255 "
                             f"(expected Fashion-MNIST scaled to [0, 1])")
        labels.append(y)
        rows.append(levels.astype(np.uint8))
    return np.concatenate(labels), np.concatenate(rows)


def _decompressed_size(path):
    if not path.endswith((".xz", ".gz", ".bz2")):
        return os.path.getsize(path)
    with open_read(path) as f:
        size = 0
        while True:
            block = f.read(1 << 20)
            if not block:
                return size
            size += len(block)


def augment(images, rng, shift=MAX_SHIFT, contrast=0.2, noise=NOISE, flip=False):
    """Shifted (by up to ``shift`` pixels), contrast-scaled (by a factor in
    [1 - contrast, 1 + contrast]), noisy (``noise`` / 255) copies of
    ``images`` (n, 784) uint8; with ``flip``, each one mirrored left-right
    with probability 1/2 first (clothes are left-right symmetric).  The
    defaults draw what the first version drew, so their files are unchanged."""
    n = images.shape[0]
    img = images.reshape(n, SIDE, SIDE).astype(np.float64)
    shifts = rng.integers(-MAX_SHIFT, MAX_SHIFT + 1, size=(n, 2))
    factor = rng.uniform(0.8, 1.2, size=n)
    draws = rng.normal(0.0, NOISE, size=(n, SIDE, SIDE))
    # the options scale the same draws (the defaults' stream stays as it was)
    shifts = np.clip(shifts, -shift, shift)
    factor = 1.0 + (factor - 1.0) * (contrast / 0.2)
    draws *= noise / NOISE
    if flip:
        mirrored = rng.random(n) < 0.5
        img[mirrored] = img[mirrored, :, ::-1]
    out = np.zeros_like(img)
    for r in range(n):
        dy, dx = shifts[r]
        src = img[r, max(0, -dy):SIDE - max(0, dy), max(0, -dx):SIDE - max(0, dx)]
        out[r, max(0, dy):max(0, dy) + src.shape[0], max(0, dx):max(0, dx) + src.shape[1]] = src
    ink = out > 0
    out = np.where(ink, out * factor[:, None, None] + draws, 0.0)
    return np.clip(np.rint(out), 0, 255).astype(np.uint8).reshape(n, PIXELS)


def lines(labels, levels):
    """The LIBSVM text of the rows (bytes), values as the source writes them."""
    out = []
    for label, row in zip(labels, levels):
        nz = np.flatnonzero(row)
        tokens = _TOKENS[nz * 256 + row[nz]].tolist()
        out.append(b" ".join([b"%g" % label] + tokens))
    return b"\n".join(out) + b"\n"


def blocks(labels, levels, seed, **augmentation):
    """Every block of output text, in order, without end (copy after copy)."""
    n = labels.shape[0]
    copy = 0
    while True:
        for b, start in enumerate(range(0, n, BLOCK_ROWS)):
            stop = min(start + BLOCK_ROWS, n)
            rows = levels[start:stop]
            if copy:
                rows = augment(rows, np.random.default_rng([seed, copy, b]), **augmentation)
            yield lines(labels[start:stop], rows)
        copy += 1


def write(source, out, size_bytes, seed=0, max_rows=None, **augmentation):
    """Write blocks to ``out`` until it holds >= ``size_bytes`` (or exactly
    ``max_rows`` rows); returns (rows, bytes)."""
    labels, levels = read_source(source)
    written = rows = 0
    with open(out, "wb") as f:
        for text in blocks(labels, levels, seed, **augmentation):
            if max_rows is not None and rows + text.count(b"\n") > max_rows:
                text = b"".join(text.splitlines(keepends=True)[:max_rows - rows])
            f.write(text)
            written += len(text)
            rows += text.count(b"\n")
            if written >= size_bytes or (max_rows is not None and rows >= max_rows):
                return rows, written


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("source", help="Fashion-MNIST in LIBSVM format (plain or .xz)")
    ap.add_argument("out", help="output file")
    ap.add_argument("--size-mb", type=float, default=2100.0,
                    help="stop after the block that reaches this size (default 2100)")
    ap.add_argument("--rows", type=int, default=None,
                    help="stop after this many rows (a prefix of the same file; "
                         "--size-mb then only caps it)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shift", type=int, default=MAX_SHIFT, choices=range(MAX_SHIFT + 1),
                    help=f"largest shift in pixels (default {MAX_SHIFT})")
    ap.add_argument("--contrast", type=float, default=0.2,
                    help="contrast factors in [1 - c, 1 + c] (default 0.2)")
    ap.add_argument("--noise", type=float, default=NOISE,
                    help=f"noise on the ink, in units of 1/255 (default {NOISE:g})")
    ap.add_argument("--flip", action="store_true",
                    help="mirror half of the augmented images left-right")
    args = ap.parse_args(argv)
    if args.size_mb <= 0:
        ap.error("--size-mb must be > 0")
    if args.rows is not None and args.rows < 1:
        ap.error("--rows must be >= 1")
    if args.rows is not None and "--size-mb" not in (argv or sys.argv):
        args.size_mb = float("inf")
    rows, size = write(args.source, args.out, args.size_mb * 2**20, args.seed, args.rows,
                       shift=args.shift, contrast=args.contrast, noise=args.noise,
                       flip=args.flip)
    print(f"{args.out}: {rows} rows, {size} bytes ({size / 2**30:.2f} GiB)")


if __name__ == "__main__":
    main()
