"""Only http(s) addresses of other services may receive webhooks."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from webhooks.forms import WebhookForm
from webhooks.validation import validate_webhook_url


@pytest.mark.parametrize("url", ["ftp://hooks.example.com/x", "file:///etc/passwd", "javascript:alert(1)",
                                 "gopher://example.com"])
def test_non_http_urls_are_refused(url):
    with pytest.raises(ValidationError) as caught:
        validate_webhook_url(url)
    assert caught.value.code in ("scheme", "host")


@pytest.mark.parametrize("url", ["http://127.0.0.1:8000/hook", "https://localhost/hook", "http://[::1]:8000/",
                                 "http://127.1.2.3/", "http://0.0.0.0:8000/", "http://[::ffff:127.0.0.1]/",
                                 "http://api.localhost/"])
def test_loopback_urls_are_refused(settings, url):
    settings.WEBHOOKS_ALLOWED_NETWORKS = ""
    with pytest.raises(ValidationError) as caught:
        validate_webhook_url(url)
    assert caught.value.code == "self"


def test_this_servers_own_host_names_are_refused(settings):
    settings.WEBHOOKS_ALLOWED_NETWORKS = ""
    settings.ALLOWED_HOSTS = ["registry.example.com", ".internal.example.com"]
    for url in ("https://registry.example.com/hook", "https://a.internal.example.com/hook"):
        with pytest.raises(ValidationError):
            validate_webhook_url(url)
    validate_webhook_url("https://hooks.example.com/registry")


def test_loopback_is_allowed_when_the_setting_says_so(settings):
    settings.WEBHOOKS_ALLOWED_NETWORKS = "127.0.0.0/8,::1/128"
    validate_webhook_url("http://127.0.0.1:9999/hook")


def test_credentials_in_the_url_are_refused():
    with pytest.raises(ValidationError):
        validate_webhook_url("https://user:pw@hooks.example.com/")


@pytest.mark.django_db
def test_the_admin_form_shows_clear_errors(settings):
    settings.WEBHOOKS_ALLOWED_NETWORKS = ""
    form = WebhookForm(data={"name": "x", "url": "http://localhost:8000/hook", "events": ["version.published"],
                             "active": True})
    assert not form.is_valid()
    assert "this server itself" in form.errors["url"][0]
    form = WebhookForm(data={"name": "x", "url": "ftp://hooks.example.com/", "events": [], "active": True})
    assert not form.is_valid()
    assert set(form.errors) == {"url", "events"}


@pytest.mark.parametrize("url", ["http://169.254.169.254/latest/meta-data/", "http://[fe80::1]/"])
def test_link_local_addresses_are_refused_even_with_loopback_allowed(settings, url):
    settings.WEBHOOKS_ALLOWED_NETWORKS = "127.0.0.0/8,::1/128"
    with pytest.raises(ValidationError) as caught:
        validate_webhook_url(url)
    assert caught.value.code == "link_local"


@pytest.mark.parametrize("url", ["http://10.0.0.5/hook", "https://192.168.1.20/", "http://[fd00::5]/",
                                 "http://100.64.1.1/", "http://224.0.0.1/", "http://[::ffff:10.0.0.5]/"])
def test_private_and_reserved_addresses_are_refused_unless_their_network_is_allowed(settings, url):
    settings.WEBHOOKS_ALLOWED_NETWORKS = ""
    with pytest.raises(ValidationError) as caught:
        validate_webhook_url(url)
    assert caught.value.code == "private" and "WEBHOOKS_ALLOWED_NETWORKS" in caught.value.message
    settings.WEBHOOKS_ALLOWED_NETWORKS = "10.0.0.0/8,192.168.0.0/16,fd00::/8,100.64.0.0/10,224.0.0.0/4"
    validate_webhook_url(url)


def test_a_port_out_of_range_is_a_clear_error():
    with pytest.raises(ValidationError) as caught:
        validate_webhook_url("https://hooks.example.com:99999/")
    assert caught.value.code == "invalid"
