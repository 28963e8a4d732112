"""A condition "this column's value is one of these ids", for the long id lists cold reads pass.

A cold list run reads up to 2,000 entries by id (registry/serving/page_runs.py). Django's `__in`
lookup prepares each value through the field, its related lookup and the expression resolver,
about 2.5 us per id: 5 of the 13 ms a run of 2,000 prompts spent in the database query
(bench/cold_listing.py, 20k + 20k, SQLite). The ids here are integers the registry read itself,
so they are written into the SQL as integer literals after `int()`, never as text from outside:
nothing can be injected. Short lists keep the plain lookup.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import connection
from django.db.models import BooleanField, Q
from django.db.models.expressions import RawSQL

LITERAL_FROM = 64  # lists at least this long are written as literals; shorter ones are cheap either way


def id_in(model: Any, column: str, ids: Iterable[int]) -> Q | RawSQL:
    """A filter() argument: `model`'s `column` (a database column name, e.g. "entry_id") in `ids`.
    An empty list matches nothing, as `__in=[]` does."""
    values = sorted({int(value) for value in ids})
    if len(values) < LITERAL_FROM:
        return Q(**{f"{column}__in": values})
    qualified = f"{connection.ops.quote_name(model._meta.db_table)}.{connection.ops.quote_name(column)}"
    return RawSQL(f"{qualified} IN ({','.join(map(str, values))})", [], output_field=BooleanField())
