"""Request body parsers for the API: JSON that every later step can store and encode.

JSON allows escapes such as "\\ud800" that decode to a lone UTF-16 surrogate, a Python string no
database driver, file or JSON encoder accepts; left in, it fails deep inside a save or a
response as a server error. Such bodies are refused here as a 400 that names the field.
"""

from __future__ import annotations

import re
from typing import Any

from rest_framework import parsers
from rest_framework.exceptions import ParseError

_SURROGATE = re.compile("[\ud800-\udfff]")


def surrogate_path(value: Any, path: str = "") -> str | None:
    """Where in parsed JSON (``messages[2].text``) a string holds a surrogate, or None."""
    if isinstance(value, str):
        return (path or "the body") if _SURROGATE.search(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            found = surrogate_path(key, where) or surrogate_path(item, where)
            if found:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = surrogate_path(item, f"{path}[{index}]")
            if found:
                return found
    return None


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser, refusing strings that hold UTF-16 surrogates."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        data = super().parse(stream, media_type, parser_context)
        where = surrogate_path(data)
        if where is not None:
            raise ParseError(f"JSON parse error - {where}: the text contains a UTF-16 surrogate escape "
                             "(\\ud800 to \\udfff) that is not part of a pair, which is not a character.")
        return data
