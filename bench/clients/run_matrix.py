#!/usr/bin/env python3
"""The client x generation matrix: real MCP clients, installed from their registries, against the registry.

    .venv/bin/python bench/clients/run_matrix.py [--only SUBSTRING] [--keep]

Installs each client into /tmp/mcp-client-matrix/<name> (npm or a virtualenv; never into the
repository, reused on the next run), serves two throwaway registries holding the conformance
fixtures (tests/fixtures/conformance.yaml, as bin/conformance does): one anonymous, one protected
(MCP_ALLOW_ANONYMOUS=0, OAuth and pre-shared tokens), and runs, for every client and protocol
generation it speaks: initialize/discover, prompts/list, prompts/get with arguments,
resources/list, resources/read (a text resource and a template URI), resources/templates/list,
completion, and resources/subscribe (2025) or subscriptions/listen (2026-07-28) with a publish in
between. Prints one Markdown table; an operation a client cannot do is "n/a" with the reason.

Drivers: ts_driver.mjs (TypeScript SDKs, and mcp-remote through the TS SDK's stdio client),
py_driver.py (Python SDK 1.x/2.x, fastmcp), the Inspector CLI directly (one process per method).
Loopback only; every wait is bounded.
"""

from __future__ import annotations

import argparse
import html
import http.cookiejar
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PY = sys.executable
CACHE = Path(os.environ.get("CLIENT_MATRIX_CACHE", "/tmp/mcp-client-matrix"))
FIXTURE = ROOT / "tests" / "fixtures" / "conformance.yaml"
OPS = [
    "init",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "completion",
    "errors",
    "subscribe/listen",
]
LEGACY, MODERN = "2025-11-25", "2026-07-28"
AUTO = (
    "auto"  # the client's own negotiation (probe server/discover, fall back to initialize): must pick MODERN
)
OAUTH_USER, OAUTH_PASSWORD = "matrix-person", "matrix-password-not-secret"  # staff user who consents


@dataclass
class Client:
    name: str
    version: str  # what the table shows (the installed version is read back after install)
    slug: str
    kind: str  # "npm" | "pip" | "project"
    packages: list[str]
    driver: str  # "ts" | "py" | "inspector" | "mcp-remote"
    generations: list[str]
    flavor: str = ""  # ts: v1/v2; py: mcp1/mcp2/fastmcp
    installed: str = ""
    note: str = ""


CLIENTS = [
    Client(
        "TypeScript SDK",
        "1.32",
        "ts-sdk-1.32",
        "npm",
        ["@modelcontextprotocol/sdk@1.32"],
        "ts",
        [LEGACY],
        "v1",
        note="1.x negotiates handshake revisions only (LATEST_PROTOCOL_VERSION 2025-11-25)",
    ),
    Client(
        "TypeScript SDK",
        "2.4",
        "ts-sdk-2.4",
        "npm",
        ["@modelcontextprotocol/client@2.4"],
        "ts",
        [LEGACY, MODERN, AUTO],
        "v2",
    ),
    Client(
        "fastmcp (PyPI)",
        "4.2",
        "py-fastmcp-4.2",
        "pip",
        ["fastmcp==4.2.*"],
        "py",
        [LEGACY, MODERN, AUTO],
        "fastmcp",
        note="npm `fastmcp` has no 4.2 (4.1.0, 4.3.0); PyPI `fastmcp` 4.2.x is the Python client",
    ),
    Client(
        "Python SDK",
        "1.12",
        "py-mcp-1.12",
        "pip",
        ["mcp==1.12.*", "pydantic<2.12"],
        "py",
        ["2025-06-18"],
        "mcp1",
        note="1.12 speaks up to 2025-06-18; it does not import with pydantic 2.12+ (`eval_type_backport` "
        "is gone), so pydantic is held below 2.12 as in its day",
    ),
    Client("Python SDK", "1.30", "py-mcp-1.30", "pip", ["mcp==1.30.*"], "py", [LEGACY], "mcp1"),
    Client("Python SDK (project pin)", "2.3", "project", "project", [], "py", [LEGACY, MODERN, AUTO], "mcp2"),
    Client(
        "mcp-remote",
        "0.15",
        "mcp-remote-0.15",
        "npm",
        ["mcp-remote@0.15", "@modelcontextprotocol/sdk@1.32"],
        "mcp-remote",
        [LEGACY, MODERN, AUTO],
        note="a stdio proxy: the generation is the stdio host's (TypeScript SDK 1.32 for 2025-11-25, 2.4 for "
        "2026-07-28 and auto); mcp-remote relays the JSON-RPC to /mcp over its own HTTP transport",
    ),
    Client(
        "Inspector CLI",
        "0.21",
        "inspector-0.21",
        "npm",
        ["@modelcontextprotocol/inspector@0.21"],
        "inspector",
        [LEGACY],
    ),
    Client(
        "Inspector CLI",
        "1.0",
        "inspector-1.0",
        "npm",
        ["@modelcontextprotocol/inspector@1.0"],
        "inspector",
        [LEGACY],
    ),
    Client(
        "Inspector CLI",
        "2.11",
        "inspector-2.11",
        "npm",
        ["@modelcontextprotocol/inspector@2.11"],
        "inspector",
        [LEGACY, MODERN, AUTO],
    ),
]


# ----------------------------------------------------------------------------- installing


def install(client: Client) -> None:
    """npm/pip install into CACHE/slug once; a marker file records success."""
    if client.kind == "project":
        client.installed = _pip_version(PY, "mcp")
        return
    folder = CACHE / client.slug
    marker = folder / ".installed"
    if not marker.exists():
        folder.mkdir(parents=True, exist_ok=True)
        if client.kind == "npm":
            (folder / "package.json").write_text(
                '{"name": "matrix-probe", "version": "1.0.0", "type": "module", "private": true}'
            )
            cmd = ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", *client.packages]
        else:
            subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True, capture_output=True)
            cmd = [str(folder / "bin" / "pip"), "install", "-q", *client.packages]
        done = subprocess.run(cmd, check=False, cwd=folder, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise RuntimeError(f"installing {client.packages} failed: {done.stderr[-500:]}")
        marker.write_text(" ".join(client.packages))
    if client.kind == "npm":
        main = client.packages[0].rsplit("@", 1)[0]
        client.installed = json.loads((folder / "node_modules" / main / "package.json").read_text())[
            "version"
        ]
    else:
        client.installed = _pip_version(str(folder / "bin" / "python"), client.packages[0].split("==")[0])


def _pip_version(python: str, package: str) -> str:
    out = subprocess.run(
        [python, "-c", f"import importlib.metadata as m; print(m.version({package!r}))"],
        check=False,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip() or "?"


# ----------------------------------------------------------------------------- servers


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    name: str
    anonymous: bool
    folder: Path
    port: int = 0
    proc: subprocess.Popen | None = None
    env: dict[str, str] = field(default_factory=dict)
    token: str = ""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def database(self) -> Path:
        return self.folder / f"{self.name}.sqlite3"

    def start(self) -> Server:
        self.port = free_port()
        self.env = dict(
            os.environ,
            DATABASE_URL=f"sqlite:///{self.database}",
            MCP_ALLOW_ANONYMOUS="1" if self.anonymous else "0",
            DJANGO_DEBUG="0",
            ALLOWED_HOSTS="127.0.0.1,localhost",
            DJANGO_SETTINGS_MODULE="config.settings",
            DJANGO_SECRET_KEY=f"client-matrix-{time.time_ns()}-not-secret",
            PYTHONUNBUFFERED="1",
        )
        self.env.pop("REDIS_URL", None)
        for args in (
            ["migrate", "--noinput"],
            ["registry_import", str(FIXTURE), "--publish", "--note", "conformance fixtures"],
        ):
            subprocess.run([PY, "manage.py", *args], cwd=ROOT, env=self.env, check=True, capture_output=True)
        if not self.anonymous:
            self.token = subprocess.run(
                [
                    PY,
                    "manage.py",
                    "shell",
                    "-v",
                    "0",
                    "-c",
                    "from registry.serving.clients import create_client; print(create_client(name='matrix')[1])",
                ],
                cwd=ROOT,
                env=self.env,
                check=True,
                capture_output=True,
                text=True,
            ).stdout.split()[-1]
            subprocess.run(
                [
                    PY,
                    "manage.py",
                    "shell",
                    "-v",
                    "0",
                    "-c",
                    (
                        "from django.contrib.auth.models import User; User.objects.create_user("
                        f"{OAUTH_USER!r}, 'm@example.com', {OAUTH_PASSWORD!r}, is_staff=True)"
                    ),
                ],
                cwd=ROOT,
                env=self.env,
                check=True,
                capture_output=True,
            )
        log = open(self.folder / f"{self.name}.log", "wb")  # noqa: SIM115 - lives as long as the server
        self.proc = subprocess.Popen(
            [
                PY,
                "-m",
                "daphne",
                "-v",
                "1",
                "-b",
                "127.0.0.1",
                "-p",
                str(self.port),
                "config.asgi:application",
            ],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return self
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError(f"{self.name} server did not start: {self.log()[-2000:]}") from None
                time.sleep(0.1)

    def log(self) -> str:
        return (self.folder / f"{self.name}.log").read_text(errors="replace")

    def trigger(self) -> str:
        """The shell command that publishes a change of test://watched-resource on this server."""
        env = " ".join(
            f"{k}={self.env[k]}"
            for k in (
                "DATABASE_URL",
                "DJANGO_SETTINGS_MODULE",
                "DJANGO_DEBUG",
                "DJANGO_SECRET_KEY",
                "ALLOWED_HOSTS",
            )
        )
        return f"cd {ROOT} && env {env} {PY} {HERE / 'touch_watched.py'}"

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


# ----------------------------------------------------------------------------- running drivers

Row = dict[str, tuple[str, str]]  # op -> (status "pass"|"FAIL"|"n/a", detail)


def parse_lines(text: str) -> Row:
    row: Row = {}
    for line in text.splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if isinstance(item, dict) and "op" in item:
            op = "subscribe/listen" if item["op"] in ("subscribe", "listen") else item["op"]
            if op == "crash":  # the driver died: on the first operation it did not report
                op = next((o for o in OPS if o not in row), "init")
            row[op] = ("pass" if item["ok"] else "FAIL", item.get("detail", ""))
    return row


def run(cmd: list[str], *, cwd: Path, env: dict[str, str], timeout: float = 120) -> tuple[int, str, str]:
    try:
        done = subprocess.run(
            cmd, check=False, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired as exc:
        return (
            -1,
            (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else (exc.stdout or ""),
            f"timed out after {timeout} s",
        )
    return done.returncode, done.stdout, done.stderr


def run_ts(client: Client, generation: str, server: Server, stdio: list[str] | None = None) -> Row:
    folder = CACHE / client.slug
    shutil.copy(HERE / "ts_driver.mjs", folder / "ts_driver.mjs")
    cmd = ["node", "ts_driver.mjs", "--sdk", client.flavor or "v1", "--generation", generation]
    cmd += ["--stdio", json.dumps(stdio)] if stdio else ["--url", server.url]
    env = dict(os.environ, TRIGGER=server.trigger(), MCP_REMOTE_CONFIG_DIR=str(folder / "auth-state"))
    code, out, err = run(cmd, cwd=folder, env=env)
    row = parse_lines(out)
    if not row:
        row["init"] = ("FAIL", f"driver exit {code}: {err.strip()[-250:]}")
    return row


def run_py(client: Client, generation: str, server: Server) -> Row:
    python = PY if client.kind == "project" else str(CACHE / client.slug / "bin" / "python")
    cmd = [
        python,
        str(HERE / "py_driver.py"),
        "--flavor",
        client.flavor,
        "--url",
        server.url,
        "--generation",
        generation,
    ]
    code, out, err = run(cmd, cwd=Path(tempfile.gettempdir()), env=dict(os.environ, TRIGGER=server.trigger()))
    row = parse_lines(out)
    if not row:
        row["init"] = ("FAIL", f"driver exit {code}: {err.strip()[-250:]}")
    return row


def inspector_command(client: Client) -> list[str]:
    bin_dir = CACHE / client.slug / "node_modules" / ".bin"
    return [str(bin_dir / "mcp-inspector"), "--cli"]


def run_inspector(client: Client, generation: str, server: Server, env: dict[str, str] | None = None) -> Row:
    """One Inspector CLI process per method; the output is the result as JSON."""
    base = inspector_command(client) + [server.url, "--transport", "http"]
    modern = client.version.startswith("2.")
    if modern:
        base += ["--protocol-era", {MODERN: "modern", AUTO: "auto"}.get(generation, "legacy")]
    cwd = CACHE / client.slug
    if env is None:
        env = dict(os.environ, HOME=str(cwd / "home"))
        (cwd / "home").mkdir(exist_ok=True)
    row: Row = {}

    def call(op: str, extra: list[str], check: str) -> None:
        code, out, err = run(base + extra, cwd=cwd, env=env, timeout=60)
        if code == 0 and check in out:
            row[op] = ("pass", "")
        else:
            row[op] = ("FAIL", f"exit {code}: {(err.strip() or out.strip())[-250:]}")

    if modern:
        code, out, err = run(base + ["--method", "initialize"], cwd=cwd, env=env, timeout=60)
        version = re.search(r'"protocolVersion":\s*"([^"]+)"', out)
        got = version.group(1) if version else None
        row["init"] = (
            "pass" if got == (MODERN if generation == AUTO else generation) else "FAIL",
            f"-> {got}" if got else f"exit {code}: {(err.strip() or out.strip())[-250:]}",
        )
    call("prompts/list", ["--method", "prompts/list"], "test_prompt_with_arguments")
    call(
        "prompts/get",
        [
            "--method",
            "prompts/get",
            "--prompt-name",
            "test_prompt_with_arguments",
            "--prompt-args",
            "arg1=a1",
            "arg2=b2",
        ],
        "arg1='a1'",
    )
    call("resources/list", ["--method", "resources/list"], "test://static-text")
    call(
        "resources/read",
        ["--method", "resources/read", "--uri", "test://template/123/data"],
        "Data for ID: 123",
    )
    call("resources/templates/list", ["--method", "resources/templates/list"], "test://template/{id}/data")
    code, out, err = run(
        base + ["--method", "resources/read", "--uri", "test://nonexistent"], cwd=cwd, env=env, timeout=60
    )
    # -32002 until 2025-11-25, -32602 at 2026-07-28; 2.11 prints the message without the code
    expected = "-32602" if modern and generation != LEGACY else "-32002"
    said = out + err
    row["errors"] = (
        ("pass", "")
        if code != 0 and (expected in said or "Resource not found: test://nonexistent" in said)
        else ("FAIL", f"unknown URI: exit {code}: {(err.strip() or out.strip())[-200:]}")
    )
    if not modern:
        row["init"] = (
            "pass" if row["prompts/list"][0] == "pass" else "FAIL",
            "initialize (implicit, each method)",
        )
    # The --cli lists its methods; neither completion nor subscribe is one of them (2.11 builds them
    # for its TUI/daemon only: "Unsupported method ... Supported --cli methods: initialize, tools/list, ...").
    row["completion"] = ("n/a", "--cli has no completion method")
    row["subscribe/listen"] = ("n/a", "--cli has no subscribe/listen method")
    return row


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


def mcp_remote_proxy(client: Client, server: Server, header: bool) -> list[str]:
    proxy = CACHE / client.slug / "node_modules" / "mcp-remote" / "dist" / "proxy.js"
    cmd = ["node", str(proxy), server.url]  # its defaults, as the README's host config has them (http-first)
    if header:
        cmd += ["--header", f"Authorization: Bearer {server.token}"]
    return cmd


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
    cmd = inspector_command(client) + [
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
            except Exception as exc:  # noqa: BLE001
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
            except Exception as exc:  # noqa: BLE001
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


# ----------------------------------------------------------------------------- table


def cell(op: str, status: str, detail: str) -> str:
    if status == "pass" and op != "init":
        return "pass"
    text = " ".join(detail.split()).replace("|", "\\|")[:160]
    return f"{status} ({text})" if status == "pass" else f"{status}: {text}" if text else status


def table(rows: list[tuple[str, str, str, Row]]) -> str:
    heads = ["client", "version", "generation", *OPS]
    lines = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    for name, version, generation, row in rows:
        cells = [cell(op, *row[op]) if op in row else "—" for op in OPS]
        lines.append("| " + " | ".join([name, version, generation, *cells]) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="", help="run the clients whose name or slug contains this")
    parser.add_argument("--keep", action="store_true", help="keep the servers' folder (logs, databases)")
    args = parser.parse_args()
    if not shutil.which("node") or not shutil.which("npm"):
        print("Node.js and npm are needed for the TypeScript clients", file=sys.stderr)
    folder = Path(tempfile.mkdtemp(prefix="client-matrix-"))
    servers = [Server("open", True, folder), Server("protected", False, folder)]
    rows: list[tuple[str, str, str, Row]] = []
    oauth_detail = ""
    try:
        for server in servers:
            server.start()
        open_server, protected = servers
        for client in CLIENTS:
            if args.only and args.only not in f"{client.name} {client.slug}":
                continue
            print(f"== {client.name} {client.version}", file=sys.stderr, flush=True)
            try:
                install(client)
            except Exception as exc:  # noqa: BLE001
                rows.append((client.name, client.version, "-", {"init": ("FAIL", f"install: {exc}")}))
                continue
            shown = f"{client.version} ({client.installed})"
            for generation in client.generations:
                extra: list[tuple[str, str, str, Row]] = []
                if client.driver == "ts":
                    row = run_ts(client, generation, open_server)
                elif client.driver == "py":
                    row = run_py(client, generation, open_server)
                elif client.driver == "inspector":
                    row = run_inspector(client, generation, open_server)
                    if client.version.startswith("2.") and generation != AUTO:
                        extra.append(
                            (
                                f"{client.name} no header (protected: OAuth)",
                                shown,
                                generation,
                                run_inspector_oauth(client, generation, protected),
                            )
                        )
                elif generation == LEGACY:  # stdio client: the TypeScript SDK 1.32 installed beside it
                    rows.append(
                        (
                            f"{client.name} --header (protected)",
                            shown,
                            generation,
                            run_ts(client, generation, protected, mcp_remote_proxy(client, protected, True)),
                        )
                    )
                    oauth, oauth_detail = run_mcp_remote_oauth(client, protected)
                    rows.append((f"{client.name} no header (protected: OAuth)", shown, generation, oauth))
                    row = run_ts(
                        client, generation, open_server, mcp_remote_proxy(client, open_server, False)
                    )
                    rows.append((f"{client.name} (anonymous server)", shown, generation, row))
                    continue
                else:  # a 2026-capable host (TypeScript SDK 2.4 over stdio) launching mcp-remote --header
                    host = next(c for c in CLIENTS if c.slug == "ts-sdk-2.4")
                    install(host)
                    row = run_ts(host, generation, protected, mcp_remote_proxy(client, protected, True))
                    rows.append(
                        (f"{client.name} --header (protected), host TS SDK 2.4", shown, generation, row)
                    )
                    continue
                rows.append((client.name, shown, generation, row))
                rows.extend(extra)
                print(json.dumps({k: v[0] for k, v in row.items()}), file=sys.stderr, flush=True)
    finally:
        for server in servers:
            server.stop()
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
        else:
            print(f"servers' logs and databases: {folder}", file=sys.stderr)
    print(table(rows))
    if oauth_detail:
        print(f"\nmcp-remote without --header, requests seen by the server: {oauth_detail}")
    notes = [
        f"- {c.name} {c.version}: {c.note}"
        for c in CLIENTS
        if c.note and (not args.only or args.only in f"{c.name} {c.slug}")
    ]
    if notes:
        print("\n" + "\n".join(notes))
    failed = sum(1 for *_, row in rows for status, _ in row.values() if status == "FAIL")
    print(f"\n{failed} failed operation(s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
