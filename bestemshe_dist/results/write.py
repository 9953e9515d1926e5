"""The results folder of a solved game: what `bestemshe-dist results DIR --out FOLDER` writes.

- `manifest.json`: the solve's manifest as it is in DIR (every layer's files with
  their bytes and sha256, counts, rounds, evaluations, seconds, statistics);
- `SHA256SUMS`: every file of the tablebase in `sha256sum -c` form;
- `facts.json`: every fact of the card, for programs (facts.py);
- `README.md`: the card (card.py), and its pictures (pictures.py).

Before it reads the statistics, `results` records each layer's (win/draw/loss
counts, distance histograms, longest win and loss with an example) in the
layer's manifest entry, so that `stats DIR` answers from the manifest at once.
It takes the tablebase's lease for that write: never while a solve runs there.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..data.lease import Lease
from ..data.store import Store
from ..naming import MANIFEST, layer_file
from ..oracle.tablebase import Tablebase
from .card import render
from .facts import check_whole, game_facts
from .pictures import draw_all

FACTS = "facts.json"
SUMS = "SHA256SUMS"
CARD = "README.md"


def sha256sums(manifest: dict[str, Any]) -> str:
    """`<sha256>  <file>` for every layer file and checksum file, by name."""
    lines: list[tuple[str, str]] = []
    for entry in manifest["layers"].values():
        for kind, digest in entry["sha256"].items():
            lines.append((layer_file(entry["k1"], entry["k2"], kind), digest))
        record = entry.get("checksums")
        if isinstance(record, dict) and record.get("file") and record.get("sha256"):
            lines.append((record["file"], record["sha256"]))
    return "".join(f"{digest}  {name}\n" for name, digest in sorted(lines))


def record_stats(store: Store, per_layer: list[dict[str, Any]]) -> int:
    """Each layer's statistics into its manifest entry (where they differ);
    returns how many entries changed. Holds the lease while it writes."""
    with Lease(store):
        manifest = store.read_manifest()
        assert manifest is not None  # game_facts needs one
        changed = 0
        for s in per_layer:
            entry = manifest["layers"].get(s["layer"])
            if entry is not None and entry.get("stats") != s:
                entry["stats"] = s
                changed += 1
        if changed:
            store.write_manifest(manifest)
    return changed


# What a layer's statistics are computed with: Tablebase.stats' `compute`.
Compute = Callable[[list[tuple[int, ...]]], list[dict[str, Any]]]


def write_results(
    url: str,
    folder: Path,
    storage_options: dict[str, Any] | None = None,
    compute: Compute | None = None,
    shown: str | None = None,
    max_plies: int = 2000,
) -> dict[str, Any]:
    """Compute the facts of the tablebase at `url` and write the results folder;
    returns the facts. `shown`: how the card's commands name the tablebase."""
    tb = Tablebase.open(url, storage_options)
    check_whole(tb)
    stats = tb.stats(compute=compute)
    record_stats(tb.store, stats["layers"])
    facts = game_facts(tb, stats, max_plies=max_plies)
    folder.mkdir(parents=True, exist_ok=True)
    manifest_bytes = tb.store.read_bytes(MANIFEST)  # as record_stats left it
    manifest = json.loads(manifest_bytes)
    (folder / MANIFEST).write_bytes(manifest_bytes)
    (folder / SUMS).write_text(sha256sums(manifest))
    (folder / FACTS).write_text(json.dumps(facts, indent=1, sort_keys=True) + "\n")
    pictures = draw_all(facts, folder)
    (folder / CARD).write_text(render(facts, shown or "DIR", pictures))
    return facts
