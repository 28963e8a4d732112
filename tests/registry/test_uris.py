import pytest

from registry.errors import InvalidUri
from registry.uris import UriTemplateMatcher, parse_uri_template, validate_uri


@pytest.mark.parametrize("uri", ["docs://style-guide", "https://example.com/a?b=c", "test://template/123/data", "urn:isbn:123"])
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
