"""The results card's pictures (PNG, matplotlib's Agg backend): where people
would rather look than read.

- `win-share.png`: the grid of layers (k1 down, k2 across) coloured by the share
  of positions the side to move wins;
- `distances.png`: the histograms of distances of wins and of losses over the game;
- `pair-seconds.png`: each pair's solve time against its positions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import UsageError

FILES = ("win-share.png", "distances.png", "pair-seconds.png")


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise UsageError(
            "the results' pictures need matplotlib: pip install 'bestemshe_dist[results]'."
        ) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def draw_all(facts: dict[str, Any], folder: Path) -> list[str]:
    """Write every picture into `folder`; returns their file names."""
    plt = _pyplot()
    _win_share(plt, facts, folder / FILES[0])
    _distances(plt, facts, folder / FILES[1])
    _pair_seconds(plt, facts, folder / FILES[2])
    return list(FILES)


def _save(plt: Any, fig: Any, path: Path) -> None:
    fig.tight_layout()
    # No timestamp or software version in the file: the same facts give the same bytes.
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)


def _win_share(plt: Any, facts: dict[str, Any], path: Path) -> None:
    import numpy as np

    layers = facts["counts"]["per_layer"]
    kazans = sorted({v["k1"] for v in layers.values()} | {v["k2"] for v in layers.values()})
    index = {k: i for i, k in enumerate(kazans)}
    grid = np.full((len(kazans), len(kazans)), np.nan)
    for v in layers.values():
        grid[index[v["k1"]], index[v["k2"]]] = v["win"] / v["positions"] if v["positions"] else np.nan
    fig, ax = plt.subplots(figsize=(7.2, 6.2))
    image = ax.imshow(grid, cmap="RdYlGn", vmin=0.0, vmax=1.0)
    ax.set_xticks(range(len(kazans)), [str(k) for k in kazans])
    ax.set_yticks(range(len(kazans)), [str(k) for k in kazans])
    ax.set_xlabel("k2: the opponent's kazan")
    ax.set_ylabel("k1: the kazan of the side to move")
    for (i, j), share in np.ndenumerate(grid):
        if not np.isnan(share):
            ax.text(j, i, f"{round(100 * share)}", ha="center", va="center", fontsize=7)
    fig.colorbar(image, ax=ax, label="share of positions the side to move wins")
    ax.set_title("Who wins, layer by layer (% wins for the side to move)")
    _save(plt, fig, path)


def _distances(plt: Any, facts: dict[str, Any], path: Path) -> None:
    hist = facts["distances"]["histogram"]
    fig, ax = plt.subplots(figsize=(8, 4.2))
    for value, colour in (("win", "tab:green"), ("loss", "tab:red")):
        counts = hist[value]
        if counts:
            ax.bar(range(len(counts)), counts, width=1.0, alpha=0.6, color=colour, label=f"{value}s")
    ax.set_yscale("log")
    ax.set_xlabel("plies to the next capture or the end of the game, best play")
    ax.set_ylabel("positions")
    ax.set_title("Distances over the whole game")
    ax.legend()
    _save(plt, fig, path)


def _pair_seconds(plt: Any, facts: dict[str, Any], path: Path) -> None:
    pairs = facts["solve"]["pairs"]
    xs = [p["positions"] for p in pairs.values() if p.get("seconds")]
    ys = [p["seconds"] for p in pairs.values() if p.get("seconds")]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.scatter(xs, ys, s=12)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("positions of the pair (both layers)")
    ax.set_ylabel("seconds of its rounds")
    ax.set_title("Time per pair against its size")
    _save(plt, fig, path)
