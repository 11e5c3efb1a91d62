"""The one exception family for bad input, shared by every package of the project.

The CLI turns an :class:`InputError` into one line on stderr and exit code 2; anything else
is a bug and keeps its traceback.
"""

__all__ = ["InputError", "StateConflict"]


class InputError(ValueError):
    """Bad input from a user or a file: the message names the offending value."""


class StateConflict(InputError):
    """A well-formed request that the present state refuses (an alert already acknowledged,
    a control that needs an audit store the run does not keep); the web control answers 409."""
