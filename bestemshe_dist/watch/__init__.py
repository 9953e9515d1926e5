"""Watching a solve: the driver's progress lines, the Dask dashboard page, the
`status` of a store, and the libraries' logs kept off the terminal.

- progress.py   the driver's events, printed and sent to the dashboard
- dashboard.py  the solve's page on the Dask dashboard, and /metrics
- status.py     `status`: a store's layers and checkpointed rounds (no numba)
- runlog.py     the run log: a line a solve run, kept current; the resume line
- logs.py       the libraries' logs routed to a file, one line on the terminal

May import: game/, data/ and the base modules. Never run/ (the driver calls
progress.py; the dashboard hears it through Dask events), cluster/, oracle/ or verify/.
"""
