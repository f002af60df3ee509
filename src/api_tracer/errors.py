"""The errors the command line's subcommands share (a module of its own:
cli.py imports the subcommands, so they cannot import it)."""


class UsageError(Exception):
    """A bad command line or input: printed, exit code 2."""
