"""Learning from the oracle: labelled training shards and matches against it.

- labels.py   numba: many positions of a layer labelled at once from its pair's codes
- sample.py   `sample`: Parquet shards of labelled positions, written by Dask tasks
- match.py    `match`: a policy against the perfect player, from symmetric starts

May import: oracle/, data/, solve/, game/ and the base modules. Never run/, cluster/,
watch/, verify/ or serve/ (the command line hands it a Dask client).
"""
