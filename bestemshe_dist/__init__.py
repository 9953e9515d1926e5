"""bestemshe_dist: a distributed retrograde solver for Bestemshe (SPEC.md)."""
from .variant import Variant

__all__ = ["Variant"]
__version__ = "0.1.0"
