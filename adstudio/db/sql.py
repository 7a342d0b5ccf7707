"""The pieces of plain SQL the apps' hot queries are written with: quoted names and
columns, parameters, and rows read back as model instances. A step's writes in one
statement are ``adstudio.db.batch``; the database's clock, ``adstudio.db.clock``."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from functools import cache, lru_cache
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.models import Model, UUIDField

_UUID_FIELD = UUIDField()


@cache
def quote_name(name: str) -> str:
    return connection.ops.quote_name(name)


def column(model: type[Model], name: str) -> str:
    """The quoted column of ``model``'s field ``name``, for plain SQL."""
    return quote_name(model._meta.get_field(name).column)


def prep(model: type[Model], name: str, value: Any) -> Any:
    """``value`` as a parameter of plain SQL for ``model``'s field ``name``."""
    return model._meta.get_field(name).get_db_prep_save(value, connection)


def uuid_param(value: uuid.UUID | None) -> Any:
    """A UUID primary key as a parameter of plain SQL (a string on SQLite)."""
    return _UUID_FIELD.get_db_prep_value(value, connection)


def columns(model: type[Model], alias: str) -> str:
    """``alias."column", ...`` for every concrete field of ``model``: the select list that
    ``from_row`` reads back."""
    return ", ".join(f"{alias}.{quote_name(f.column)}" for f in model._meta.concrete_fields)


def from_row(model: type[Model], row: Sequence, start: int = 0) -> tuple[Model, int]:
    """The ``model`` instance whose ``columns`` begin at ``row[start]``, and the index
    after them.

    For hot queries written in plain SQL, where compiling the queryset would cost more
    than running it; values are converted as the ORM's own queries convert them."""
    db = connections[DEFAULT_DB_ALIAS]
    attnames, converters = _row_converters(model, db)
    stop = start + len(attnames)
    values = list(row[start:stop])
    if len(values) != len(attnames):
        raise ValueError(f"A {model.__name__} row needs {len(attnames)} columns from {start}.")
    for index, column, functions in converters:
        value = values[index]
        for converter in functions:
            value = converter(value, column, db)
        values[index] = value
    return model.from_db(db.alias, attnames, values), stop


@lru_cache(maxsize=256)
def _row_converters(model: type[Model], db) -> tuple[tuple[str, ...], tuple]:
    """``from_row``'s field names of ``model`` and, per field that has any, its index,
    column and converters, as the ORM's compiler finds them for connection ``db``."""
    fields = model._meta.concrete_fields
    converters = []
    for index, field in enumerate(fields):
        column = field.cached_col
        functions = (*db.ops.get_db_converters(column), *field.get_db_converters(db))
        if functions:
            converters.append((index, column, functions))
    return tuple(f.attname for f in fields), tuple(converters)
