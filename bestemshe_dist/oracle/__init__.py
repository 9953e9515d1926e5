"""Asking a solved tablebase about positions, and playing against it.

- tablebase.py  Tablebase: probe, moves, best move, analysis, the probe report
- play.py       a game against the perfect player

May import: game/, solve/, data/ and the base modules. Never run/, cluster/, watch/ or verify/.
"""

from .tablebase import (
    Analysis,
    Choice,
    Mainline,
    Move,
    Ply,
    Probe,
    Probes,
    Tablebase,
    format_mainline,
    format_report,
    mainline_report,
    report,
)

__all__ = [
    "Analysis",
    "Choice",
    "Mainline",
    "Move",
    "Ply",
    "Probe",
    "Probes",
    "Tablebase",
    "format_mainline",
    "format_report",
    "mainline_report",
    "report",
]
