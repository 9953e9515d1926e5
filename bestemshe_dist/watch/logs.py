"""Keep library chatter off the user's terminal, and Ctrl-C to one line.

A solve's terminal shows its own lines (progress, one line per failure). The
libraries under it log too: the scheduler's dashboard (bokeh, tornado) writes
a websocket traceback whenever a browser tab goes away, and distributed logs
worker events. `route_library_logs` sends every record of those libraries, in
this process and in the local cluster's worker processes, to one log file
instead (its path is printed when something failed).

Ctrl-C reaches every process of the terminal's process group: the driver, which
stops the solve cleanly and prints one line, and the local cluster's worker
processes, which would each print a KeyboardInterrupt traceback. Workers ignore
it instead (this module is their preload: `dask_setup` below); the driver closes
the cluster, which ends them.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

LIBRARIES = (
    "distributed",
    "dask",
    "bokeh",
    "tornado",
    "asyncio",
    "dask_jobqueue",
    "dask_kubernetes",
    "kr8s",
    "fsspec",
    "s3fs",
    "aiobotocore",
    "botocore",
)
LOG_FILE_ENV = "BESTEMSHE_LOG_FILE"
_FORMAT = "%(asctime)s %(process)d %(name)s %(levelname)s %(message)s"


def default_log_path(command: str) -> Path:
    folder = Path(os.environ.get("BESTEMSHE_LOG_DIR") or Path(tempfile.gettempdir()) / "bestemshe-dist")
    return folder / f"{command}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"


def _to_terminal(handler: logging.Handler) -> bool:
    return type(handler) is logging.StreamHandler and getattr(handler, "stream", None) in (
        sys.stderr,
        sys.stdout,
        sys.__stderr__,
        sys.__stdout__,
    )


def _send_to(path: str) -> None:
    handler = logging.FileHandler(path, delay=True)
    handler.setFormatter(logging.Formatter(_FORMAT))
    handler.setLevel(logging.WARNING)  # warnings and errors: what a user may need after a failure
    # distributed gives several of its loggers (and tornado's, bokeh's) a terminal
    # handler of their own: take every one away, so that all reach the file.
    for name in list(logging.root.manager.loggerDict):
        if name.split(".")[0] in LIBRARIES:
            logger = logging.getLogger(name)
            for old in [h for h in logger.handlers if _to_terminal(h)]:
                logger.removeHandler(old)
            logger.propagate = True
    for name in LIBRARIES:
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        logger.propagate = False


def route_library_logs(command: str) -> Path:
    """Send the libraries' log records, here and in local worker processes started
    after this call, to a file; returns its path (created on the first record)."""
    import distributed  # noqa: F401  (its import sets up its own handlers: replace them after it)

    path = default_log_path(command)
    path.parent.mkdir(parents=True, exist_ok=True)
    os.environ[LOG_FILE_ENV] = str(path)  # worker processes inherit it (dask_setup)
    _send_to(str(path))
    return path


def dask_setup(worker: Any) -> None:
    """Preload of the local cluster's worker processes (cluster/local.py)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    path = os.environ.get(LOG_FILE_ENV)
    if path:
        _send_to(path)
