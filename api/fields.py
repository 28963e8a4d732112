"""Serializer fields shared by the API modules."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers


class StrictCharField(serializers.CharField):
    """A text field that takes text only. DRF's CharField turns a JSON number or boolean into its
    string (`"text": 5` saved "5", `true` saved "True"); prompts as code refuse the same value with
    "expected a string" (registry.portable.check), and the API says the same instead of guessing."""

    default_error_messages = {"invalid": "Expected a string, got {given}: put it in quotes."}

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            given = "true/false" if isinstance(data, bool) else "a number" if isinstance(data, (int, float)) else (
                "a list" if isinstance(data, list) else "a mapping" if isinstance(data, dict) else "nothing")
            self.fail("invalid", given=given)
        return super().to_internal_value(data)


@extend_schema_field({"type": "string", "format": "byte", "nullable": True,
                      "description": "Bytes as base64, or null for none."})
class Base64BytesField(serializers.Field):
    default_error_messages = {"invalid": "Give the bytes as base64 text."}

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("allow_null", True)
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> bytes | None:
        if data in (None, ""):
            return None
        if not isinstance(data, str):
            self.fail("invalid")
        try:
            return base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            self.fail("invalid")

    def to_representation(self, value: Any) -> str | None:
        return base64.b64encode(bytes(value)).decode("ascii") if value else None
