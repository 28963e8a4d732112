"""The floor of any Python MCP server on this ASGI stack: what `prompts/get` and `resources/read`
cost when a server does only what it cannot avoid.

One JSON parse and one JSON encode (orjson), a dict lookup, the prompt's two messages rendered by
string replacement: no header, version, `_meta` or argument checks, no authentication, no
audit counting, no caching hints. Every reply still passes the shared load generator's checks
(it serves the shared synthetic data, `../shared/bench/synthetic.py`). bench/run.py measures it
beside the trivial app and this registry in the same round: what is left between the floor and
the trivial app is the unavoidable parse-look-up-encode, what is left between this registry and
the floor is what the registry does per request (checks, rollouts, fetch counts, shapes).

uvicorn: MCP_SHARED_BENCH=../shared/bench python -m uvicorn floor_asgi:app --app-dir bench ...
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import orjson

_SHARED = Path(os.environ.get("MCP_SHARED_BENCH", Path(__file__).resolve().parents[2] / "shared" / "bench"))
sys.path.insert(0, str(_SHARED))
import synthetic  # noqa: E402  (the shared bench's data, beside the checkout)

SEED = int(os.environ.get("FLOOR_SEED", "42"))
PROMPTS = {name: (user, assistant) for name, _description, user, assistant
           in synthetic.prompt_templates(SEED, int(os.environ.get("FLOOR_PROMPTS", "1000")))}
RESOURCES = {uri: {"contents": [{"uri": uri, "mimeType": "text/markdown",
                                  "text": synthetic.render_resource(uri, 1, body)}]}
             for uri, body in synthetic.resource_texts(SEED, int(os.environ.get("FLOOR_RESOURCES", "1000")))}
_HEADERS = [(b"content-type", b"application/json")]


def _render(template: str, arguments: dict[str, Any]) -> str:
    return template.replace("{topic}", str(arguments.get("topic", ""))).replace(
        "{audience}", str(arguments.get("audience", "")))


def _result(method: str, params: dict[str, Any]) -> dict[str, Any]:
    if method == "prompts/get":
        user, assistant = PROMPTS[params["name"]]
        arguments = params.get("arguments") or {}
        return {"messages": [{"role": "user", "content": {"type": "text", "text": _render(user, arguments)}},
                             {"role": "assistant", "content": {"type": "text", "text": _render(assistant, arguments)}}]}
    return RESOURCES[params["uri"]]


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    message = await receive()
    request = orjson.loads(message["body"])
    result = _result(request["method"], request["params"])
    body = orjson.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result})
    await send({"type": "http.response.start", "status": 200,
                "headers": [*_HEADERS, (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
