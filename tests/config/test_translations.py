"""The German and Chinese catalogs are complete, keep every placeholder, and the committed .mo
files are exactly the .po files compiled (CI has no gettext tools, so it uses the .mo as committed).

After changing strings: `manage.py makemessages -l de -l zh_Hans --ignore=.venv --ignore=tests`,
translate the new entries, then `manage.py compilemessages --ignore=.venv` (needs GNU gettext).
"""

from __future__ import annotations

import gettext
import re
from collections import Counter
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import translation

LOCALE = Path(settings.BASE_DIR) / "locale"
CATALOGS = {"de": "de", "zh_Hans": "zh-hans"}  # folder -> language code the admin activates
PLURALS = {"de": 2, "zh_Hans": 1}
# %(name)s, %s, %%, {} / {status} (format_html and the page script), {{ argument }} (the registry's own syntax),
# and the HTML tags of the sentence: all must survive translation.
PLACEHOLDER = re.compile(r"%\([a-z_]+\)[sdr]|%[sdr%]|\{[a-z_]*\}|\{\{ ?[a-z_%()]+ ?\}\}|</?[a-z]+")


def _unquote(text: str) -> str:
    text = text.strip()
    assert text.startswith('"') and text.endswith('"'), text
    return re.sub(r'\\(.)', lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), text[1:-1])


def parse_po(path: Path) -> list[dict]:
    """The entries of a .po file: {"ctx", "id", "plural", "strs": {n: text}, "flags"} (a tiny reader, no polib)."""
    entries = []
    for block in path.read_text(encoding="utf-8").split("\n\n"):
        entry: dict = {"ctx": None, "id": None, "plural": None, "strs": {}, "flags": ""}
        field: tuple | None = None
        for line in block.splitlines():
            if line.startswith("#,"):
                entry["flags"] = line
            if not line or line.startswith("#"):
                continue
            match = re.match(r'^(msgctxt|msgid_plural|msgid|msgstr(?:\[(\d+)\])?)\s+(".*")$', line)
            if match:
                keyword, value = match.group(1), _unquote(match.group(3))
                if keyword.startswith("msgstr"):
                    field = ("strs", int(match.group(2) or 0))
                    entry["strs"][field[1]] = value
                else:
                    field = ({"msgctxt": "ctx", "msgid": "id", "msgid_plural": "plural"}[keyword],)
                    entry[field[0]] = value
            elif field and field[0] == "strs":
                entry["strs"][field[1]] += _unquote(line)
            elif field:
                entry[field[0]] += _unquote(line)
        if entry["id"] is not None:
            entries.append(entry)
    return entries


def _entries(folder: str) -> list[dict]:
    return [e for e in parse_po(LOCALE / folder / "LC_MESSAGES" / "django.po") if e["id"]]


def test_every_shipped_language_has_a_catalog():
    offered = {code for code, _name in settings.LANGUAGES} - {"en"}
    assert offered == set(CATALOGS.values())
    assert str(LOCALE) in [str(p) for p in settings.LOCALE_PATHS]


@pytest.mark.parametrize("folder", CATALOGS)
def test_catalog_is_complete_and_nothing_is_fuzzy(folder):
    entries = _entries(folder)
    assert len(entries) > 500  # every project string of the admin, not a sample
    untranslated = [e["id"] for e in entries if not all(e["strs"].get(n) for n in
                                                       range(PLURALS[folder] if e["plural"] else 1))]
    assert untranslated == []
    assert [e["id"] for e in entries if "fuzzy" in e["flags"]] == []


@pytest.mark.parametrize("folder", CATALOGS)
def test_translations_keep_every_placeholder(folder):
    wrong = []
    for e in _entries(folder):
        # Plural forms are checked against the plural msgid (the singular may leave the number out).
        expected = Counter(PLACEHOLDER.findall(e["plural"] or e["id"]))
        wrong += [(e["id"], text) for text in e["strs"].values() if Counter(PLACEHOLDER.findall(text)) != expected]
    assert wrong == []


@pytest.mark.parametrize("folder", CATALOGS)
def test_compiled_catalog_matches_the_po_file(folder):
    """Every entry of the .po is in the committed .mo with the same text, and nothing else is."""
    mo = LOCALE / folder / "LC_MESSAGES" / "django.mo"
    with mo.open("rb") as handle:
        compiled = gettext.GNUTranslations(handle)
    catalog = dict(compiled._catalog)  # type: ignore[attr-defined]
    expected: dict = {}
    for e in _entries(folder):
        key = f"{e['ctx']}\x04{e['id']}" if e["ctx"] else e["id"]
        if e["plural"]:
            for n, text in e["strs"].items():
                expected[(key, n)] = text
        else:
            expected[key] = e["strs"][0]
    catalog.pop("", None)  # the header
    assert catalog == expected, "run `manage.py compilemessages --ignore=.venv` and commit the .mo files"


@pytest.mark.parametrize("folder, code, english, translated", [
    ("de", "de", "Your preferences", "Ihre Einstellungen"),
    ("de", "de", "Incident rollbacks by one publisher", "Incident-Rollbacks durch einen einzelnen Publisher"),
    ("zh_Hans", "zh-hans", "Your preferences", "您的偏好设置"),
    ("zh_Hans", "zh-hans", "Incident rollbacks by one publisher", "由单个发布者执行的事故回滚"),
])
def test_django_serves_the_catalog_for_the_language(folder, code, english, translated):
    with translation.override(code):
        assert translation.gettext(english) == translated
        assert translation.ngettext("%(count)s message", "%(count)s messages", 2) % {"count": 2} in (
            "2 Nachrichten", "2 条消息")


def test_a_sample_of_the_catalog_round_trips_through_django():
    """Beyond the samples above: each entry of each catalog, as Django's translation machinery returns it."""
    for folder, code in CATALOGS.items():
        with translation.override(code):
            for e in _entries(folder):
                if e["plural"] or e["ctx"]:
                    continue
                assert translation.gettext(e["id"]) == e["strs"][0], (folder, e["id"])
