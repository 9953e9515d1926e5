"""Running a solve on Dask.

- plan.py       the pairs of a solve in DAG order (pure Python)
- memory.py     what a pair needs in each host's memory, known before the start
- hostmem.py    arrays in a host's (or a process's) memory, locks and marks
- hostpair.py   a large pair's arrays on a host, kept up to the last round
- tasks.py      what workers run: a small pair, a round's chunk, flushes, publication
- driver.py     the driver: the DAG, rounds, checkpoints, resume, publication
- progress.py   the driver's events, printed and sent to the dashboard
- dashboard.py  the Dask dashboard page
- status.py     `status`: a store's layers and checkpointed rounds (no numba)
- logs.py       quiet library logs
- cluster/      the Dask Client: config, one module a backend (local, SLURM, Kubernetes)

May import: game/, solve/, data/ and the base modules. Never oracle/ or verify/.
"""
