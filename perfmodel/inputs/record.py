"""The runtime form of validated inputs: frozen stdlib dataclasses, so that a prediction never imports pydantic.

A record class is the one definition of its fields: their types, defaults and the limits an input must respect
(`bounded`). inputs/checking.py builds the pydantic models that validate user files from these classes, and turns
what they accept into records; a bundled file's validated form is cached on disk (inputs/validated.py) and read
back with `from_dict`, without pydantic. A record remembers which fields its input gave (`given`), as pydantic's
`model_fields_set` did: a scenario's "(default)" markers and the API's re-validation with overrides depend on it.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable
from functools import cache
from types import UnionType
from typing import Any, TypeVar

R = TypeVar("R")

GIVEN = "given"
"""The field of a record that holds the names of the fields its input gave (not an input field itself)."""


@typing.dataclass_transform(frozen_default=True, kw_only_default=True)
def record(cls: type[R]) -> type[R]:
    """A frozen dataclass of keyword fields: immutable, so every prediction can share one. Not slotted: `replaced`
    copies its __dict__ at once (a fit copies thousands), and a slotted class costs more to create at import."""
    doc = cls.__doc__
    made = dataclasses.dataclass(frozen=True, kw_only=True)(cls)
    made.__doc__ = doc  # not the signature dataclass writes in its place: JSON schemas show a docstring
    return made


def bounded(default: Any = dataclasses.MISSING, **limits: Any) -> Any:
    """A field with the limits an input must respect, in pydantic's Field terms (gt, ge, le, min_length,
    allow_inf_nan, pattern, description; `items`: the limits of each value of a dict field)."""
    return dataclasses.field(default=default, metadata={"limits": limits})


def given_field() -> Any:
    """The `given` field of a record whose input fields are told apart from defaults: None when unknown (a record
    built in Python), and then a field counts as given when it differs from its default. Not an __init__ argument
    (`with_given` sets it), so that dataclasses.replace, which passes every __init__ field on, cannot carry over a
    `given` that misses the fields it changed (the API's re-check would then drop them): its copy counts as built in
    Python, checked again where the API checks one. `replaced` keeps `given` up to date instead."""
    return dataclasses.field(default=None, init=False, compare=False, repr=False)


def with_given(item: R, named: frozenset[str]) -> R:
    """`item`, just built, with the names of the fields its input gave (see given_field)."""
    object.__setattr__(item, GIVEN, named)
    return item


def overriding(spec: type) -> Callable[[type[R]], type[R]]:
    """A decorator that gives a class, before `record` makes it one, every input field of record class `spec` as an
    optional one (None: not given), with its limits: a table that replaces some of a `spec`'s fields (a scenario's
    [model] over a zoo model) is checked as `spec` itself is, from the one definition. The class's own fields come
    first, `given` last."""

    def add_fields(cls: type[R]) -> type[R]:
        own = dict(inspect.get_annotations(cls))
        last = {GIVEN: own.pop(GIVEN)} if GIVEN in own else {}
        hints = _hints(spec)
        for f in input_fields(spec):
            own[f.name] = hints[f.name] | None
            setattr(cls, f.name, dataclasses.field(default=None, metadata=f.metadata))
        cls.__annotations__ = own | last
        return cls

    return add_fields


def input_fields(cls: type) -> tuple[dataclasses.Field[Any], ...]:
    """The fields an input file may give: every field but `given` (found once per class: records are made by the
    thousand in a fit, and dataclasses.fields builds its tuple at every call)."""
    found = _INPUT_FIELDS.get(cls)
    if found is None:
        found = _INPUT_FIELDS[cls] = tuple(f for f in dataclasses.fields(cls) if f.name != GIVEN)
    return found


_INPUT_FIELDS: dict[type, tuple[dataclasses.Field[Any], ...]] = {}


def given(item: Any) -> frozenset[str]:
    """The names of the fields `item`'s input gave (see given_field)."""
    named = getattr(item, GIVEN, None)
    if named is not None:
        return frozenset(named)
    return frozenset(f.name for f in input_fields(type(item)) if getattr(item, f.name) != f.default)


def replaced(item: R, **changes: Any) -> R:
    """`item` with `changes`, which count as given (as pydantic's model_copy(update=...) added them) where what
    was given is known (a record built in Python stays unchecked). The fields are copied at once, then the record's
    own check runs: dataclasses.replace lists the fields and calls __init__, 2-3x slower for the thousands of copies
    of a fit."""
    fields = vars(item)
    unknown = sorted(changes.keys() - fields.keys())
    if unknown:
        raise TypeError(f"{type(item).__name__} has no field '{unknown[0]}'")
    if fields.get(GIVEN) is not None:
        changes[GIVEN] = fields[GIVEN] | frozenset(changes)
    new = object.__new__(type(item))
    object.__setattr__(new, "__dict__", fields | changes)
    check = getattr(new, "__post_init__", None)
    if check is not None:
        check()
    return new


def as_dict(item: Any, exclude_none: bool = False, exclude_unset: bool = False) -> dict[str, Any]:
    """A record as nested dicts, fields in their order (what pydantic's model_dump gave)."""
    out: dict[str, Any] = {}
    named = given(item) if exclude_unset else None
    for f in input_fields(type(item)):
        value = getattr(item, f.name)
        if (exclude_none and value is None) or (named is not None and f.name not in named):
            continue
        out[f.name] = _plain(value, exclude_none, exclude_unset)
    return out


def _plain(value: Any, exclude_none: bool, exclude_unset: bool) -> Any:
    """A field's value as `as_dict` writes it: a record as a dict, a tuple of records (a campaign's phases) as a
    list of dicts, anything else as it is."""
    if dataclasses.is_dataclass(value):
        return as_dict(value, exclude_none, exclude_unset)
    if isinstance(value, tuple) and value and dataclasses.is_dataclass(value[0]):
        return [as_dict(item, exclude_none, exclude_unset) for item in value]
    return value


def from_dict(cls: type[R], data: dict[str, Any]) -> R:
    """The record of `data` as `as_dict(..., exclude_unset=True)` wrote it (nested tables as records, lists of tuple
    fields as tuples; the keys present are the given ones). For validated data only: nothing is checked here."""
    hints = _hints(cls)  # type: ignore[arg-type]
    made = cls(**{name: _value(hints[name], value) for name, value in data.items()})
    return with_given(made, frozenset(data)) if GIVEN in hints else made


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _value(annotation: Any, value: Any) -> Any:
    arms = typing.get_args(annotation) if typing.get_origin(annotation) in (typing.Union, UnionType) else (annotation,)
    if isinstance(value, dict):
        nested = next((a for a in arms if isinstance(a, type) and dataclasses.is_dataclass(a)), None)
        return from_dict(nested, value) if nested is not None else value
    tuples = [a for a in arms if typing.get_origin(a) is tuple]
    if isinstance(value, list) and tuples:
        item = typing.get_args(tuples[0])[0]
        if isinstance(item, type) and dataclasses.is_dataclass(item):  # a tuple of records: each read back as one
            return tuple(from_dict(item, entry) for entry in value)
        return tuple(value)
    return value


def field_docs(cls: type) -> dict[str, str]:
    """A record class's attribute docstrings (the string under a field), by field name."""
    import ast
    import itertools

    body = ast.parse(inspect.getsource(cls)).body[0].body  # type: ignore[attr-defined]
    found = {}
    for field, note in itertools.pairwise(body):
        text = note.value.value if isinstance(note, ast.Expr) and isinstance(note.value, ast.Constant) else None
        if isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name) and isinstance(text, str):
            found[field.target.id] = " ".join(inspect.cleandoc(text).split())
    return found
