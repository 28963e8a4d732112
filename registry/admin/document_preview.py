"""What a preview shows of one document a client reads (a resource, a template's URI): its text,
rendered beside it when it is Markdown, an uploaded image or sound as itself, and the exact JSON result."""

from __future__ import annotations

import json
from typing import Any

from django.utils.safestring import mark_safe

from registry.formats.markdown import is_markdown, markdown_html


def document_preview(item: dict[str, Any]) -> dict[str, Any]:
    """The context of `_document_preview.html` for one `resources/read` content item."""
    text = item.get("text")
    mime = item.get("mimeType") or ""
    context: dict[str, Any] = {
        "result_json": json.dumps({"contents": [item]}, indent=2, ensure_ascii=False),
        "text": text if isinstance(text, str) else None,
        # Sanitised by markdown_html (raw HTML off, then nh3): safe to put in the page as it is.
        "markdown": mark_safe(markdown_html(text)) if isinstance(text, str) and is_markdown(mime) else None,
    }
    blob = item.get("blob")
    if isinstance(blob, str):
        context["blob_size"] = len(blob) * 3 // 4 - blob[-2:].count("=")
        if mime.startswith("image/"):
            context["image_src"] = f"data:{mime};base64,{blob}"
        elif mime.startswith("audio/"):
            context["audio_src"] = f"data:{mime};base64,{blob}"
    return context
