"""The game (SPEC.md): a variant's numbers, the rules and the rank, a position as
people write it, and the layer DAG's shape.

- variant.py   stones, pits and the numbers derived from them
- geometry.py  pairs, partners, capture targets (pure Python)
- rules.py     sowing, captures, rank and unrank, un-moves (numba)
- position.py  a position as text and back
- dag.py       the pairs of a solve in DAG order, its scope (pure Python)

May import: the base modules (errors, naming). Nothing from any other folder.
variant.py, geometry.py and dag.py load no numba, so the plan does not either.
"""
