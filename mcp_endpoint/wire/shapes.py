"""Downgrade result dicts to the negotiated revision, and add the 2026-07-28 result fields.

The registry produces newest-revision shapes; older clients must not see fields their
revision does not define (digest trap 11). Pure Python; inputs are never mutated.
"""

from __future__ import annotations

from typing import Any

from .versions import META_SERVER_INFO, MODERN

V_2024_11_05 = "2024-11-05"
V_2025_03_26 = "2025-03-26"
V_2025_06_18 = "2025-06-18"
V_2025_11_25 = "2025-11-25"


def _needs_downgrade(version: str) -> bool:
    return version < V_2025_11_25


def _strip_item(item: dict[str, Any], version: str) -> dict[str, Any]:
    """Prompt / Resource / ResourceTemplate / argument dicts."""
    out = dict(item)
    out.pop("icons", None)  # 2025-11-25+
    if version < V_2025_06_18:
        out.pop("title", None)
        out.pop("_meta", None)
        ann = out.get("annotations")
        if isinstance(ann, dict) and "lastModified" in ann:
            ann = {k: v for k, v in ann.items() if k != "lastModified"}
            if ann:
                out["annotations"] = ann
            else:
                out.pop("annotations")
        args = out.get("arguments")
        if isinstance(args, list):
            out["arguments"] = [_strip_item(a, version) if isinstance(a, dict) else a for a in args]
    return out


def shape_items(items: list[dict[str, Any]], version: str) -> list[dict[str, Any]]:
    if not _needs_downgrade(version):
        return items
    return [_strip_item(it, version) for it in items]


def _link_as_text(block: dict[str, Any]) -> dict[str, Any]:
    uri = block.get("uri", "")
    name = block.get("name") or uri
    label = f"Resource: {name} <{uri}>" if name != uri else f"Resource: <{uri}>"
    desc = block.get("description")
    if desc:
        label += f" - {desc}"
    return {"type": "text", "text": label}


def _audio_as_text(block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "text", "text": f"[audio ({block.get('mimeType') or 'audio'}) left out: this client's protocol "
                                    "revision has no audio content]"}


def shape_block(block: Any, version: str) -> dict[str, Any]:
    """One content block (text, image, audio, resource, resource_link); anything else as given."""
    if not _needs_downgrade(version) or not isinstance(block, dict):
        return block
    if block.get("type") == "audio" and version < V_2025_03_26:  # audio content arrived in 2025-03-26
        return _audio_as_text(block)
    if block.get("type") == "resource_link":
        if version < V_2025_06_18:
            return _link_as_text(block)
        return _strip_item(block, version)
    out = _strip_item(block, version) if version < V_2025_06_18 else dict(block)
    out.pop("icons", None)
    res = out.get("resource")
    if isinstance(res, dict) and version < V_2025_06_18 and "_meta" in res:
        out["resource"] = {k: v for k, v in res.items() if k != "_meta"}
    return out


def shape_prompt_result(result: dict[str, Any], version: str) -> dict[str, Any]:
    if not _needs_downgrade(version):
        return result
    out = dict(result)
    out["messages"] = [
        dict(m, content=shape_block(m.get("content"), version)) if isinstance(m, dict) else m
        for m in result.get("messages", [])
    ]
    return out


def shape_contents(result: dict[str, Any], version: str) -> dict[str, Any]:
    """resources/read results: content items have no annotations; ``_meta`` since 2025-06-18."""
    if version >= V_2025_06_18:
        return result
    out = dict(result)
    out["contents"] = [{k: v for k, v in c.items() if k != "_meta"} for c in result.get("contents", [])]
    return out


def shape_tool_result(result: dict[str, Any], version: str) -> dict[str, Any]:
    if not _needs_downgrade(version):
        return result
    out = dict(result)
    out["content"] = [shape_block(b, version) for b in result.get("content", [])]
    if version < V_2025_06_18:
        out.pop("structuredContent", None)
    return out


def shape_tool(tool: dict[str, Any], version: str) -> dict[str, Any]:
    if not _needs_downgrade(version):
        return tool
    out = _strip_item(tool, version)
    if version < V_2025_06_18:
        out.pop("outputSchema", None)
    if version < V_2025_03_26:
        out.pop("annotations", None)  # tool annotations arrived in 2025-03-26
    return out


def shape_server_info(info: dict[str, Any], version: str) -> dict[str, Any]:
    """``Implementation``: title since 2025-06-18; description/icons/websiteUrl since 2025-11-25."""
    if not _needs_downgrade(version):
        return info
    out = {k: v for k, v in info.items() if k not in ("description", "icons", "websiteUrl")}
    if version < V_2025_06_18:
        out.pop("title", None)
    return out


def finalize_modern(result: dict[str, Any], server_info: dict[str, Any], *,
                    cache: tuple[int, str] | None = None, result_type: str = "complete") -> dict[str, Any]:
    """2026-07-28: ``resultType`` on every result, serverInfo in ``_meta``, caching hints on
    cacheable results only. Legacy results never pass through here."""
    out = dict(result)
    out["resultType"] = result_type
    if cache is not None:
        out["ttlMs"], out["cacheScope"] = cache
    meta = dict(out.get("_meta") or {})
    meta[META_SERVER_INFO] = server_info
    out["_meta"] = meta
    return out


def is_modern(version: str) -> bool:
    return version == MODERN
