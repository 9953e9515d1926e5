"""What a solved game says, as a folder anyone can read: facts.py computes the
facts from a tablebase, card.py writes them as README.md, pictures.py draws them,
write.py puts the folder together (with the manifest and SHA256SUMS).

May import the base modules, game, solve, data, oracle (the tablebase it reads)
and watch (the run log); never run, verify, serve, learn or cli.
"""
