"""ORM queries and inserts compiled once per process and run many times, for the few hot paths (workflow
submission) where building and compiling a queryset costs several times more CPU than running it.

    NODES = PreparedQuery(lambda platform_ids: NodeMembership.objects.filter(
        platform_id__in=platform_ids).values_list("platform_id", "node__name"))
    rows = NODES.rows([3, 4])

The query is still written with the ORM. The first run for a given shape (the length of each list
parameter) builds the queryset with *markers* in place of the parameters, compiles it, and remembers
where each marker landed among the SQL parameters; later runs put the real values there and execute
the SQL directly, converting each column with the compiler's own converters (JSON, dates, decimals).
The rows are exactly what iterating the `values_list` queryset would give.

Limits, checked at compile time (a query that breaks them fails loudly in tests, not silently later):
`values_list` of plain fields only; parameters are ints or strs used with `=`/`__in` (a marker must
reach the SQL unchanged, exactly once, so `__startswith` and friends are refused).

`PreparedInsert(Model).insert(objs)` is `bulk_create(objs)` for plain rows (no expressions as values;
models without save signals or multi-table inheritance), with the INSERT compiled once per row count.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from django.core.exceptions import EmptyResultSet
from django.db import connections
from django.db.models import AutoField, QuerySet
from django.db.models.query import ValuesListIterable
from django.db.models.sql import InsertQuery

_INT_MARKER = -1_987_000_000  # far from any real id, inside a 32-bit integer column's range
_STR_MARKER = "\x1fprepared-parameter-{}\x1f"


@dataclass(frozen=True)
class _Compiled:
    sql: str
    slots: tuple[tuple[int, int], ...]  # (position in the SQL parameters, index in the flattened arguments)
    constants: tuple  # the SQL parameters that are not markers
    converters: tuple  # (column, converter functions, expression)


class PreparedQuery:
    def __init__(self, build: Callable[..., QuerySet], using: str = "default") -> None:
        self.build = build
        self.using = using
        self._compiled: dict[tuple, _Compiled] = {}
        self._lock = threading.Lock()

    def rows(self, *args) -> list[tuple]:
        connection = connections[self.using]
        shape = (connection.vendor, *(len(a) if isinstance(a, list | tuple) else type(a) for a in args))
        compiled = self._compiled.get(shape)
        if compiled is None:
            with self._lock:
                compiled = self._compiled[shape] = self._compile(args)
        if compiled is _EMPTY:
            return []
        flat = [v for a in args for v in (a if isinstance(a, list | tuple) else (a,))]
        params = list(compiled.constants)
        for position, index in compiled.slots:
            params[position] = flat[index]
        with connection.cursor() as cursor:
            cursor.execute(compiled.sql, params)
            fetched = cursor.fetchall()
        if not compiled.converters:
            return fetched
        return [_convert(row, compiled.converters, connection) for row in fetched]

    def _compile(self, args: Sequence) -> _Compiled:
        markers, numbered = [], iter(range(1_000_000))
        marked_args = []
        for arg in args:
            if isinstance(arg, list | tuple):
                marked = [_marker(v, next(numbered)) for v in arg]
                markers += marked
                marked_args.append(marked)
            else:
                marked_args.append(_marker(arg, next(numbered)))
                markers.append(marked_args[-1])
        queryset = self.build(*marked_args)
        if (
            queryset._iterable_class is not ValuesListIterable
            or queryset.query.annotation_select
            or queryset.query.extra_select
        ):
            raise TypeError("a prepared query must be a values_list of plain fields")
        compiler = queryset.query.get_compiler(self.using)
        try:
            sql, params = compiler.as_sql()
        except EmptyResultSet:  # e.g. `__in` an empty list: no SQL, no rows
            return _EMPTY
        params = list(params)
        slots = []
        for index, marker in enumerate(markers):
            positions = [i for i, p in enumerate(params) if type(p) is type(marker) and p == marker]
            if len(positions) != 1:
                raise TypeError(
                    f"parameter {index} of a prepared query must reach the SQL unchanged, once "
                    f"(found {len(positions)} times): use it with = or __in only"
                )
            slots.append((positions[0], index))
        fields = [s[0] for s in compiler.select[: compiler.col_count]]
        converters = tuple(
            (column, tuple(functions), expression)
            for column, (functions, expression) in compiler.get_converters(fields).items()
        )
        return _Compiled(sql, tuple(slots), tuple(params), converters)


_EMPTY = _Compiled("", (), (), ())


def _marker(value, number: int):
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise TypeError(f"a prepared query parameter must be an int or a str, not {type(value).__name__}")
    return _INT_MARKER - number if isinstance(value, int) else _STR_MARKER.format(number)


def _convert(row: tuple, converters: tuple, connection) -> tuple:
    values = list(row)
    for column, functions, expression in converters:
        value = values[column]
        for function in functions:
            value = function(value, expression, connection)
        values[column] = value
    return tuple(values)


class PreparedInsert:
    """INSERT … RETURNING of unsaved instances of one model, compiled once per (database, row count).

    Values go through each field's own `pre_save` (auto_now_add) and `get_db_prep_save` (JSON, UUID,
    dates) and Django's own placeholder layout (one row per object, or PostgreSQL's UNNEST), exactly as
    `bulk_create` does; the objects get their primary keys and count as saved.
    """

    def __init__(self, model, using: str = "default") -> None:
        opts = model._meta
        if opts.parents:
            raise TypeError(f"{model.__name__}: multi-table inheritance is not supported")
        self.model = model
        self.using = using
        self.fields = [f for f in opts.concrete_fields if not f.generated and not isinstance(f, AutoField)]
        self.returning = opts.db_returning_fields
        self._compiled: dict[tuple, tuple] = {}

    def insert(self, objs: list) -> list:
        if not objs:
            return objs
        connection = connections[self.using]
        key = (connection.vendor, len(objs))
        compiled = self._compiled.get(key)
        if compiled is None:
            query = InsertQuery(self.model)
            query.insert_values(self.fields, objs)
            compiler = query.get_compiler(using=self.using)
            compiler.returning_fields = self.returning
            statements = compiler.as_sql()
            if len(statements) != 1:
                raise TypeError(f"{self.model.__name__}: the database cannot insert {len(objs)} rows in one statement")
            compiled = self._compiled[key] = (statements[0][0], compiler)
        sql, compiler = compiled
        rows = [
            [field.get_db_prep_save(field.pre_save(obj, True), connection) for field in self.fields] for obj in objs
        ]
        if any(hasattr(value, "resolve_expression") for row in rows for value in row):
            raise TypeError(f"{self.model.__name__}: a prepared insert takes plain values, not expressions")
        _, param_rows = compiler.assemble_as_sql(self.fields, rows)
        with connection.cursor() as cursor:
            cursor.execute(sql, [p for row in param_rows for p in row])
            returned = cursor.fetchall()
        for obj, values in zip(objs, returned, strict=True):
            for field, value in zip(self.returning, values, strict=True):
                setattr(obj, field.attname, value)
            obj._state.adding = False
            obj._state.db = self.using
        return objs
