"""What checking every block against its checksum costs (checksums.py).

    python benchmarks/checksum_bench.py TABLEBASE [--json]

TABLEBASE: a folder written by `bestemshe-dist solve` (it has checksum files),
e.g. `bestemshe-dist solve --min-captured 28 --out /tmp/tb28`. Measured, each
on one core, best of a few repeats:

- hash: BLAKE2b-128 of every compressed frame of every layer file, against
  decompressing the same frames: the share checking adds to a whole-layer read
  (the solver's dependency layers, verify);
- whole layers: read_layer_codes (checked) against decoding the same files
  without checks, per layer, summed;
- cold probes: `Tablebase.probe` of random positions, each with a fresh
  Tablebase (headers, checksum file, one frame), with the checksum files and
  in a copy without them;
- the CLI: `bestemshe-dist probe` wall time, with and without checksum files.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bestemshe_dist import Tablebase
from bestemshe_dist.data import format as fmt
from bestemshe_dist.data.blocks import read_layer_codes
from bestemshe_dist.data.checksums import digest
from bestemshe_dist.data.layer_files import codes_from_bitsets
from bestemshe_dist.data.store import Store
from bestemshe_dist.game.position import Position
from bestemshe_dist.game.variant import Variant
from bestemshe_dist.naming import layer_file


def _best(fn, repeats=3):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def frames_of(folder: Path):
    out = []
    for path in sorted(folder.glob("layer_*_*_*.bin")):
        data = path.read_bytes()
        offsets = fmt.parse_header(data, len(data), path.name)
        out += [data[offsets[b] : offsets[b + 1]] for b in range(len(offsets) - 1)]
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tablebase", type=Path)
    parser.add_argument("--probes", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    folder = args.tablebase
    manifest = json.loads((folder / "manifest.json").read_text())
    variant = Variant(**manifest["variant"])
    layers = sorted(tuple(e[k] for k in ("k1", "k2")) for e in manifest["layers"].values())
    result = {"tablebase": str(folder), "layers": len(layers)}

    frames = frames_of(folder)
    compressed = sum(len(f) for f in frames)

    def hash_all():
        for f in frames:
            digest(f)

    def decode_all():  # each block dropped at once, as a reader does: no page faults for 4 MiB each
        for f in frames:
            fmt.decode_block(f, "f", 0)

    hash_s, decode_s = _best(hash_all), _best(decode_all)
    result["hash"] = {
        "frames": len(frames),
        "compressed_bytes": compressed,
        "raw_bytes": len(frames) * fmt.BLOCK_BYTES,
        "blake2b_seconds": round(hash_s, 4),
        "decompress_seconds": round(decode_s, 4),
        "blake2b_GB_per_s": round(compressed / hash_s / 1e9, 3),
        "overhead_of_decompress": round(hash_s / decode_s, 4),
    }

    store = Store(str(folder))

    def unchecked():
        for k1, k2 in layers:
            n = variant.layer_size(k1, k2)
            bits = [
                fmt.decode_file((folder / layer_file(k1, k2, kind)).read_bytes(), kind, n)
                for kind in ("win", "draw")
            ]
            codes_from_bitsets(*bits, n, k1, k2)

    def checked():
        for layer in layers:
            read_layer_codes(store, variant, *layer)

    plain_s, checked_s = _best(unchecked), _best(checked)
    result["whole_layers"] = {
        "unchecked_seconds": round(plain_s, 3),
        "checked_seconds": round(checked_s, 3),
        "ratio": round(checked_s / plain_s, 4),
    }

    rng = np.random.default_rng(1)
    picks = [layers[i] for i in rng.integers(0, len(layers), args.probes)]
    positions = [
        Position.from_rank(variant, k1, k2, int(rng.integers(0, variant.layer_size(k1, k2))))
        for k1, k2 in picks
    ]
    bare = Path(tempfile.mkdtemp(prefix="bestemshe-bare-")) / "tb"
    shutil.copytree(folder, bare, ignore=shutil.ignore_patterns("*.sums.json", ".bestemshe"))
    m = json.loads((bare / "manifest.json").read_text())
    for entry in m["layers"].values():
        entry.pop("checksums", None)
    (bare / "manifest.json").write_text(json.dumps(m))

    def cold(where):
        for pos in positions:
            Tablebase.open(str(where)).probe(pos)

    with_s, without_s = _best(lambda: cold(folder)), _best(lambda: cold(bare))
    result["cold_probe"] = {
        "probes": len(positions),
        "with_checksums_ms": round(1000 * with_s / len(positions), 3),
        "without_ms": round(1000 * without_s / len(positions), 3),
        "ratio": round(with_s / without_s, 4),
    }

    def cli(where):
        subprocess.run(
            [sys.executable, "-m", "bestemshe_dist", "probe", str(where), str(positions[0])],
            check=True,
            capture_output=True,
        )

    cli_with, cli_without = _best(lambda: cli(folder)), _best(lambda: cli(bare))
    result["cli_probe"] = {
        "with_checksums_s": round(cli_with, 3),
        "without_s": round(cli_without, 3),
        "ratio": round(cli_with / cli_without, 4),
    }
    shutil.rmtree(bare.parent)

    if args.json:
        print(json.dumps(result, indent=1))
    else:
        h, w, c, p = result["hash"], result["whole_layers"], result["cold_probe"], result["cli_probe"]
        print(
            f"{folder}: {len(layers)} layers, {h['frames']} frames, {h['compressed_bytes']:,} compressed bytes"
        )
        print(
            f"  BLAKE2b-128: {h['blake2b_GB_per_s']} GB/s; {h['overhead_of_decompress']:.1%} of decompressing "
            f"the same frames ({h['blake2b_seconds']}s vs {h['decompress_seconds']}s)"
        )
        print(
            f"  whole layers: {w['checked_seconds']}s checked vs {w['unchecked_seconds']}s unchecked "
            f"(x{w['ratio']})"
        )
        print(
            f"  cold probe: {c['with_checksums_ms']} ms with checksums vs {c['without_ms']} ms without "
            f"(x{c['ratio']})"
        )
        print(f"  CLI probe: {p['with_checksums_s']}s vs {p['without_s']}s (x{p['ratio']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
