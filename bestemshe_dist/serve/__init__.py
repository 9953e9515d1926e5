"""Serving a solved tablebase over HTTP.

- app.py     the JSON API (aiohttp): a position and its moves, a mainline, batches

May import: oracle/, data/, game/, solve/ and the base modules. Never dist/ or verify/.
"""
