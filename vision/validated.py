"""Validated settings: frozen pydantic dataclasses whose every failure is one
:class:`scoring.errors.InputError` line naming the value (docs/configuration.md). The base of
:mod:`vision.config` and of the table's settings (:mod:`vision.table.layout`)."""

from __future__ import annotations

import functools
from typing import Annotated, Any

from pydantic import ConfigDict, Strict, ValidationError
from pydantic.dataclasses import dataclass as _pydantic_dataclass

from scoring.errors import InputError

__all__ = ["config_model", "input_error", "StrictBool", "StrictInt", "check", "fraction",
           "at_least_one"]

#: pydantic type names -> the words of an error message ("zoom must be true or false").
_EXPECTED = {"bool": "true or false", "int": "an integer", "float": "a number",
             "string": "text", "tuple": "a list", "list": "a list", "dict": "a mapping",
             "path": "a path"}
StrictBool = Annotated[bool, Strict()]
StrictInt = Annotated[int, Strict()]


def input_error(cls: type, exc: ValidationError) -> InputError:
    """The first error of a pydantic validation as one :class:`InputError` line: our own
    ``__post_init__`` error unchanged, else ``<setting> must be <kind>, got <value>``."""
    err = exc.errors(include_url=False)[0]
    inner = (err.get("ctx") or {}).get("error")
    if isinstance(inner, InputError):
        return inner
    name = ".".join(str(x) for x in err.get("loc", ())) or cls.__name__
    kind = err.get("type", "").split("_")[0]
    what = _EXPECTED.get(kind)
    if what is None:
        return InputError(f"{name}: {err.get('msg', 'not valid')}, got {err.get('input')!r}")
    return InputError(f"{name} must be {what}, got {err.get('input')!r}")


def config_model(cls: type) -> type:
    """Make ``cls`` a frozen pydantic dataclass whose every validation error is one
    :class:`InputError` line (``dataclasses.replace`` and positional construction keep
    working; ``__post_init__`` runs after pydantic's type checks).

    Raises (at construction):
        InputError: a value of the wrong type or one its ``__post_init__`` refuses (named).
    """
    cls = _pydantic_dataclass(frozen=True, config=ConfigDict(arbitrary_types_allowed=True))(cls)
    init = cls.__init__

    @functools.wraps(init)
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        try:
            init(self, *args, **kwargs)
        except ValidationError as exc:
            raise input_error(cls, exc) from None

    cls.__init__ = __init__
    return cls


def check(cond: bool, msg: str) -> None:
    if not cond:
        raise InputError(msg)


def fraction(name: str, v: float, low_open: bool = False) -> float:
    v = float(v)
    ok = (0.0 < v <= 1.0) if low_open else (0.0 <= v <= 1.0)
    check(ok, f"{name} must be in {'(0, 1]' if low_open else '[0, 1]'}, got {v!r}")
    return v


def at_least_one(name: str, v: int) -> None:
    check(isinstance(v, int) and not isinstance(v, bool) and v >= 1,
           f"{name} must be an integer >= 1, got {v!r}")
