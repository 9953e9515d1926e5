"""Serving a solved tablebase over HTTP.

- app.py     the JSON API (aiohttp): a position and its moves, a mainline, batches,
             statistics, the layers held and random positions for the start picker
- static/    the web explorer (index.html, explorer.js, explorer.css): plain files,
             no build step and no CDN, served at / by app.py

May import: oracle/, data/, game/, solve/ and the base modules. Never run/, cluster/, watch/ or verify/.
"""
