"""The flat module names of versions before the layered package, still importable.

`import bestemshe_dist.plan` (or `.run`, `.kernels`, ...) gives the module that
now holds that code, the same module object under both names, with a
DeprecationWarning naming the new place; scripts and notebooks written against
the old names keep working. (`oracle` and `verify` are packages of the same
names now, and export what those modules did.) Imports nothing from the package.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

PACKAGE = "bestemshe_dist"
MOVED = {
    "variant": "game.variant", "rules": "game.rules", "position": "game.position",
    "atomics": "solve.atomics", "prefetch": "solve.prefetch", "kernels": "solve.kernels", "pair": "solve.pair",
    "format": "data.format", "checksums": "data.checksums", "tables": "data.layer_files", "blocks": "data.blocks",
    "cache": "data.cache", "store": "data.store", "lease": "data.lease", "sidecars": "data.sidecars",
    "plan": "dist.plan", "memory": "dist.memory", "hostmem": "dist.hostmem", "hostpair": "dist.hostpair",
    "tasks": "dist.tasks", "run": "dist.driver", "progress": "dist.progress", "dashboard": "dist.dashboard",
    "status": "dist.status", "logs": "dist.logs", "cluster": "dist.cluster",
    "play": "oracle.play", "verify_kernels": "verify.kernels",
}


class _Alias(importlib.abc.Loader):
    def __init__(self, target: str):
        self.target = target

    def create_module(self, spec):
        module = importlib.import_module(self.target)
        warnings.warn(f"{spec.name} is now {self.target}", DeprecationWarning, stacklevel=2)
        return module

    def exec_module(self, module):
        pass   # the target module ran when it was imported


class MovedFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        package, _, name = fullname.partition(".")
        if package != PACKAGE or name not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, _Alias(f"{PACKAGE}.{MOVED[name]}"))


def install() -> None:
    if not any(isinstance(f, MovedFinder) for f in sys.meta_path):
        sys.meta_path.append(MovedFinder())
