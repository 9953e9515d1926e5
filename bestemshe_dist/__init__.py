"""bestemshe_dist: a distributed retrograde solver for Bestemshe (SPEC.md)."""

from .game.variant import Variant

__all__ = ["Position", "Tablebase", "Variant"]
__version__ = "0.1.0"


def __getattr__(name):
    # The oracle pulls in numba and fsspec: import it on first use, so that
    # `import bestemshe_dist` (and every CLI command) stays quick.
    if name == "Tablebase":
        from .oracle.tablebase import Tablebase

        return Tablebase
    if name == "Position":
        from .game.position import Position

        return Position
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
