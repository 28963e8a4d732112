"""Markdown documents as the admin's previews show them: rendered, and safe to put in the page.

A resource or template whose media type says Markdown is previewed rendered beside its raw text,
so an editor sees the headings, lists and links a client's Markdown view will show. The text is
the editors' own, but it may be imported from anywhere, and the admin page is the most privileged
page there is: so it is parsed by markdown-it-py (CommonMark, tables and strikethrough, raw HTML
off: `<script>` in a document is shown as text) and the result is sanitised again by nh3 (ammonia)
to a short list of tags and attributes, links limited to http, https and mailto. Images are shown
as links, not loaded: a preview must not fetch from hosts a document names. Pure: no ORM.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import nh3
from markdown_it import MarkdownIt
from markdown_it.token import Token

MARKDOWN_TYPES = frozenset({"text/markdown", "text/x-markdown"})
PREVIEW_LIMIT = 100_000  # characters rendered (hostile input costs at most about a second); the raw text shows all

_TAGS = {"a", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "li", "ol", "p",
         "pre", "s", "strong", "table", "tbody", "td", "th", "thead", "tr", "ul"}
_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}, "td": {"style"}, "th": {"style"}}
_SCHEMES = {"http", "https", "mailto"}


def is_markdown(mime_type: str | None) -> bool:
    """Whether a document of this media type is Markdown (parameters such as charset ignored)."""
    return (mime_type or "").split(";", 1)[0].strip().lower() in MARKDOWN_TYPES


def _image_as_link(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    """`![alt](src)` as a link reading "[alt]": its plain alt text (no markup, so no link in a
    link), else the address, never a data: URI's payload."""
    token = tokens[idx]
    src = str(token.attrGet("src") or "")  # normalised and scheme-checked by the parser; nh3 checks again
    shown = token.content or ("image" if src.lower().startswith("data:") else src)
    return f'<a href="{_escape(src)}">[{_escape(shown)}]</a>'


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")


def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
    md.add_render_rule("image", _image_as_link)
    return md


_MD = _parser()


def _absolute_links_only(tag: str, attribute: str, value: str) -> str | None:
    """Drop an href that is relative or protocol-relative (`/admin/...`, `//host/x`): nh3's scheme
    list lets those through, and a document must not link into the admin or leave it unasked."""
    if tag == "a" and attribute == "href" and value.split(":", 1)[0].lower() not in _SCHEMES:
        return None
    return value


@lru_cache(maxsize=32)  # a preview page is opened again and again on the same text
def markdown_html(text: str) -> str:
    """`text` rendered to HTML that is safe to insert into an admin page as is; links open in a new tab."""
    rendered = _MD.render(text[:PREVIEW_LIMIT])
    return nh3.clean(rendered, tags=_TAGS, attributes=_ATTRIBUTES, url_schemes=_SCHEMES,
                     attribute_filter=_absolute_links_only, set_tag_attribute_values={"a": {"target": "_blank"}},
                     link_rel="noopener noreferrer nofollow", filter_style_properties={"text-align"})
