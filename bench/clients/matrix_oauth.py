"""The protected server without a pre-shared token: the client must go through OAuth itself.

The runner plays the person at the browser (log in to the admin, press Allow on the consent
page, follow the redirect to the client's callback) while the client waits, and checks which
OAuth requests the server saw (401, metadata, registration, authorization with PKCE S256).
"""

from __future__ import annotations

import html
import http.cookiejar
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from matrix_clients import AUTO, LEGACY, MODERN, Client
from matrix_drivers import Row, inspector_command, mcp_remote_proxy, parse_lines, run_inspector
from matrix_paths import CACHE, HERE
from matrix_servers import OAUTH_PASSWORD, OAUTH_USER, Server, free_port


class Collect:
    """Lines of a child's pipe, read by a thread (no blocking reads in the runner)."""

    def __init__(self, pipe: Any) -> None:
        self.lines: list[str] = []
        self.thread = threading.Thread(target=self._read, args=(pipe,), daemon=True)
        self.thread.start()

    def _read(self, pipe: Any) -> None:
        for line in pipe:
            self.lines.append(line)

    @property
    def text(self) -> str:
        return "".join(self.lines)


def consent(server: Server, authorize_url: str) -> str:
    """What the person does in the browser: log in to the admin, press Allow on the consent page;
    returns the redirect (the client's callback URL with the code)."""

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any) -> None:
            return None

    jar = http.cookiejar.CookieJar()
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), NoRedirect)
    base = f"http://127.0.0.1:{server.port}"

    def post(url: str, fields: dict[str, str]) -> Any:
        request = urllib.request.Request(
            url, data=urllib.parse.urlencode(fields).encode(), headers={"Referer": url}
        )
        try:
            return browser.open(request, timeout=20)
        except urllib.error.HTTPError as exc:  # the 302s (redirects are not followed)
            return exc

    page = browser.open(f"{base}/admin/login/", timeout=20).read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    post(
        f"{base}/admin/login/",
        {"csrfmiddlewaretoken": token, "username": OAUTH_USER, "password": OAUTH_PASSWORD, "next": "/admin/"},
    )
    page = browser.open(authorize_url, timeout=20).read().decode()
    fields = {
        name: html.unescape(value)
        for name, value in re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', page)
    }
    answer = post(authorize_url, {**fields, "allow": "Allow"})
    location = answer.headers.get("Location", "")
    if answer.status != 302 or "code=" not in location:
        raise RuntimeError(f"consent answered {answer.status} {location!r}")
    return location


def run_inspector_oauth(client: Client, generation: str, server: Server) -> Row:
    """Inspector CLI 2.x WITHOUT --header against the protected server: the first method runs the
    OAuth flow (401, metadata, registration, consent scripted as for mcp-remote, callback); its
    file secret store keeps the token, so the other methods reuse it."""
    cwd = CACHE / client.slug
    home = Path(tempfile.mkdtemp(prefix="inspector-home-"))
    env = dict(
        os.environ,
        HOME=str(home),
        BROWSER="true",
        MCP_AUTO_OPEN_ENABLED="true",
        MCP_INSPECTOR_SECRET_STORE="file",
    )
    era = {MODERN: "modern", AUTO: "auto"}.get(generation, "legacy")
    callback = f"http://127.0.0.1:{free_port()}/oauth/callback"
    cmd = [
        *inspector_command(client),
        server.url,
        "--transport",
        "http",
        "--protocol-era",
        era,
        "--callback-url",
        callback,
        "--method",
        "prompts/list",
    ]
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    out = Collect(proc.stdout)
    problems: list[str] = []
    try:
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline and proc.poll() is None and "/oauth/authorize/" not in out.text:
            time.sleep(0.2)
        url = re.search(r"https?://\S+/oauth/authorize/\S+", out.text)
        if url is None:
            problems.append(f"no authorization URL: {out.text.strip()[-200:]}")
        else:
            try:
                urllib.request.urlopen(consent(server, url.group(0)), timeout=20).read()
            except Exception as exc:
                problems.append(f"consent/callback: {exc}")
        proc.wait(60)
    except subprocess.TimeoutExpired:
        problems.append("prompts/list did not finish in 60 s after the callback")
    finally:
        if proc.poll() is None:
            proc.kill()
    if "test_prompt_with_arguments" not in out.text:
        problems.append(f"prompts/list after OAuth: {out.text.strip()[-200:]}")
    row = run_inspector(client, generation, server, env)
    row["init"] = (
        ("FAIL", "; ".join(problems))
        if problems
        else ("pass", "OAuth (401, metadata, registration, consent, PKCE S256), token reused by each method")
    )
    shutil.rmtree(home, ignore_errors=True)
    return row


def run_mcp_remote_oauth(client: Client, server: Server) -> tuple[Row, str]:
    """mcp-remote WITHOUT --header against the protected server: it must get the 401 with metadata,
    discover the authorization server, register itself and open the authorization URL; the runner
    then consents as a person would and calls the callback, after which every operation runs
    through mcp-remote with the token it obtained. Returns the row and the OAuth requests seen."""
    folder = CACHE / client.slug
    shutil.copy(HERE / "ts_driver.mjs", folder / "ts_driver.mjs")
    state = folder / "auth-state-oauth"
    shutil.rmtree(state, ignore_errors=True)
    proxy = mcp_remote_proxy(client, server, header=False)
    proxy.insert(3, str(free_port()))  # mcp-remote <url> [callback-port] ...
    cmd = ["node", "ts_driver.mjs", "--sdk", "v1", "--generation", LEGACY, "--stdio", json.dumps(proxy)]
    env = dict(os.environ, TRIGGER=server.trigger(), MCP_REMOTE_CONFIG_DIR=str(state), BROWSER="true")
    before = server.log().count("\n")
    proc = subprocess.Popen(
        cmd,
        cwd=folder,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, err = Collect(proc.stdout), Collect(proc.stderr)
    problems: list[str] = []
    try:
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline and proc.poll() is None and "/oauth/authorize/" not in err.text:
            time.sleep(0.2)
        url = re.search(r"https?://\S+/oauth/authorize/\S+", err.text)
        if url is None:
            problems.append(f"no authorization URL printed: {err.text.strip()[-200:]}")
        else:
            problems += [
                f"authorize URL lacks {k}"
                for k in ("code_challenge_method=S256", "resource=")
                if k not in url.group(0)
            ]
            try:
                urllib.request.urlopen(consent(server, url.group(0)), timeout=20).read()
            except Exception as exc:
                problems.append(f"consent/callback: {exc}")
        proc.wait(120)
    except subprocess.TimeoutExpired:
        problems.append("the driver did not finish in 120 s")
    finally:
        if proc.poll() is None:
            proc.kill()
    hits = [
        line
        for line in server.log().splitlines()[before:]
        if re.search(r'"(GET|POST) /(\.well-known|register|oauth)', line)
        or ('"GET /mcp' in line and " 401 " in line)
    ]
    if not any(" 401 " in line for line in hits):
        problems.append("no 401 from /mcp")
    if not any("/register/" in line and " 201 " in line for line in hits):
        problems.append("no registration")
    problems += [f"404: {line.strip()[-80:]}" for line in hits if '" 404 ' in line]
    steps = " → ".join(re.sub(r'^.*"((GET|POST) [^?" ]+)[^"]*" (\d+).*$', r"\1 \3", line) for line in hits)
    row = parse_lines(out.text)
    init = row.get("init", ("FAIL", "no result"))
    if problems:
        row["init"] = ("FAIL", "; ".join(problems) + f" | {init[1]}")
    else:
        row["init"] = (init[0], f"OAuth (401, metadata, registration, consent, PKCE S256) then {init[1]}")
    return row, steps
