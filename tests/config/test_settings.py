"""Production mode (DJANGO_DEBUG off) refuses to start without a real signing key."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEVELOPMENT_KEY = "insecure-development-key-set-DJANGO_SECRET_KEY-in-production"


def load_settings(**env: str) -> subprocess.CompletedProcess:
    """Import config.settings in a fresh interpreter with exactly these key/debug variables."""
    child = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SECRET_KEY", "DJANGO_DEBUG")}
    child.update(env)
    return subprocess.run([sys.executable, "-c", "import config.settings as s; print(s.SECRET_KEY)"],
                          cwd=ROOT, env=child, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("env", [
    {},
    {"DJANGO_DEBUG": "0"},
    {"DJANGO_SECRET_KEY": "", "DJANGO_DEBUG": "0"},
    {"DJANGO_SECRET_KEY": DEVELOPMENT_KEY},
    {"DJANGO_SECRET_KEY": "short-key"},
], ids=["unset", "debug-off", "empty", "development-key", "too-short"])
def test_production_mode_without_a_real_key_refuses_to_start(env):
    done = load_settings(**env)
    assert done.returncode != 0
    assert "ImproperlyConfigured: DJANGO_SECRET_KEY must be set to a random secret" in done.stderr


def test_production_mode_with_a_real_key_uses_it():
    key = "k" * 20 + "-a-real-random-secret-here"
    done = load_settings(DJANGO_SECRET_KEY=key, DJANGO_DEBUG="0")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == key


def test_debug_mode_falls_back_to_the_development_key():
    done = load_settings(DJANGO_DEBUG="1")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == DEVELOPMENT_KEY


def deploy_check(**env: str) -> subprocess.CompletedProcess:
    child = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "CSRF_"))}
    child.update({"DJANGO_SECRET_KEY": "a-real-random-secret-" + "x" * 40, "ALLOWED_HOSTS": "registry.example.com"},
                 **env)
    return subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
                          cwd=ROOT, env=child, capture_output=True, text=True, timeout=120)


def test_one_flag_switches_on_https_redirect_hsts_and_secure_cookies():
    done = deploy_check(DJANGO_SECURE="1", DJANGO_HSTS_INCLUDE_SUBDOMAINS="1", DJANGO_HSTS_PRELOAD="1")
    assert done.returncode == 0, done.stdout + done.stderr


def test_without_the_flag_the_deploy_check_lists_what_tls_needs():
    done = deploy_check()
    assert done.returncode != 0
    for code in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert code in done.stderr


def test_behind_a_tls_proxy_the_forwarded_scheme_is_trusted_only_when_asked():
    code = "import config.settings as s; print(getattr(s, 'SECURE_PROXY_SSL_HEADER', None))"
    child = {**os.environ, "DJANGO_SECRET_KEY": "a-real-random-secret-" + "x" * 40}
    child.pop("DJANGO_BEHIND_TLS_PROXY", None)
    plain = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=child, capture_output=True, text=True)
    proxied = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**child, "DJANGO_BEHIND_TLS_PROXY": "1"},
                             capture_output=True, text=True)
    assert plain.stdout.strip() == "None"
    assert proxied.stdout.strip() == "('HTTP_X_FORWARDED_PROTO', 'https')"


def test_the_password_validators_refuse_common_numeric_and_name_like_passwords():
    from django.contrib.auth import get_user_model
    from django.contrib.auth.password_validation import validate_password
    from django.core.exceptions import ValidationError

    user = get_user_model()(username="publisher-jane", email="jane@example.com")
    for weak in ("password123", "8451937260", "publisher-jane1", "short"):
        with pytest.raises(ValidationError):
            validate_password(weak, user)
    validate_password("violet-harbor-trumpet-42", user)


def test_stream_retry_and_cache_ttl_come_from_the_environment():
    """Operators tune how long 2026-07-28 clients may cache (MCP_CACHE_TTL_MS) and how long GET
    stream clients wait before reconnecting (MCP_STREAM_RETRY_MS) without editing settings."""
    code = ("import config.settings as s; "
            "print(s.MCP_ENDPOINT.get('CACHE_TTL_MS'), s.MCP_ENDPOINT.get('STREAM_RETRY_MS'))")
    child = {**os.environ, "DJANGO_DEBUG": "1", "MCP_CACHE_TTL_MS": "5000", "MCP_STREAM_RETRY_MS": "12000"}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=child, capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["5000", "12000"], done.stderr


def _settings_of(code: str, **env: str) -> str:
    child = {k: v for k, v in os.environ.items() if not k.startswith("REGISTRY_")}
    child.update(DJANGO_DEBUG="1", **env)
    done = subprocess.run([sys.executable, "-c", "import config.settings as s; " + code], cwd=ROOT, env=child,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_project_settings_write_no_registry_default_of_their_own():
    """registry/conf.py holds each REGISTRY default once: the project's settings put in only what
    the environment sets (they used to repeat all seven defaults beside conf.py's)."""
    assert _settings_of("print(s.REGISTRY)") == "{}"
    assert _settings_of("print(sorted(s.REGISTRY.items()))", REGISTRY_MAX_IMPORT_BYTES="1000",
                        REGISTRY_SHOW_NAMES_TO_CLIENTS="yes", REGISTRY_MAIL_DELIVERY_THREAD="0",
                        REGISTRY_PUBLIC_URL="https://r.example") == (
        "[('MAIL_DELIVERY_THREAD', False), ('MAX_IMPORT_BYTES', 1000), ('PUBLIC_URL', 'https://r.example'), "
        "('SHOW_NAMES_TO_CLIENTS', True)]")


def test_every_registry_key_the_project_sets_is_one_the_registry_reads(settings):
    from registry.conf import DEFAULTS

    assert set(settings.REGISTRY) <= set(DEFAULTS)


def test_the_request_limits_default_to_the_values_http_limits_holds():
    from config import http_limits

    assert _settings_of("print(s.MAX_REQUEST_HEAD_BYTES, s.MAX_REQUEST_BODY_BYTES, s.REQUEST_HEAD_TIMEOUT_SECONDS)") \
        == (f"{http_limits.DEFAULT_MAX_REQUEST_HEAD_BYTES} {http_limits.DEFAULT_MAX_REQUEST_BODY_BYTES} "
            f"{http_limits.DEFAULT_REQUEST_HEAD_TIMEOUT_SECONDS}")
