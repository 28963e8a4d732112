"""Every file path the documentation and the code's docstrings and comments name exists.

Modules moved in the regrouping (issue 20: registry/catalog.py, mcp_endpoint/hub.py, ...) left
their old paths behind in README.md, docs/ and docstrings; a path that names nothing sends the
next reader looking. Read from the text, so a move that forgets one fails here."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOP = ("registry", "mcp_endpoint", "config", "api", "oauth", "webhooks", "bench", "tests", "docs", "templates",
       "demo", "bin", "locale")
# A path from the top of the checkout: registry/serving/catalog.py, mcp_endpoint/notify/, docs/api.md.
FULL_PATH = re.compile(r"(?<![\w./-])((?:" + "|".join(TOP) + r")/[\w./-]*\w(?:\.\w+|/))")
# In backticks, also relative to an app (`serving/pages.py`, `notify/diff.py`) or a bare module name.
TICKED = re.compile(r"`([\w./-]+\.py)\b")
# Named but not kept in the checkout: the benches' output folder (git-ignored), a placeholder.
NOT_FILES = {"bench/results/", "bench/clients/NAME.py"}
SOURCE_FOLDERS = ("registry", "mcp_endpoint", "config", "api", "oauth", "webhooks", "bench", "tests")


def _documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "Makefile", ROOT / "pyproject.toml"]


def _sources() -> list[Path]:
    found = [path for folder in SOURCE_FOLDERS for path in sorted((ROOT / folder).rglob("*.py"))
             if "migrations" not in path.parts and path != Path(__file__).resolve()]
    return [*sorted(ROOT.glob("*.py")), *found]


def _prose(path: Path) -> list[tuple[int, str]]:
    """(line number, text) of what a reader reads as prose: a document's lines; a module's
    docstrings and comments (string literals in code name templates and static files instead)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".py":
        return list(enumerate(text.splitlines(), 1))
    lines: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                lines += [(first.lineno + offset, line) for offset, line in enumerate(first.value.value.splitlines())]
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT:
            lines.append((token.start[0], token.string))
    return lines


def _missing_full_paths(path: Path) -> list[str]:
    found = []
    for number, line in _prose(path):
        for match in FULL_PATH.finditer(line):
            named = match.group(1).rstrip(".")
            if named not in NOT_FILES and not (ROOT / named).exists():
                found.append(f"{path.relative_to(ROOT)}:{number}: {named}")
    return found


@pytest.mark.parametrize("document", _documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_path_a_document_names_exists(document):
    assert _missing_full_paths(document) == []


@pytest.mark.parametrize("document", _documents()[:-2], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_module_a_document_names_in_backticks_exists(document):
    modules = {path.name for path in _sources()}
    missing = []
    for number, line in enumerate(document.read_text(encoding="utf-8").splitlines(), 1):
        for match in TICKED.finditer(line):
            named = match.group(1)
            if "/" in named:
                exists = any((ROOT / base / named).exists() for base in ("", "registry", "mcp_endpoint"))
            else:
                exists = named in modules
            if not exists:
                missing.append(f"{document.relative_to(ROOT)}:{number}: {named}")
    assert missing == []


def test_every_path_a_docstring_or_comment_names_exists():
    assert [missing for path in _sources() for missing in _missing_full_paths(path)] == []


# Any module name in prose: relative (`serving/pages.py`, `notify/diff.py`) or bare (`hub.py`).
MODULE = re.compile(r"(?<![\w./-])([\w./-]*\w\.py)\b")
OUTSIDE = ("../shared/", "shared/bench/")  # the benchmark peer's checkout beside this one


def test_every_module_a_docstring_or_comment_names_exists_somewhere():
    sources = _sources()
    names = {path.name for path in sources}
    paths = {path.relative_to(ROOT).as_posix() for path in sources}
    missing = []
    for path in sources:
        for number, line in _prose(path):
            for match in MODULE.finditer(line):
                named = match.group(1)
                if named.startswith(OUTSIDE) or named in NOT_FILES:
                    continue
                exists = (any(p == named or p.endswith("/" + named) for p in paths) if "/" in named
                          else named in names)
                if not exists:
                    missing.append(f"{path.relative_to(ROOT)}:{number}: {named}")
    assert missing == []


def test_the_paths_of_modules_that_moved_are_found_when_named():
    """Guard for the tests above: they do see a stale path."""
    stale = ROOT / "tests" / "stale_path_probe.py"
    stale.write_text('"""Built in registry/catalog.py."""\n\nTEMPLATE = "registry/not-a-path.html"  '
                     '# see mcp_endpoint/hub.py\n', encoding="utf-8")
    try:
        assert _missing_full_paths(stale) == ["tests/stale_path_probe.py:1: registry/catalog.py",
                                              "tests/stale_path_probe.py:3: mcp_endpoint/hub.py"]
    finally:
        stale.unlink()
