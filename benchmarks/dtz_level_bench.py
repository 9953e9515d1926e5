"""The Zstandard level of the distance files (layer_*_dtz.bin), by measurement.

    python benchmarks/dtz_level_bench.py TABLEBASE [--levels 1,3,6,9,12,15,19] [--json]

TABLEBASE: a folder solved with `--dtz`, e.g. `bestemshe-dist solve
--min-captured 28 --dtz --out /tmp/tb28`. The win/draw files must stay at
level 19 (they are the published tablebase's bytes); the distance files are
this project's own, so their level is chosen here. For every distance frame
of the folder (each a 4 MiB block), on one core: the seconds to compress it at
each level, the bytes it takes, and the seconds to decompress it, summed over
the frames; plus the level-19 win/draw files' compression of the same folder,
the publication cost the distance files add to.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import zstandard

from bestemshe_dist.data import format as fmt


def frames_of(paths: list[Path]) -> list[bytes]:
    """The raw (decompressed) blocks of the files."""
    blocks = []
    d = zstandard.ZstdDecompressor()
    for path in paths:
        data = path.read_bytes()
        offsets = fmt.parse_header(data, len(data), path.name)
        blocks += [d.decompress(data[offsets[b] : offsets[b + 1]]) for b in range(len(offsets) - 1)]
    return blocks


def measure(blocks: list[bytes], level: int) -> dict[str, float]:
    start = time.perf_counter()
    frames = [fmt.compress_block(b, level) for b in blocks]
    compress = time.perf_counter() - start
    d = zstandard.ZstdDecompressor()
    start = time.perf_counter()
    for f in frames:
        d.decompress(f)
    return {
        "level": level,
        "compress_seconds": round(compress, 3),
        "bytes": sum(len(f) for f in frames),
        "decompress_seconds": round(time.perf_counter() - start, 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tablebase", type=Path)
    ap.add_argument("--levels", default="1,3,6,9,12,15,19")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    dtz = sorted(args.tablebase.glob("layer_*_dtz.bin"))
    bits = sorted(args.tablebase.glob("layer_*_win.bin")) + sorted(args.tablebase.glob("layer_*_draw.bin"))
    if not dtz:
        raise SystemExit(f"dtz_level_bench: no layer_*_dtz.bin in {args.tablebase}: solve it with --dtz.")
    blocks = frames_of(dtz)
    rows = [measure(blocks, int(level)) for level in args.levels.split(",")]
    bits_row = measure(frames_of(bits), fmt.ZSTD_LEVEL)
    report = {
        "tablebase": str(args.tablebase),
        "dtz_blocks": len(blocks),
        "dtz_raw_bytes": sum(len(b) for b in blocks),
        "levels": rows,
        "win_draw_level_19": bits_row,
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"{len(dtz)} distance files, {len(blocks)} blocks, {report['dtz_raw_bytes']:,} bytes raw")
    print(f"win/draw files at level 19: {bits_row['compress_seconds']:.2f} s to compress")
    print("level  compress s  vs win/draw  bytes          ratio   decompress s")
    for r in rows:
        print(
            f"{r['level']:5d}  {r['compress_seconds']:10.2f}  {r['compress_seconds'] / bits_row['compress_seconds']:10.2f}x"
            f"  {r['bytes']:13,d}  {report['dtz_raw_bytes'] / r['bytes']:6.1f}  {r['decompress_seconds']:12.2f}"
        )


if __name__ == "__main__":
    main()
