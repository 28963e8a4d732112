"""DRF's JSON parser, answering a body nested deeper than Python's recursion limit with 400.

The standard library's decoder recurses once per nesting level, so ``[[[[...]]]]`` a few
thousand deep raises RecursionError, which is not the ValueError DRF turns into "JSON parse
error": every endpoint that read JSON answered such a body with a 500 and a logged traceback.
"""

from __future__ import annotations

from typing import Any

from rest_framework import parsers
from rest_framework.exceptions import ParseError


class JSONParser(parsers.JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - the body is nested too deeply.") from None
