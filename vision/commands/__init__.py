"""Vision sub-commands of ``paigow``, one thin module per command group.

Each module defines ``register(sub)`` that adds its sub-parsers (``set_defaults(func=...)``);
handlers import the heavy stages lazily, return an exit code and raise
:class:`scoring.errors.InputError` for bad input (exit code 2).
"""

from __future__ import annotations

import importlib

_GROUPS = ("render", "train", "run", "audit", "export", "import_labels", "serve", "reaudit",
           "layout", "label", "setcheck")


def register(sub) -> None:
    """Add every vision command group to the argparse sub-parser collection."""
    for name in _GROUPS:
        importlib.import_module(f"{__name__}.{name}").register(sub)
