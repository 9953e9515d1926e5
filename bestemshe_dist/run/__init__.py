"""Running a solve on Dask: the driver, what workers run, and the arrays a pair
keeps in each host's memory.

- memory.py     what a pair needs in each host's memory, known before the start
- hostmem.py    arrays in a host's (or a process's) memory, locks and marks
- hostpair.py   a large pair's arrays on a host, kept up to the last round
- hostcount.py  a counting pair's states on its one host; a round as one task there
- tasks.py      what workers run: a small pair, a round's chunk, flushes, publication
- driver.py     the driver: the DAG, rounds, checkpoints, resume, publication

May import: watch/ (the driver's events), game/, solve/, data/ and the base
modules. Never cluster/ (it runs on the client it is given), oracle/ or verify/.
"""
