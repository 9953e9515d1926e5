"""Errors a user can meet: each carries one sentence that names what and where."""


class BestemsheError(Exception):
    """A failure the CLI reports as one line (exit 1), never as a traceback."""


class UsageError(BestemsheError):
    """Bad arguments or input from the user (exit 2)."""


class FormatError(BestemsheError):
    """A layer file that does not follow SPEC.md (names the file and the fault)."""


class StoreError(BestemsheError):
    """The output/input location cannot be read or written (names the URL)."""


class Terminated(KeyboardInterrupt):
    """SIGTERM (`kill`, a container's stop, SLURM's scancel or time limit): a solve
    stops as on Ctrl-C, freeing its host memory and leaving its checkpoints."""


def first_line(exc: BaseException) -> str:
    """What an exception says in one line: its message's first line, else its type."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
