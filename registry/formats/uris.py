"""URI and RFC 6570 URI-template checks, expansion and matching (no Django).

`uritemplate` parses and expands templates; matching a concrete URI back to a template is
not something it offers, so `UriTemplateMatcher` builds a regular expression from the parsed
expressions. Every value taken out of a URI is decoded and checked: no path traversal, no
control characters, no separators a simple expression could not have produced.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import cast
from urllib.parse import quote, unquote

from uritemplate import URITemplate
from uritemplate.variable import URIVariable

from registry.errors import InvalidUri

MAX_URI_LENGTH = 2048
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")
_FORBIDDEN = re.compile(r"[\x00-\x20\x7f<>\"\\^`|]")
_TRAVERSAL = re.compile(r"(^|/)\.\.?(/|$)")


# RFC 3986 §2: unreserved and reserved characters; anything else appears only percent-encoded.
_UNRESERVED = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
_RESERVED = ":/?#[]@!$&'()*+,;="
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")


def encode_uri(text: str) -> str:
    """Percent-encode (UTF-8) every character RFC 3986 does not allow as is, e.g. an IRI's 'é'.

    Valid escapes are kept; a stray '%' becomes '%25'. This is the form suggested to editors and
    the form clients such as pydantic's AnyUrl send for such URIs.
    """
    text = _BAD_ESCAPE.sub("%25", text)
    return quote(text, safe=_UNRESERVED + _RESERVED + "%")


def _normal_escape(match: re.Match[str]) -> str:
    char = chr(int(match.group(1), 16))
    return char if char in _UNRESERVED else "%" + match.group(1).upper()


def normalize_uri(uri: str) -> str:
    """RFC 3986 §6.2.2 syntax-based normalisation (and §6.2.3 for http/https).

    Scheme and host lower-cased, percent-escapes upper-cased and unreserved ones decoded, the
    empty path of `https://host` written `/`, default ports dropped. Two spellings of one
    resource then compare equal, on save and on lookup alike.
    """
    scheme, sep, rest = uri.partition(":")
    if not sep:
        return uri
    scheme = scheme.lower()
    rest = _ESCAPE.sub(_normal_escape, rest)
    if rest.startswith("//"):
        authority, tail = rest[2:], ""
        for i, char in enumerate(authority):
            if char in "/?#":
                authority, tail = authority[:i], authority[i:]
                break
        userinfo, at, hostport = authority.rpartition("@")
        host, colon, port = hostport.rpartition(":") if not hostport.endswith("]") else (hostport, "", "")
        if not colon or not port.isdigit():
            host, colon, port = hostport, "", ""
        if (scheme, port) in (("http", "80"), ("https", "443")):
            colon, port = "", ""
        authority = f"{userinfo}{at}{_lower_host(host)}{colon}{port}"
        if scheme in ("http", "https") and not tail.startswith("/"):
            tail = "/" + tail
        rest = "//" + authority + tail
    return f"{scheme}:{rest}"


# A URI both steps leave as it is: a lower-case scheme other than http(s) (whose ports and empty
# paths are rewritten), a lower-case authority without userinfo, port or IP literal, and only
# characters RFC 3986 allows as they are, no '%' among them. Stored URIs are normalised on save,
# so nearly every URI a catalog reads is one: checking costs a regex, not the two passes.
_AS_STORED = re.compile(r"(?!https?:)[a-z][a-z0-9+.\-]*:(?://[a-z0-9\-._~!$&'()*+,;=]*(?=[/?#]|\Z)|(?!//))"
                        r"[A-Za-z0-9\-._~!$&'()*+,;=:@/?#\[\]]*")


def lookup_uri(uri: str) -> str:
    """The stored form of a URI a client sent: encoded if it was an IRI, then normalised."""
    if _AS_STORED.fullmatch(uri):
        return uri
    return normalize_uri(encode_uri(uri))


def validate_uri(uri: str) -> str:
    """Return `uri` if it is an absolute RFC 3986 URI without traversal; raise InvalidUri."""
    if not isinstance(uri, str) or not uri:
        raise InvalidUri(str(uri), "a URI is required")
    if len(uri) > MAX_URI_LENGTH:
        raise InvalidUri(uri[:80] + "...", f"longer than {MAX_URI_LENGTH} characters")
    if not _SCHEME.match(uri):
        raise InvalidUri(uri, "it must start with a scheme such as 'docs://' or 'https://'")
    if _FORBIDDEN.search(uri):
        raise InvalidUri(uri, "spaces, quotes, backslashes and control characters are not allowed")
    if encode_uri(uri) != uri:
        raise InvalidUri(uri, "it is not an RFC 3986 URI: characters outside ASCII (and a '%' not followed by "
                              f"two hex digits) must be percent-encoded; use {encode_uri(uri)}")
    path = uri.split("?", 1)[0].split("#", 1)[0]
    rest = path.split(":", 1)[1]
    if _TRAVERSAL.search(unquote(rest)):
        raise InvalidUri(uri, "'.' and '..' path segments are not allowed")
    return uri


_OPERATOR_VALUE = {
    "": r"[^/?#&,]*",
    "+": r"[^?#]*",
    "#": r".*",
    ".": r"[^/?#.&]*",
    "/": r"[^/?#]*",
    ";": r"[^/?#;&]*",
    "?": r"[^&#]*",
    "&": r"[^&#]*",
}
_PREFIX = {"": "", "+": "", "#": "#", ".": r"\.", "/": "/", ";": ";", "?": r"\?", "&": "&"}


def parse_uri_template(text: str) -> URITemplate:
    """Parse and check an RFC 6570 template; raise InvalidUri naming the problem."""
    if not text or not isinstance(text, str):
        raise InvalidUri(str(text), "a URI template is required")
    if text.count("{") != text.count("}") or re.search(r"\{[^}]*\{|\}[^{]*\}", text):
        raise InvalidUri(text, "braces '{' and '}' must come in pairs, one expression each")
    for expression in re.findall(r"\{([^}]*)\}", text):
        body = expression.lstrip("+#./;?&")
        names = [part.rstrip("*").split(":", 1)[0] for part in body.split(",")]
        if not body or any(not re.fullmatch(r"[A-Za-z0-9_](?:[A-Za-z0-9_.]|%[0-9A-Fa-f]{2})*", n) for n in names):
            raise InvalidUri(text, f"'{{{expression}}}' is not a valid expression: use names like {{id}}")
    if not _SCHEME.match(text):
        raise InvalidUri(text, "it must start with a scheme such as 'docs://'")
    template = URITemplate(text)
    if not template.variable_names:
        raise InvalidUri(text, "a template needs at least one {variable}; use a direct resource otherwise")
    literal = re.sub(r"\{[^}]*\}", "x", text)
    validate_uri(literal)
    return template


_TEMPLATE_HEAD = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):(//([^/?#{]*))?")


def _lower_host(host: str) -> str:
    return _ESCAPE.sub(lambda m: "%" + m.group(1).upper(), host.lower())


def normalize_uri_template(text: str) -> str:
    """A template's literal scheme and authority normalised like a URI's (`DOCS://Host/{id}` -> `docs://host/{id}`).

    Matching normalises the concrete URI first (`lookup_uri`), so both sides meet in one form.
    """
    head = _TEMPLATE_HEAD.match(text)
    if head is None:
        return text
    scheme, authority = head.group(1).lower(), head.group(3)
    prefix = f"{scheme}:" + (f"//{_lower_host(authority)}" if authority is not None else "")
    return prefix + text[head.end():]


def template_variable_names(text: str) -> list[str]:
    seen: dict[str, None] = {}
    for variable in parse_uri_template(text).variables:
        for name in variable.variable_names:
            seen.setdefault(name, None)
    return list(seen)


@dataclass(frozen=True)
class UriTemplateMatcher:
    """Matches concrete URIs against one template and extracts decoded variable values."""

    template: str
    pattern: re.Pattern[str]
    groups: tuple[tuple[str, str], ...]  # (regex group, variable name)

    @classmethod
    def build(cls, template_text: str) -> UriTemplateMatcher:
        template = parse_uri_template(template_text)
        regex: list[str] = []
        groups: list[tuple[str, str]] = []
        pos = 0
        expressions = list(re.finditer(r"\{[^}]*\}", template_text))
        variables: list[URIVariable] = list(template.variables)
        for expression, variable in zip(expressions, variables, strict=True):
            regex.append(re.escape(template_text[pos : expression.start()]))
            pos = expression.end()
            operator = cast(str, getattr(variable.operator, "value", variable.operator))  # enum or (older) str
            value = _OPERATOR_VALUE.get(operator, _OPERATOR_VALUE[""])
            names = variable.variable_names
            if operator in ("?", "&"):
                pairs = []
                for i, name in enumerate(names):
                    group = f"g{len(groups)}"
                    groups.append((group, name))
                    sep = _PREFIX[operator] if i == 0 else "&"
                    pairs.append(f"(?:{sep}{re.escape(name)}=(?P<{group}>{value}))?")
                regex.append("".join(pairs))
                continue
            parts = []
            for i, name in enumerate(names):
                group = f"g{len(groups)}"
                groups.append((group, name))
                sep = _PREFIX[operator] if i == 0 else (_PREFIX[operator] or ",")
                if operator == ";":
                    parts.append(f"{sep}{re.escape(name)}=?(?P<{group}>{value})")
                else:
                    parts.append(f"{sep}(?P<{group}>{value})")
            regex.append("".join(parts))
        regex.append(re.escape(template_text[pos:]))
        return cls(template_text, re.compile("^" + "".join(regex) + "$"), tuple(groups))

    def match(self, uri: str) -> dict[str, str] | None:
        """Return the decoded variables if `uri` is an instance of the template, else None.

        Raises InvalidUri when the URI matches the template's shape but a value is unsafe.
        """
        found = self.pattern.match(uri)
        if found is None:
            return None
        values: dict[str, str] = {}
        for group, name in self.groups:
            raw = found.group(group)
            if raw is None:
                continue
            value = unquote(raw)
            if value in (".", "..") or "/../" in f"/{value}/" or re.search(r"[\x00-\x1f\x7f]", value):
                raise InvalidUri(uri, f"unsafe value for {{{name}}}")
            values[name] = value
        if any(v == "" for v in values.values()):
            return None
        return values
