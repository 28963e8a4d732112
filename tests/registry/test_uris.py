import re

import pytest

from registry.errors import InvalidUri
from registry.formats.uris import (
    UriTemplateMatcher,
    encode_uri,
    lookup_uri,
    normalize_uri,
    normalize_uri_template,
    parse_uri_template,
    validate_uri,
)


@pytest.mark.parametrize("uri", ["docs://style-guide", "https://example.com/a?b=c", "test://template/123/data",
                                 "urn:isbn:123"])
def test_valid_uris_are_accepted(uri):
    assert validate_uri(uri) == uri


@pytest.mark.parametrize(
    "uri", ["", "no-scheme", "docs://a b", "docs://x/../etc/passwd", "file:///%2e%2e/secret", "docs://q\"", "x" * 3000]
)
def test_invalid_or_traversing_uris_are_rejected(uri):
    with pytest.raises(InvalidUri):
        validate_uri(uri)


def test_simple_template_matches_one_segment_and_decodes_it():
    matcher = UriTemplateMatcher.build("test://template/{id}/data")
    assert matcher.match("test://template/123/data") == {"id": "123"}
    assert matcher.match("test://template/a%20b/data") == {"id": "a b"}
    assert matcher.match("test://template/1/2/data") is None
    assert matcher.match("test://other/1/data") is None


def test_reserved_expansion_refuses_path_traversal():
    matcher = UriTemplateMatcher.build("file:///{+path}")
    assert matcher.match("file:///a/b.txt") == {"path": "a/b.txt"}
    with pytest.raises(InvalidUri):
        matcher.match("file:///a/../../etc/passwd")


def test_query_expansion_extracts_named_values():
    matcher = UriTemplateMatcher.build("search://docs{?q,lang}")
    assert matcher.match("search://docs?q=owls&lang=en") == {"q": "owls", "lang": "en"}


@pytest.mark.parametrize("template", ["nope/{id}", "docs://{", "docs://{a b}", "docs://plain", "docs://{id}}"])
def test_invalid_templates_are_rejected(template):
    with pytest.raises(InvalidUri):
        parse_uri_template(template)


# ------------------------------------------------------------------------------ strict, normalised


@pytest.mark.parametrize("uri, suggestion", [
    ("docs://café/menü", "docs://caf%C3%A9/men%C3%BC"),
    ("docs://x/100%", "docs://x/100%25"),
])
def test_non_rfc3986_uris_are_refused_with_the_percent_encoded_form_suggested(uri, suggestion):
    with pytest.raises(InvalidUri, match=re.escape(suggestion)):
        validate_uri(uri)


@pytest.mark.parametrize("given, stored", [
    ("HTTPS://Example.COM", "https://example.com/"),
    ("https://example.com:443/a%7eb%2fc", "https://example.com/a~b%2Fc"),
    ("Docs://Style-Guide/Intro", "docs://style-guide/Intro"),
    ("docs://caf%c3%a9", "docs://caf%C3%A9"),
    ("http://example.com:8080", "http://example.com:8080/"),
    ("urn:ISBN:123", "urn:ISBN:123"),
])
def test_normalisation_follows_rfc3986_section_6(given, stored):
    assert normalize_uri(given) == stored
    assert normalize_uri(stored) == stored  # idempotent


def test_lookups_accept_an_iri_and_its_encoded_form_alike():
    assert lookup_uri("docs://café/menü") == lookup_uri("docs://caf%C3%A9/men%C3%BC") == "docs://caf%C3%A9/men%C3%BC"


def test_template_literals_are_normalised_and_matching_meets_them_there():
    assert normalize_uri_template("DOCS://Tickets/{id}") == "docs://tickets/{id}"
    matcher = UriTemplateMatcher.build(normalize_uri_template("DOCS://Tickets/{id}"))
    assert matcher.match(lookup_uri("docs://TICKETS/%41bc")) == {"id": "Abc"}


@pytest.mark.parametrize("uri", ["docs://Host/x", "docs:////x", "docs://h:80/x", "docs://u@h/x", "docs://[::1]/x",
                                 "DOCS://h/x", "http://h", "https://h:443/x", "docs://h/caf%c3%a9", "docs://h/a b",
                                 "docs://h/é", "docs://host/Path/Upper", "urn:isbn:123", "docs:", "docs://"])
def test_the_stored_form_shortcut_answers_as_both_steps_do(uri):
    """lookup_uri returns a URI it finds already in stored form as it is; everything else takes
    both steps (encode, then normalise)."""
    assert lookup_uri(uri) == normalize_uri(encode_uri(uri))


def test_the_stored_form_shortcut_agrees_with_both_steps_on_random_uris():
    import random

    rng = random.Random(7)
    alphabet = "aZ09-._~:/?#[]@!$&'()*+,;=%éA "
    for _ in range(20000):
        scheme = rng.choice(["docs", "DOCS", "http", "https", "HTTP", "a+b", "x", "urn", ""])
        body = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        uri = (f"{scheme}://" if rng.random() < 0.5 else f"{scheme}:") + body if scheme else body
        assert lookup_uri(uri) == normalize_uri(encode_uri(uri)), uri
