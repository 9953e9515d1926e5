"""Asking a solved tablebase about positions, and playing against it.

- tablebase.py  Tablebase: probe, moves, best move, analysis, mainline, statistics
- report.py     what probe, mainline and stats print: JSON data and terminal text
- play.py       a game against the perfect player

May import: game/, solve/, data/ and the base modules. Never run/, cluster/, watch/ or verify/.
"""

from .report import format_mainline, format_report, mainline_report, report
from .tablebase import (
    Analysis,
    Choice,
    Mainline,
    Move,
    Ply,
    Probe,
    Probes,
    Tablebase,
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
