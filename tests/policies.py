"""Policies for the match tests, loaded as `--policy policies:NAME` (tests/ on PYTHONPATH)."""

import numpy as np


def lowest_pit(rows):
    """The first non-empty pit: legal, deterministic."""
    pits = (len(rows[0]) - 2) // 2
    return (rows[:, 2 : 2 + pits] > 0).argmax(axis=1)


def always_first(rows):
    """Pit index 0 whatever it holds: illegal as soon as it is empty."""
    return np.zeros(len(rows), np.int64)


def wrong_length(rows):
    return [0]
