"""A step's rows written together, in one statement on PostgreSQL, and only while a row
still says the writer may (``Fence``): ``Batch``, and the INSERT it builds for a model."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, time
from decimal import Decimal
from functools import cache, partial
from operator import attrgetter
from typing import Any

from django.db import DEFAULT_DB_ALIAS, IntegrityError, connection, connections, transaction
from django.db.models import DateField, DateTimeField, Field, JSONField, Model
from django.db.models.base import ModelState
from django.db.models.fields import AutoFieldMixin
from django.db.models.signals import post_init, pre_init
from psycopg.types.json import Jsonb

from adstudio.db.sql import quote_name


class WriteConflict(IntegrityError):
    """A batch's row collided with a row a concurrent writer has committed (a unique
    constraint): what the batch was built from is stale, and nothing of it was written.
    The writer reads again and builds its rows anew."""


def _unique_violation(exc: IntegrityError) -> bool:
    return getattr(exc.__cause__, "sqlstate", None) == "23505" or (
        connection.vendor == "sqlite" and "UNIQUE constraint failed" in str(exc)
    )


@dataclass(frozen=True)
class Add:
    """An update value that adds ``amount`` to the field's current value."""

    amount: int | Decimal


@dataclass(frozen=True)
class Fence:
    """The condition a ``Batch`` is written under: ``model``'s row ``pk`` holds ``values``
    (by field name), e.g. a run still held under its worker's claim token.

    The batch's own statement checks it and takes the row's key-share lock, so the check
    and the writes are atomic: a writer that changes the row under ``FOR UPDATE`` (a
    claim) either waits until the batch is committed or is seen by it, and then nothing
    of the batch is written."""

    model: type[Model]
    pk: Any
    values: dict[str, Any]


@dataclass(frozen=True)
class BatchMark:
    """What a ``Batch`` held at a point: its rows per model and its updated rows."""

    rows: dict[type[Model], int]
    updated: frozenset


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

    With a ``fence``, the batch is written only while the fence's row holds its values,
    checked by the same statement; ``write()`` says whether it was. A row that a unique
    constraint refuses raises ``WriteConflict``.
    """

    def __init__(self, *, fence: Fence | None = None) -> None:
        self.fence = fence
        self._rows: dict[type[Model], list[Model]] = {}
        # Per (model, pk) updated, its UPDATE statement and parameters.
        self._updates: dict[tuple[type[Model], Any], tuple[str, list]] = {}

    def __bool__(self) -> bool:
        return bool(self._rows or self._updates)

    def clear(self) -> None:
        self._rows, self._updates = {}, {}

    def mark(self) -> BatchMark:
        """Where the batch is now, for ``rollback_to``."""
        return BatchMark(
            rows={model: len(rows) for model, rows in self._rows.items()},
            updated=frozenset(self._updates),
        )

    def rollback_to(self, mark: BatchMark) -> None:
        """Discard what was staged since ``mark`` (the batch's savepoint); a write since
        then has emptied the batch, and nothing is brought back."""
        self._rows = {
            model: rows[: mark.rows[model]]
            for model, rows in self._rows.items()
            if mark.rows.get(model)
        }
        self._updates = {key: u for key, u in self._updates.items() if key in mark.updated}

    def insert(self, *objs: Model) -> None:
        for obj in objs:
            self._rows.setdefault(type(obj), []).append(obj)

    def update(self, model: type[Model], pk: Any, /, **values: Any) -> None:
        """``UPDATE`` the row ``pk`` of ``model`` with ``values`` (by field name); a value
        wrapped in ``Add`` is added to the field's current value."""
        key = (model, pk)
        if key in self._updates:
            # PostgreSQL applies only one of two changes to a row in one statement.
            raise ValueError(f"{model.__name__} {pk} is already updated in this batch.")
        opts = model._meta
        db = connections[DEFAULT_DB_ALIAS]  # not the proxy (``_insert_sql``)
        assignments, params = [], []
        for name, value in values.items():
            field = opts.get_field(name)
            column = quote_name(field.column)
            if isinstance(value, Add):
                assignments.append(f"{column} = {column} + %s")
                value = value.amount
            else:
                assignments.append(f"{column} = %s")
            params.append(field.get_db_prep_save(value, db))
        params.append(opts.pk.get_db_prep_value(pk, db))
        self._updates[key] = (
            f"UPDATE {quote_name(opts.db_table)} SET {', '.join(assignments)} "
            f"WHERE {quote_name(opts.pk.column)} = %s",
            params,
        )

    def pop_update(self, model: type[Model], pk: Any, /) -> bool:
        """Drop the staged update of ``model``'s row ``pk`` (for a caller whose own
        statement sets that row); whether there was one."""
        return self._updates.pop((model, pk), None) is not None

    def holds(self, model: type[Model]) -> bool:
        """Whether rows of ``model`` are staged."""
        return bool(self._rows.get(model))

    def staged(self, model: type[Model]) -> list[Model]:
        """The rows of ``model`` staged, in order: what a later call of the same step reads
        before they are written."""
        return list(self._rows.get(model, ()))

    @property
    def updated_rows(self) -> frozenset[tuple[type[Model], Any]]:
        """The (model, pk) of each row the batch updates."""
        return frozenset(self._updates)

    def statements(self, *, fenced: bool = False) -> list[tuple[str, list]]:
        """The staged writes, one INSERT per model then the UPDATEs; ``fenced``: each
        writes only if the statement it is part of has a row in its ``fence`` CTE."""
        writes = [_insert_sql(model, rows, fenced=fenced) for model, rows in self._rows.items()]
        for sql, params in self._updates.values():
            # The UPDATE's WHERE clause ends it.
            writes.append((f"{sql} AND EXISTS (SELECT 1 FROM fence)" if fenced else sql, params))
        return writes

    def write(self) -> bool:
        """Write what is staged and clear it. False when the fence no longer holds: then
        nothing was written. A write that raises keeps what is staged, for the caller to
        roll back to a mark and write again."""
        try:
            written = self._write()
        except IntegrityError as exc:
            if _unique_violation(exc):
                raise WriteConflict(str(exc)) from exc
            raise
        self.clear()
        return written

    def _write(self) -> bool:
        fence = self.fence if connection.vendor == "postgresql" else None
        writes = self.statements(fenced=fence is not None)
        if not writes:
            return True
        with connection.cursor() as cursor:
            if fence is not None:
                return _write_fenced(cursor, fence, writes)
            if connection.vendor == "postgresql":
                *first, (last_sql, last_params) = writes
                ctes = ", ".join(f"w{n} AS ({sql})" for n, (sql, _) in enumerate(first))
                params = [p for _, ps in first for p in ps] + last_params
                cursor.execute(f"WITH {ctes} {last_sql}" if first else last_sql, params)
                return True
            with transaction.atomic(savepoint=False):
                if self.fence is not None:
                    sql, params = _fence_sql(self.fence, lock="")
                    cursor.execute(sql, params)
                    if cursor.fetchone() is None:
                        return False
                for sql, params in writes:
                    cursor.execute(sql, params)
            return True


def _fence_sql(fence: Fence, *, lock: str = " FOR KEY SHARE") -> tuple[str, list]:
    """SELECT the fence's row while it holds the fence's values, locked with ``lock``."""
    opts = fence.model._meta
    conditions, params = (
        [f"{quote_name(opts.pk.column)} = %s"],
        [opts.pk.get_db_prep_value(fence.pk, connection)],
    )
    for name, value in fence.values.items():
        field = opts.get_field(name)
        conditions.append(f"{quote_name(field.column)} = %s")
        params.append(field.get_db_prep_save(value, connection))
    table = quote_name(opts.db_table)
    return f"SELECT 1 FROM {table} WHERE {' AND '.join(conditions)}{lock}", params


def _write_fenced(cursor, fence: Fence, writes: list[tuple[str, list]]) -> bool:
    """The writes as one statement (PostgreSQL) that checks and locks the fence's row
    first; each write happens only if the fence holds. Returns whether it held."""
    fence_sql, params = _fence_sql(fence)
    ctes, write_params = fenced_writes(writes)
    cursor.execute(
        f"WITH fence AS MATERIALIZED ({fence_sql}), {ctes} SELECT count(*) FROM fence",
        params + write_params,
    )
    return cursor.fetchone()[0] > 0


def fenced_writes(writes: list[tuple[str, list]]) -> tuple[str, list]:
    """``Batch.statements(fenced=True)`` as the CTEs of one statement that defines
    ``fence``, and their parameters."""
    ctes = ", ".join(f"w{n} AS ({sql})" for n, (sql, _) in enumerate(writes))
    return ctes, [p for _, params in writes for p in params]


def new_row[M: Model](model: type[M], /, **values: Any) -> M:
    """A new, unsaved ``model`` instance with ``values`` (by attribute name: ``run_id``, not
    ``run``) and every other field at its default, as ``model(**values)`` makes it, for a
    ``Batch``, in a third of the time: ``Model.__init__`` walks every field and its
    descriptors and sends two signals, and the agent loop stages about seven rows a round.
    A model with ``pre_init`` or ``post_init`` receivers is made by ``__init__``."""
    attnames, fixed, made = _row_fields(model)
    if (pre_init.receivers or post_init.receivers) and (
        pre_init.has_listeners(model) or post_init.has_listeners(model)
    ):
        return model(**values)
    if not attnames.issuperset(values):
        unknown = ", ".join(sorted(values.keys() - attnames))
        raise TypeError(f"{model.__name__} has no field {unknown}")
    obj = model.__new__(model)
    obj._state = ModelState()
    row = obj.__dict__
    row.update(fixed)
    for attname, default in made:
        if attname not in values:
            row[attname] = default()
    row.update(values)
    return obj


@cache
def _row_fields(
    model: type[Model],
) -> tuple[frozenset[str], dict[str, Any], tuple[tuple[str, Callable], ...]]:
    """The attribute names of ``model``'s concrete fields; the defaults that are one value
    (``Field.get_default`` gives that same value every time); and the default makers of
    the others (a callable default, a database default)."""
    fields = [f for f in model._meta.concrete_fields if f.column and not f.generated]
    made = [f for f in fields if callable(f.default) or f.has_db_default()]
    return (
        frozenset(f.attname for f in fields),
        {f.attname: f.get_default() for f in fields if f not in made},
        tuple((f.attname, f.get_default) for f in made),
    )


def insert_rows(*objs: Model) -> None:
    """Insert ``objs`` now, as one ``Batch``."""
    batch = Batch()
    batch.insert(*objs)
    batch.write()


@cache
def _insert_template(model: type[Model]) -> tuple[tuple[Field, ...], str, str, str]:
    """The columns an INSERT of ``model`` sets (every concrete field but a database-made
    id), its ``INSERT INTO table (columns)``, one row's placeholders, and (PostgreSQL) the
    ``SELECT`` of rows from one JSON parameter, an array of rows, each an array of its
    values as text, cast to their columns' types."""
    fields = tuple(
        f
        for f in model._meta.concrete_fields
        if not f.generated and not (f.primary_key and isinstance(f, AutoFieldMixin))
    )
    names = ", ".join(quote_name(f.column) for f in fields)
    insert = f"INSERT INTO {quote_name(model._meta.db_table)} ({names}) "
    # Character types without their length: a cast would cut a long value, where the
    # INSERT itself refuses it.
    casts = [re.sub(r"^varchar\(\d+\)$", "varchar", f.cast_db_type(connection)) for f in fields]
    # A row's creation time is the database's (``auto_now_add``), whichever host writes it:
    # the rows of one run, written by hosts whose clocks disagree, stay in order.
    values = ", ".join(
        "statement_timestamp()"
        if _created_at(f)
        # A JSON value is in the row as itself, not as its text: encoded and parsed once.
        else f"NULLIF(r -> {n}, 'null')"
        if _nested_json(f)
        else f"(r ->> {n})::{cast}"
        for n, (f, cast) in enumerate(zip(fields, casts, strict=True))
    )
    return (
        fields,
        insert,
        f"({', '.join(['%s'] * len(fields))})",
        f"SELECT {values} FROM jsonb_array_elements(%s::jsonb) r",
    )


def _created_at(field: Field) -> bool:
    return isinstance(field, DateTimeField) and field.auto_now_add


def _nested_json(field: Field) -> bool:
    """Whether the field's values go into ``_insert_sql``'s JSON rows as JSON values (a
    JSON column without an encoder of its own; its None is SQL NULL, as Django stores it)."""
    return isinstance(field, JSONField) and field.encoder is None


def _insert_sql(model: type[Model], rows: list[Model], *, fenced: bool = False) -> tuple[str, list]:
    """The INSERT of ``rows``; ``fenced``: of the rows only if the statement's ``fence``
    CTE has a row (``_write_fenced``).

    On PostgreSQL the rows are one JSON parameter: the statement's text and its number of
    parameters do not grow with its rows, so the driver converts it once per shape (it
    converts anew every statement with more than 50 parameters) and the server prepares
    it once."""
    fields, insert, row, select_json = _insert_template(model)
    # The thread's connection itself, not the ``connection`` proxy: each of the proxy's
    # attribute lookups, in every field's preparation, goes through a context-local.
    db = connections[DEFAULT_DB_ALIAS]
    for obj in rows:
        if obj._state.fields_cache:  # what the check looks at: related instances set
            obj._prepare_related_fields_for_save(operation_name="Batch.insert")
    if db.vendor == "postgresql":
        columns = _text_columns(model)
        data = [[text(get(obj)) for get, text in columns] for obj in rows]
        _saved(rows)
        where = " WHERE EXISTS (SELECT 1 FROM fence)" if fenced else ""
        return f"{insert}{select_json}{where}", [json.dumps(data, ensure_ascii=False)]
    # As the ORM's own INSERT does: pre_save fills auto_now_add and the like.
    params = [f.get_db_prep_save(f.pre_save(obj, True), db) for obj in rows for f in fields]
    _saved(rows)
    return f"{insert}VALUES " + ", ".join([row] * len(rows)), params


def _saved(rows: list[Model]) -> None:
    for obj in rows:
        obj._state.adding = False
        obj._state.db = DEFAULT_DB_ALIAS


@cache
def _text_columns(model: type[Model]) -> tuple[tuple[Callable, Callable], ...]:
    """Per column of ``_insert_template(model)``: how to read an instance's value (as the
    field's ``pre_save`` for an insert) and how to write it as the column's text."""
    return tuple(
        (
            attrgetter(f.attname) if _plain_pre_save(f) else partial(f.pre_save, add=True),
            _text_of(f),
        )
        for f in _insert_template(model)[0]
    )


def _plain_pre_save(field: Field) -> bool:
    """Whether the field's ``pre_save`` on insert only reads the instance's attribute."""
    if isinstance(field, DateField):  # and DateTimeField
        return not (field.auto_now or field.auto_now_add)
    return type(field).pre_save is Field.pre_save


def _text_of(field: Field) -> Callable[[Any], str | None]:
    """The field's value as its column's text, as ``_as_text(field.get_db_prep_save(...))``
    gives it: the common types directly, without the field's chain of preparation
    methods (most of a row's cost); anything else through that chain."""
    target = field.target_field if field.is_relation else field
    kind = target.get_internal_type()

    def prepared(value: Any) -> str | None:
        return _as_text(field.get_db_prep_save(value, connections[DEFAULT_DB_ALIAS]))

    if kind in ("CharField", "TextField"):
        return lambda v: v if isinstance(v, str) else prepared(v)
    if kind in _INTEGER_KINDS:
        return lambda v: str(v) if type(v) is int else prepared(v)
    if kind == "BooleanField":
        return lambda v: ("true" if v else "false") if type(v) is bool else prepared(v)
    if kind == "UUIDField":  # PostgreSQL's own type (this path is PostgreSQL's)
        return lambda v: str(v) if type(v) is uuid.UUID else prepared(v)
    if kind == "DateTimeField":
        return lambda v: v.isoformat() if type(v) is datetime and v.tzinfo else prepared(v)
    if _nested_json(field):
        return lambda v: v if type(v) in _JSON_TYPES else _parsed(prepared(v))
    if kind == "JSONField":
        dumps = partial(json.dumps, cls=target.encoder)
        return lambda v: dumps(v) if type(v) in (dict, list) else prepared(v)
    return prepared


# Values the rows' own JSON encoding writes as Django's JSONField would (None: null, which
# the INSERT makes NULL).
_JSON_TYPES = frozenset((dict, list, str, int, float, bool, type(None)))


def _parsed(text: str | None) -> Any:
    return None if text is None else json.loads(text)


_INTEGER_KINDS = frozenset(
    (
        *(f"{size}IntegerField" for size in ("", "Small", "Big", "Positive", "PositiveSmall")),
        *("PositiveBigIntegerField", "AutoField", "SmallAutoField", "BigAutoField"),
    )
)


def _as_text(value: Any) -> str | None:
    """A value as a field prepared it for the database, in its column type's text form
    (``_insert_sql``'s JSON rows); None is NULL."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Jsonb):  # a JSONField's value, as Django adapts it
        return (value.dumps or json.dumps)(value.obj)
    if isinstance(value, date | time):
        return value.isoformat()
    if isinstance(value, int | float | Decimal | uuid.UUID):
        return str(value)
    raise TypeError(f"Batch cannot write a {type(value).__name__} value.")
