"""Settings read from the environment, so one code base runs embedded (SQLite, in-memory
channel layer) and scaled out (PostgreSQL, Redis) without edits."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path
from typing import Any

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from config.http_limits import (
    DEFAULT_MAX_REQUEST_BODY_BYTES,
    DEFAULT_MAX_REQUEST_HEAD_BYTES,
    DEFAULT_REQUEST_HEAD_TIMEOUT_SECONDS,
)

BASE_DIR = Path(__file__).resolve().parent.parent


def env_flag(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


DEBUG = env_flag("DJANGO_DEBUG", False)
# The key signs sessions, the messages cookie, password resets and list cursors: whoever knows it
# can forge them. A fixed, public key is only acceptable while debugging on a laptop.
DEVELOPMENT_SECRET_KEY = "insecure-development-key-set-DJANGO_SECRET_KEY-in-production"
MIN_SECRET_KEY_LENGTH = 32
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "").strip() or (DEVELOPMENT_SECRET_KEY if DEBUG else "")
if not DEBUG and (SECRET_KEY == DEVELOPMENT_SECRET_KEY or len(SECRET_KEY) < MIN_SECRET_KEY_LENGTH):
    raise ImproperlyConfigured(
        "DJANGO_SECRET_KEY must be set to a random secret of at least "
        f"{MIN_SECRET_KEY_LENGTH} characters when DJANGO_DEBUG is off (production); the development key "
        "is public. Generate one with: python -c 'import secrets; print(secrets.token_urlsafe(50))'. "
        "(Set DJANGO_DEBUG=1 only on a development machine.)"
    )
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]")

# TLS deployments: DJANGO_SECURE=1 redirects http to https, sends HSTS and keeps the session and
# CSRF cookies off plain http. Behind a proxy that ends TLS, DJANGO_BEHIND_TLS_PROXY=1 trusts its
# X-Forwarded-Proto header (only do this when the proxy sets the header on every request).
SECURE = env_flag("DJANGO_SECURE", False)
if SECURE:
    SECURE_SSL_REDIRECT = True
    SECURE_HSTS_SECONDS = int(os.environ.get("DJANGO_HSTS_SECONDS", 365 * 24 * 3600))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_flag("DJANGO_HSTS_INCLUDE_SUBDOMAINS", False)
    SECURE_HSTS_PRELOAD = env_flag("DJANGO_HSTS_PRELOAD", False)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    LANGUAGE_COOKIE_SECURE = True
if env_flag("DJANGO_BEHIND_TLS_PROXY", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# Largest request line plus headers (bytes); larger requests get 431 (config/http_limits.py, which
# holds the defaults of these three).
MAX_REQUEST_HEAD_BYTES = int(os.environ.get("MAX_REQUEST_HEAD_BYTES", DEFAULT_MAX_REQUEST_HEAD_BYTES))
# Largest request body where no tighter limit applies (admin forms with uploads, the REST API);
# /mcp, sign-in, OAuth and the import API have their own (config/http_limits.py). Larger: 413.
MAX_REQUEST_BODY_BYTES = int(os.environ.get("MAX_REQUEST_BODY_BYTES", DEFAULT_MAX_REQUEST_BODY_BYTES))
# Seconds a new connection has to send its request head, and a begun head to complete (daphne; 408,
# or a close when nothing came).
REQUEST_HEAD_TIMEOUT_SECONDS = float(os.environ.get("REQUEST_HEAD_TIMEOUT_SECONDS",
                                                    DEFAULT_REQUEST_HEAD_TIMEOUT_SECONDS))
# Origins (https://registry.example.com) allowed to POST forms when they differ from the Host.
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "axes",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "csp",
    "channels",
    "registry",
    "mcp_endpoint",
    "api",
    "webhooks",
    "oauth2_provider",
    "oauth",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # The page language: the session or language cookie (the signed-in user's saved choice is put
    # there at login and by registry.admin.language), else Accept-Language, else LANGUAGE_CODE.
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    # After authentication: a signed-in user's saved language wins over the browser's (registry/admin/language.py).
    "registry.admin.language.UserLanguageMiddleware",
    # After it: the REST API answers in LANGUAGE_CODE whatever the caller's language (api/language.py).
    "api.language.ApiLanguageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as django-axes asks: turns a locked-out login into its 429 page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{BASE_DIR / 'db.sqlite3'}",
        # Reused connections spare the notification hub and the fetch-counter flush a
        # connect per call on PostgreSQL; health checks drop ones the server closed.
        conn_max_age=60,
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the server read while a management command writes; the timeout rides out short locks.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = os.environ.get("REDIS_URL", "")
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL]},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# The default cache is per process. "throttle" holds the OAuth endpoints' per-address counters
# (oauth/throttle.py): Redis when REDIS_URL is set, so every worker counts together.
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "throttle": (
        {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL,
         "KEY_PREFIX": "registry", "OPTIONS": {"socket_timeout": 0.5, "socket_connect_timeout": 0.5}}
        if REDIS_URL else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "throttle"}
    ),
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# Login throttling (django-axes): AXES_FAILURE_LIMIT wrong passwords for one username from one
# address lock that pair out for AXES_COOLOFF_TIME (HTTP 429); other addresses, and the same
# address with other usernames, are not affected. Attempts are kept in the database, so every
# worker counts them. The address is REMOTE_ADDR: behind a proxy run the server with --proxy-headers.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = int(os.environ.get("LOGIN_FAILURE_LIMIT", 5))
AXES_COOLOFF_TIME = timedelta(minutes=int(os.environ.get("LOGIN_LOCKOUT_MINUTES", 15)))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True

# Messages live in the server-side session, so the admin's own links render and nothing read back
# from a cookie is trusted as HTML: config/message_storage.py.
MESSAGE_STORAGE = "config.message_storage.ServerSessionMessageStorage"

LANGUAGE_CODE = "en-us"
# The admin's languages: the project's own strings have catalogs in locale/ (Django's admin has its own).
LANGUAGES = [("en", "English"), ("de", "Deutsch"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"

# Documents (resource bytes and text, images, audio) are stored once, content-addressed, in the
# storage named "registry" (registry/storage/blobs.py): the filesystem under MEDIA_ROOT by default, an
# S3-compatible bucket when REGISTRY_S3_BUCKET is set (AWS_S3_ENDPOINT_URL for MinIO/Ceph/...;
# credentials from the usual AWS_* variables or the instance role, as boto3 finds them).
MEDIA_ROOT = Path(os.environ.get("MEDIA_ROOT") or BASE_DIR / "media")
MEDIA_URL = "media/"
_S3_BUCKET = os.environ.get("REGISTRY_S3_BUCKET", "")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    "registry": (
        {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {
                "bucket_name": _S3_BUCKET,
                "endpoint_url": os.environ.get("AWS_S3_ENDPOINT_URL") or None,
                "region_name": os.environ.get("AWS_S3_REGION_NAME") or None,
                "location": os.environ.get("REGISTRY_S3_PREFIX", ""),
                "file_overwrite": False,  # write-once: an existing object is never replaced
                "querystring_auth": True,
                "default_acl": None,
            },
        }
        if _S3_BUCKET
        else {"BACKEND": "django.core.files.storage.FileSystemStorage",
              "OPTIONS": {"location": MEDIA_ROOT}}
    ),
}

LOGIN_URL = "admin:login"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # DRF's own parsers, with JSON nested past the recursion limit answered 400 (api/parsers.py).
    "DEFAULT_PARSER_CLASSES": ["api.parsers.JSONParser", "rest_framework.parsers.FormParser",
                               "rest_framework.parsers.MultiPartParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "api.errors.exception_handler",
}

# The OpenAPI schema at /api/schema/ and its documentation page at /api/docs/ (files from the
# sidecar package: the page loads nothing from a CDN).
SPECTACULAR_SETTINGS = {
    "TITLE": "MCP prompt & resource registry API",
    "DESCRIPTION": "Automation API: drafts, versions, labels, reviews, rollouts, audit log, fetch "
    "statistics and prompts-as-code import/export. Authenticate with `Authorization: Token <key>`.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "SCHEMA_PATH_PREFIX": r"/api/v1",
    "COMPONENT_SPLIT_REQUEST": True,
}

# Content-Security-Policy on every page Django serves (django-csp). Defence in depth behind
# auto-escaping: no inline or foreign script runs even if markup were ever injected. Scripts,
# styles, fonts and fetches come from this origin only; thumbnails and audio previews are
# data: URIs. style-src-attr allows style="..." attributes (admin widgets and several admin
# templates use them; an attribute can neither run script nor match other elements), while
# <style> elements, which could probe the page with selectors, stay blocked. /api/docs/ and
# /api/redoc/ widen this per view (api/urls.py).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "style-src-attr": ["'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "media-src": ["'self'", "data:"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "frame-ancestors": ["'none'"],
        "form-action": ["'self'"],
    },
}

# Webhooks go to global addresses only; networks listed here (comma-separated CIDRs, e.g.
# "10.20.0.0/16" for internal receivers, "127.0.0.0/8,::1/128" for a local one in development
# and tests) are allowed too. See docs/webhooks.md.
WEBHOOKS_ALLOWED_NETWORKS = env_list("WEBHOOKS_ALLOWED_NETWORKS", "")

# The registry's settings (registry/conf.py holds every key and its one default; only what the
# environment sets is put here, so a default is never written twice):
#   MAX_UPLOAD_BYTES (REGISTRY_MAX_UPLOAD_BYTES): largest uploaded file (image, audio, resource bytes).
#   MAX_IMPORT_BYTES (REGISTRY_MAX_IMPORT_BYTES): largest prompts-as-code YAML file imported
#     (manage.py registry_import and the API).
#   PROTECTED_LABELS: labels created protected (production): moving them needs an approved review
#     or an audited override (registry/release/services.py, registry/release/reviews.py). A label
#     row's own `protected` flag decides afterwards.
#   CONTENT_CACHE_BYTES (REGISTRY_CONTENT_CACHE_BYTES): per-process byte budget of the cache of
#     served content (prompt bodies, resource text and blobs, template bodies); entries over 1/8 of
#     it are served without being cached.
#   SHOW_NAMES_TO_CLIENTS (REGISTRY_SHOW_NAMES_TO_CLIENTS): whether MCP clients see people's names
#     (who published, moved or approved) in the built-in change logs (registry://changes/recent,
#     registry://prompts/{name}/changelog; registry/serving/dynamic.py). Off by default: clients
#     get versions, dates and change notes, not who is behind them.
#   PUBLIC_URL (REGISTRY_PUBLIC_URL): where people reach the admin (https://registry.example.com):
#     the links in e-mails. Unset: the origin of MCP_PUBLIC_URL; `make run` sets it.
#   MAIL_DELIVERY_THREAD (REGISTRY_MAIL_DELIVERY_THREAD): server processes also send due e-mail in
#     a background thread (as they send webhooks); off: only `manage.py registry_worker` sends it.
REGISTRY: dict[str, Any] = {}
for _key, _read in (("MAX_UPLOAD_BYTES", int), ("MAX_IMPORT_BYTES", int), ("CONTENT_CACHE_BYTES", int),
                    ("SHOW_NAMES_TO_CLIENTS", bool), ("PUBLIC_URL", str), ("MAIL_DELIVERY_THREAD", bool)):
    if os.environ.get(f"REGISTRY_{_key}"):
        REGISTRY[_key] = env_flag(f"REGISTRY_{_key}") if _read is bool else _read(os.environ[f"REGISTRY_{_key}"])

# E-mail to people (registry/mail/: review requests, decisions, incident rollbacks, scheduled
# releases), with Django's own setting names from the environment. In debug mode without an
# EMAIL_HOST the messages are printed to the console (`make run`).
EMAIL_HOST = os.environ.get("EMAIL_HOST", "")
EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND") or (
    "django.core.mail.backends.console.EmailBackend" if DEBUG and not EMAIL_HOST
    else "django.core.mail.backends.smtp.EmailBackend")
EMAIL_HOST = EMAIL_HOST or "localhost"
EMAIL_PORT = int(os.environ.get("EMAIL_PORT", 25))
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_flag("EMAIL_USE_TLS", False)
EMAIL_USE_SSL = env_flag("EMAIL_USE_SSL", False)
# Seconds one SMTP socket operation may take: a hanging server delays a retry, never a worker for long.
EMAIL_TIMEOUT = float(os.environ.get("EMAIL_TIMEOUT", 10))
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "MCP Registry <registry@localhost>")

# The MCP endpoint; see mcp_endpoint/settings.py for every key and its default.
MCP_ENDPOINT = {
    "ALLOW_ANONYMOUS": env_flag("MCP_ALLOW_ANONYMOUS", False),
    # Where clients reach this server from outside (for server.json and OAuth metadata), e.g.
    # https://registry.example.com/mcp; and its reverse-DNS name in the MCP Registry.
    "PUBLIC_URL": os.environ.get("MCP_PUBLIC_URL", ""),
    "REGISTRY_NAME": os.environ.get("MCP_REGISTRY_NAME", ""),
}
if os.environ.get("MCP_KEEPALIVE_SECONDS"):  # SSE keep-alive (and stream re-check) interval
    MCP_ENDPOINT["KEEPALIVE_SECONDS"] = float(os.environ["MCP_KEEPALIVE_SECONDS"])
if os.environ.get("MCP_STREAM_RETRY_MS"):  # how long clients wait before reconnecting a GET stream
    MCP_ENDPOINT["STREAM_RETRY_MS"] = int(os.environ["MCP_STREAM_RETRY_MS"])
if os.environ.get("MCP_CACHE_TTL_MS"):  # how long 2026-07-28 clients may cache lists and reads
    MCP_ENDPOINT["CACHE_TTL_MS"] = int(os.environ["MCP_CACHE_TTL_MS"])

# OAuth 2.1 for hosted assistants (oauth/, django-oauth-toolkit): authorization code with PKCE
# S256 only, refresh-token rotation, open dynamic client registration (registering grants nothing
# until a user consents), RFC 9207 `iss`, loopback redirects on any port, tokens hashed at rest.
OAUTH2_PROVIDER = {
    "SCOPES": {"mcp": "Read the prompts and resources this registry serves you"},
    "DEFAULT_SCOPES": ["mcp"],
    "PKCE_REQUIRED": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    # A reused authorization code revokes the tokens of its first exchange (oauth/validators.py).
    "OAUTH2_VALIDATOR_CLASS": "oauth.validators.RegistryValidator",
    "ROTATE_REFRESH_TOKEN": True,
    "ALLOW_LOCALHOST_LOOPBACK": True,
    "ALLOWED_REDIRECT_URI_SCHEMES": ["http", "https"],
    "ACCESS_TOKEN_EXPIRE_SECONDS": int(os.environ.get("OAUTH_ACCESS_TOKEN_SECONDS", 3600)),
    "REFRESH_TOKEN_EXPIRE_SECONDS": int(os.environ.get("OAUTH_REFRESH_TOKEN_SECONDS", 30 * 24 * 3600)),
    "REQUEST_APPROVAL_PROMPT": "force",
    "DCR_ENABLED": True,
    "DCR_REGISTRATION_PERMISSION_CLASSES": ("oauth2_provider.dcr.AllowAllDCRPermission",),
    # Client ID Metadata Documents: an https URL as client_id, fetched by the toolkit's SSRF-hardened
    # fetcher (https only, public addresses only, no redirects, size and time bounds).
    "CIMD_ENABLED": env_flag("OAUTH_CLIENT_METADATA_DOCUMENTS", True),
    # The whole fetch within CIMD_FETCH_TIMEOUT_SECONDS (the toolkit's bounds each read only), at most
    # two at once per host and per address, documents held to the registration rules (oauth/metadata_documents.py).
    "CIMD_METADATA_FETCHER": "oauth.metadata_documents.BoundedMetadataFetcher",
    "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
    "OAUTH2_GRANT_TYPES_SUPPORTED": ["authorization_code", "refresh_token"],
    "OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": ["none", "client_secret_basic", "client_secret_post"],
    "OAUTH2_PROTECTED_RESOURCE_NAME": "MCP Prompt Registry",
}
# W008 warns that plain-http redirect URIs are allowed at all: they must be, for native apps'
# loopback callbacks (RFC 8252 §7.3), and oauth/views.py refuses http to any other host at
# registration and at authorization, which is what RFC 9700 §2.1 asks.
SILENCED_SYSTEM_CHECKS = ["oauth2_provider.W008"]
# django-oauth-toolkit's own models (named so that makemigrations can resolve its swappable ones).
OAUTH2_PROVIDER_APPLICATION_MODEL = "oauth2_provider.Application"
OAUTH2_PROVIDER_ACCESS_TOKEN_MODEL = "oauth2_provider.AccessToken"
OAUTH2_PROVIDER_REFRESH_TOKEN_MODEL = "oauth2_provider.RefreshToken"
OAUTH2_PROVIDER_ID_TOKEN_MODEL = "oauth2_provider.IDToken"
OAUTH2_PROVIDER_GRANT_MODEL = "oauth2_provider.Grant"
OAUTH2_PROVIDER_DEVICE_GRANT_MODEL = "oauth2_provider.DeviceGrant"
# Anonymous OAuth endpoints, per caller address (oauth/throttle.py): registrations per hour; token
# and revocation requests per minute; wrong client secrets per ten minutes before secrets from
# that address are no longer checked (429) for the rest of them.
OAUTH_REGISTRATIONS_PER_HOUR = int(os.environ.get("OAUTH_REGISTRATIONS_PER_HOUR", 20))
OAUTH_TOKEN_REQUESTS_PER_MINUTE = int(os.environ.get("OAUTH_TOKEN_REQUESTS_PER_MINUTE", 120))
OAUTH_CLIENT_AUTH_FAILURES = int(os.environ.get("OAUTH_CLIENT_AUTH_FAILURES", 10))
# Dynamically registered (or metadata-document) clients that no user connected within this many
# hours are deleted by `manage.py oauth_prune_registrations` (run it daily).
OAUTH_UNUSED_REGISTRATION_HOURS = int(os.environ.get("OAUTH_UNUSED_REGISTRATION_HOURS", 24))
# What an OAuth user's MCP client is served when none of their groups has a default
# (oauth.models.GroupDefault): the production label, every entry.
OAUTH_DEFAULT_LABEL = os.environ.get("OAUTH_DEFAULT_LABEL", "production")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
}
