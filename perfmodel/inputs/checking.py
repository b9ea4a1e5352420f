"""pydantic models built from the record classes (inputs/record.py), for checking a user's input.

Imported only when an input must be checked (a user file, a flag that overrides a scenario, a cache being filled):
pydantic's import costs more than a whole prediction. Each model has its record's name, fields, defaults and limits,
so error messages and JSON schemas read as if the model had been written out; after validation it builds its record,
whose own consistency checks (`__post_init__`) fail as a pydantic "Value error", as a model validator would.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
import typing
from types import UnionType
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, Strict, create_model, model_validator

from perfmodel.inputs.record import GIVEN, as_dict, input_fields, with_given


class Checked(BaseModel):
    """The base of every built model: it turns itself into its record once valid."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
    _record: Any = PrivateAttr(None)

    @model_validator(mode="after")
    def _build_record(self) -> Checked:
        cls = _RECORDS[type(self)]
        values = {name: _recorded(value) for name, value in self.__dict__.items()}
        made = cls(**values)
        self._record = with_given(made, frozenset(self.model_fields_set)) if hasattr(cls, GIVEN) else made
        return self


def _recorded(value: Any) -> Any:
    """A validated field's value for its record: a nested model as its record, a tuple of them as a tuple of records."""
    if type(value) in _RECORDS:
        return value._record
    if isinstance(value, tuple) and value and type(value[0]) in _RECORDS:
        return tuple(item._record for item in value)
    return value


_MODELS: dict[type, Any] = {}
"""Each record class's model."""
_RECORDS: dict[type, type] = {}
"""Each model's record class."""


def model_of(cls: type, base: type[Checked] = Checked, validators: dict[str, Any] | None = None) -> Any:
    """The pydantic model that checks input for record class `cls` (built once): fields with their limits, on `base`
    (its config and validators), plus `validators`. A record class nested in a field gets its own model, built on the
    same base. Built once per class: the first call's base and validators hold wherever the class is checked, nested
    ones included, so a class with validators is built before the records that nest it (scenario_check builds
    Parallelism and Goodput before Scenario; a test holds the nested ones to theirs)."""
    if cls not in _MODELS:
        hints = typing.get_type_hints(cls, include_extras=True)
        fields = {f.name: _field(f, hints[f.name], base) for f in input_fields(cls)}
        model: Any = create_model(  # type: ignore[call-overload]
            cls.__name__, __base__=base, __module__=cls.__module__, __validators__=validators, **fields
        )
        _RECORDS[model] = cls
        model.__doc__ = cls.__doc__
        _MODELS[cls] = model
    return _MODELS[cls]


def check(model: Any, raw: Any) -> Any:
    """The record of `raw` as `model` validates it (pydantic's ValidationError when it is not valid)."""
    return model.model_validate(raw)._record


def _field(f: dataclasses.Field[Any], annotation: Any, base: type[Checked]) -> tuple[Any, Any]:
    """A record field as pydantic's (annotation, FieldInfo); a record default becomes its model's instance."""
    limits = dict(f.metadata.get("limits", {}))
    items = limits.pop("items", None)
    annotation = _translated(annotation, base, items)
    default = f.default
    if dataclasses.is_dataclass(default):
        default = model_of(type(default), base).model_validate(as_dict(default, exclude_unset=True))
    return annotation, Field(default, **limits) if default is not dataclasses.MISSING else Field(**limits)


def _translated(annotation: Any, base: type[Checked], items: dict[str, Any] | None = None) -> Any:
    """An annotation with each record class in it replaced by its model, and `items` limits on a dict's values or a
    list's numbers."""
    if dataclasses.is_dataclass(annotation):
        return model_of(annotation, base)  # type: ignore[arg-type]
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, UnionType):
        return functools.reduce(operator.or_, (_translated(a, base, items) for a in args))
    if origin is dict and items is not None:
        return dict[args[0], Annotated[args[1], Field(**items)]]  # type: ignore[valid-type]
    if origin is tuple and args and isinstance(args[0], type) and dataclasses.is_dataclass(args[0]):
        # a list of tables ([[phase]]): TOML gives a list, which a strict tuple refuses; each table is still checked
        # strictly by its own model
        return Annotated[tuple[model_of(args[0], base), ...], Field(strict=False)]  # type: ignore[misc]
    if origin is tuple and args and args[-1] is Ellipsis:  # a list of numbers: the list as a tuple, each item strict
        item = Annotated[args[0], Strict(), Field(**(items or {}))]  # type: ignore[valid-type]
        return Annotated[tuple[item, ...], Field(strict=False)]
    return annotation
