"""Database helpers shared by the apps: handing a connection back before a long wait,
writing a step's rows in one statement, and the pieces of plain SQL (names, parameters,
rows read back as model instances)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from functools import cache
from typing import Any

from django.db import connection, transaction
from django.db.models import Field, Model, UUIDField
from django.db.models.fields import AutoFieldMixin

_UUID_FIELD = UUIDField()


def release_connection() -> None:
    """Hand this thread's connection back to the pool before a long wait (a model call, a
    long poll), so waiting threads need few connections, not one each. The next query
    takes one again. A no-op without a pool or inside a transaction."""
    if connection.settings_dict.get("OPTIONS", {}).get("pool") and not connection.in_atomic_block:
        connection.close()


@contextmanager
def planned_per_query() -> Iterator[None]:
    """Statements run inside are planned for their own parameters, never prepared.

    Connections prepare a statement they have run five times, and PostgreSQL may then
    use one generic plan for every parameter. That is right for the agent loop's lookups
    by key, and wrong for a search over skewed data: a plan fit for the average accent
    walks a whole language for an accent no voice has."""
    if connection.vendor != "postgresql":
        yield
        return
    connection.ensure_connection()
    driver = connection.connection
    threshold = driver.prepare_threshold
    driver.prepare_threshold = None
    try:
        yield
    finally:
        driver.prepare_threshold = threshold


@dataclass(frozen=True)
class Add:
    """An update value that adds ``amount`` to the field's current value."""

    amount: int | Decimal


class Batch:
    """Inserts and updates collected during a step and written together.

    On PostgreSQL the batch is one statement (the writes as data-modifying CTEs), so a
    step of the agent loop costs one round trip and one commit instead of one per row;
    elsewhere it is one statement per write inside a transaction. Either way it is all or
    nothing. The rows of one model are inserted by one INSERT, in the order given (their
    ids follow that order); ids are not read back, so a caller that needs a row's id sets
    it before. Values are plain values (no expressions): the SQL is built directly from
    the fields, without the ORM's query compiler, whose cost would exceed the write's.

    Its commit waits for the disk, as every commit of this project does: a write the
    database acknowledged survives a crash of the database (docs/RELIABILITY.md).
    """

    def __init__(self) -> None:
        self._rows: dict[type[Model], list[Model]] = {}
        self._updates: list[tuple[str, list]] = []
        self._updated: set[tuple[type[Model], Any]] = set()

    def __bool__(self) -> bool:
        return bool(self._rows or self._updates)

    def clear(self) -> None:
        self._rows, self._updates, self._updated = {}, [], set()

    def insert(self, *objs: Model) -> None:
        for obj in objs:
            self._rows.setdefault(type(obj), []).append(obj)

    def update(self, model: type[Model], pk: Any, /, **values: Any) -> None:
        """``UPDATE`` the row ``pk`` of ``model`` with ``values`` (by field name); a value
        wrapped in ``Add`` is added to the field's current value."""
        key = (model, pk)
        if key in self._updated:
            # PostgreSQL applies only one of two changes to a row in one statement.
            raise ValueError(f"{model.__name__} {pk} is already updated in this batch.")
        self._updated.add(key)
        opts = model._meta
        assignments, params = [], []
        for name, value in values.items():
            field = opts.get_field(name)
            column = quote_name(field.column)
            if isinstance(value, Add):
                assignments.append(f"{column} = {column} + %s")
                value = value.amount
            else:
                assignments.append(f"{column} = %s")
            params.append(field.get_db_prep_save(value, connection))
        params.append(opts.pk.get_db_prep_value(pk, connection))
        self._updates.append(
            (
                f"UPDATE {quote_name(opts.db_table)} SET {', '.join(assignments)} "
                f"WHERE {quote_name(opts.pk.column)} = %s",
                params,
            )
        )

    def write(self) -> None:
        writes = [_insert_sql(model, rows) for model, rows in self._rows.items()]
        writes += self._updates
        self.clear()
        if not writes:
            return
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                *first, (last_sql, last_params) = writes
                ctes = ", ".join(f"w{n} AS ({sql})" for n, (sql, _) in enumerate(first))
                params = [p for _, ps in first for p in ps] + last_params
                cursor.execute(f"WITH {ctes} {last_sql}" if first else last_sql, params)
            else:
                with transaction.atomic(savepoint=False):
                    for sql, params in writes:
                        cursor.execute(sql, params)


def insert_rows(*objs: Model) -> None:
    """Insert ``objs`` now, as one ``Batch``."""
    batch = Batch()
    batch.insert(*objs)
    batch.write()


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
    fields = model._meta.concrete_fields
    stop = start + len(fields)
    values = []
    for field, value in zip(fields, row[start:stop], strict=True):
        column = field.cached_col
        for converter in (
            *connection.ops.get_db_converters(column),
            *field.get_db_converters(connection),
        ):
            value = converter(value, column, connection)
        values.append(value)
    return model.from_db(connection.alias, [f.attname for f in fields], values), stop


@cache
def _insert_template(model: type[Model]) -> tuple[tuple[Field, ...], str, str]:
    """The columns an INSERT of ``model`` sets (every concrete field but a database-made
    id), its ``INSERT INTO table (columns) VALUES`` and one row's placeholders."""
    fields = tuple(
        f
        for f in model._meta.concrete_fields
        if not f.generated and not (f.primary_key and isinstance(f, AutoFieldMixin))
    )
    names = ", ".join(quote_name(f.column) for f in fields)
    insert = f"INSERT INTO {quote_name(model._meta.db_table)} ({names}) VALUES "
    return fields, insert, f"({', '.join(['%s'] * len(fields))})"


def _insert_sql(model: type[Model], rows: list[Model]) -> tuple[str, list]:
    fields, insert, row = _insert_template(model)
    params: list = []
    for obj in rows:
        obj._prepare_related_fields_for_save(operation_name="Batch.insert")
        # As the ORM's own INSERT does: pre_save fills auto_now_add and the like.
        params += [f.get_db_prep_save(f.pre_save(obj, True), connection) for f in fields]
        obj._state.adding = False
        obj._state.db = connection.alias
    return insert + ", ".join([row] * len(rows)), params
