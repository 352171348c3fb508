"""Errors a user can fix: printed by the CLI as one line, without a traceback."""


class UserError(Exception):
    """Bad input or an unknown option value; the message names the input and what to do."""
