"""Errors a user can meet: each carries one sentence that names what and where."""


class BestemsheError(Exception):
    """A failure the CLI reports as one line (exit 1), never as a traceback."""


class UsageError(BestemsheError):
    """Bad arguments or input from the user (exit 2)."""


class FormatError(BestemsheError):
    """A layer file that does not follow SPEC.md (names the file and the fault)."""


class StoreError(BestemsheError):
    """The output/input location cannot be read or written (names the URL)."""
