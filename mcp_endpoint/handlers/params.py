"""Reading a request's params: the checks every handler shares (-32602 when they fail)."""

from __future__ import annotations

from typing import Any

from ..wire import errors


def str_param(params: dict[str, Any], name: str) -> str:
    value = params.get(name)
    if not isinstance(value, str) or not value:
        raise errors.InvalidParams(f"params.{name} must be a non-empty string")
    return value


def string_map(value: Any, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise errors.InvalidParams(f"{what} must be an object of string values")
    return value
