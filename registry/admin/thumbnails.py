"""Thumbnails of stored bytes for the admin's lists and forms: an image, an audio player, or a file's summary.

The bytes go inline as a data: URI, so showing them needs no download view; bytes missing from
the content store are shown as a warning instead.
"""

from __future__ import annotations

from typing import Any

from django.utils.html import format_html
from django.utils.translation import gettext as _

from registry.errors import ContentMissing


def data_uri(mime_type: str, data: bytes | memoryview | None) -> str:
    import base64

    return f"data:{mime_type};base64,{base64.b64encode(bytes(data or b'')).decode('ascii')}"


def stored_thumbnail(row: Any) -> str:
    """Thumbnail of a draft row's stored bytes (a resource or message), or a warning when they are gone."""
    if not row.data_sha256:
        return "—"
    mime_type = row.mime_type or "application/octet-stream"
    if not mime_type.startswith(("image/", "audio/")):
        return format_html(_("{} file, {} bytes, sha256 {}"), mime_type, f"{row.data_size:,}", row.data_sha256[:12])
    try:
        data = row.data
    except ContentMissing as exc:
        return format_html('<strong class="errornote">{}</strong>', exc.message)
    return thumbnail_html(mime_type, data)


def thumbnail_html(mime_type: str, data: bytes | memoryview | None) -> str:
    if not data:
        return "—"
    mime_type = mime_type or "application/octet-stream"
    if mime_type.startswith("image/"):
        return format_html('<img src="{}" alt="{}" style="max-height:96px;max-width:160px">',
                           data_uri(mime_type, data), _("thumbnail"))
    if mime_type.startswith("audio/"):
        return format_html('<audio controls src="{}"></audio>', data_uri(mime_type, data))
    return format_html(_("{} file, {} bytes"), mime_type, f"{len(bytes(data)):,}")
