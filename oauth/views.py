"""OAuth HTTP views: our resource metadata, the consent page, registration and JSON 404s.

The authorization server's endpoints are django-oauth-toolkit's; these subclasses only add
what the MCP setup needs (the /mcp resource, admin-styled consent naming what the client will
be served, authorization-code-only registration, JSON instead of the HTML 404 page)."""

from __future__ import annotations

import json
from typing import Any, cast
from urllib.parse import urlsplit

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.decorators import method_decorator
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, gettext_noop
from django.views.decorators.csrf import csrf_exempt
from oauth2_provider.settings import oauth2_settings
from oauth2_provider.views import (
    AuthorizationView,
    DynamicClientRegistrationManagementView,
    DynamicClientRegistrationView,
    OAuthProtectedResourceMetadataView,
    RevokeTokenView,
    TokenView,
)

from . import throttle
from .bearer import defaults_for
from .models import OAuthConnection
from .resource import SCOPE, resource_url

_LOOPBACK = {"127.0.0.1", "::1", "localhost"}
_ALLOWED_GRANTS = {"authorization_code", "refresh_token"}
# What one registration may store: an anonymous POST /register used to keep up to 2.4 MB of
# redirect URIs for ever. The same bounds apply to fetched client metadata documents.
MAX_METADATA_BYTES = 16 * 1024
MAX_REDIRECT_URIS = 10
MAX_REDIRECT_URI_LENGTH = 2000
# The scope's description (settings.OAUTH2_PROVIDER["SCOPES"]), translated on the consent page.
gettext_noop("Read the prompts and resources this registry serves you")
CONNECT_TITLE = gettext_lazy("Connect an assistant")


class ProtectedResourceMetadata(OAuthProtectedResourceMetadataView):
    """RFC 9728 document for /mcp, at the root and the path-suffixed well-known URI."""

    def get_resource(self, request: HttpRequest) -> str:
        return resource_url(cast(str, request.scheme), request.get_host())  # always set on a served request

    def get_authorization_servers(self, request: HttpRequest) -> list[str]:
        return [oauth2_settings.oauth2_authorization_server_issuer(request)]

    def get_scopes_supported(self) -> list[str]:
        return [SCOPE]


MACHINE_PATHS = ("/oauth/token/", "/oauth/revoke_token/", "/oauth/register", "/register", "/.well-known/")


def failure(request: HttpRequest, exc: BaseException | None) -> JsonResponse | None:
    """The project's handler500 for the endpoints programs call (token, revocation, registration,
    metadata): an OAuth JSON error (RFC 6749 §5.2 shape), `temporarily_unavailable` with 503 while
    the database is down, `server_error` otherwise; None for the consent pages (HTML)."""
    from registry.storage.outages import outage_of

    if not request.path.startswith(MACHINE_PATHS):
        return None
    outage = outage_of(exc)
    if outage is not None:
        response = JsonResponse({"error": "temporarily_unavailable", "error_description": outage.message},
                                status=503)
        response["Retry-After"] = "5"
        return response
    return JsonResponse({"error": "server_error",
                         "error_description": "The request failed on the server; it is logged."}, status=500)


def not_found(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
    """Unknown /.well-known/* and /oauth/* paths: a JSON error, which OAuth clients can read."""
    return JsonResponse({"error": "not_found", "error_description": f"No OAuth endpoint at {request.path}"},
                        status=404)


def _redirect_uri_problem(uri: str) -> str | None:
    """Exactly one absolute URI (OAuth 2.1 §2.3.1 / RFC 8252 §7.3): https anywhere, plain http only
    to a loopback host, no fragment. The toolkit stores a client's redirect URIs joined by spaces,
    so a space or line break inside one would smuggle in a second, unchecked one."""
    if len(uri) > MAX_REDIRECT_URI_LENGTH:
        return f"redirect_uri is {len(uri)} characters long; at most {MAX_REDIRECT_URI_LENGTH} are allowed"
    if any(ord(c) <= 0x20 or ord(c) >= 0x7f for c in uri):
        return (f"redirect_uri {uri!r} must be exactly one URI: spaces, line breaks, control and non-ASCII "
                "characters are not allowed (percent-encode them)")
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018 - an invalid port raises here
    except ValueError:
        return f"redirect_uri {uri!r} is not a URI"
    if not parts.scheme or (parts.scheme in ("http", "https") and not parts.hostname):
        return f"redirect_uri {uri!r} is not an absolute URI"
    if parts.fragment or "#" in uri:
        return f"redirect_uri {uri!r} must not have a fragment"
    if parts.scheme == "http" and (parts.hostname or "") not in _LOOPBACK:
        return f"redirect_uri {uri!r}: plain http is allowed only to 127.0.0.1, [::1] or localhost"
    return None


def redirect_uris_problem(uris: Any) -> str | None:
    """The problem with a client's list of redirect URIs (registration, update, metadata document)."""
    if not isinstance(uris, list):
        return None  # the toolkit says what shape it wants
    if len(uris) > MAX_REDIRECT_URIS:
        return f"at most {MAX_REDIRECT_URIS} redirect_uris are allowed (got {len(uris)})"
    for uri in uris:
        problem = _redirect_uri_problem(uri) if isinstance(uri, str) else "redirect_uris must be strings"
        if problem:
            return problem
    return None


def _metadata_problem(request: HttpRequest) -> JsonResponse | None:
    """What this server refuses in RFC 7591 metadata (the toolkit checks the rest)."""
    if len(request.body) > MAX_METADATA_BYTES:
        return _metadata_error(f"client metadata may be at most {MAX_METADATA_BYTES:,} bytes")
    try:
        data = json.loads(request.body or b"null")
    except RecursionError:
        return _metadata_error("client metadata is nested too deeply")
    except ValueError:
        return None  # the toolkit answers invalid_client_metadata
    if not isinstance(data, dict):
        return None
    grants = data.get("grant_types", ["authorization_code"])
    if isinstance(grants, list) and not set(map(str, grants)) <= _ALLOWED_GRANTS:
        return _metadata_error("only the authorization_code and refresh_token grant types are offered")
    problem = redirect_uris_problem(data.get("redirect_uris"))
    if problem:
        return JsonResponse({"error": "invalid_redirect_uri", "error_description": problem}, status=400)
    return None


@method_decorator(csrf_exempt, name="dispatch")
class ClientRegistration(DynamicClientRegistrationView):
    """RFC 7591 registration, limited to what this server issues: authorization code (+ refresh)."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if throttle.over(throttle.REGISTRATIONS, throttle.address_of(request)):
            return throttle.too_many(throttle.REGISTRATIONS)
        return _metadata_problem(request) or super().post(request, *args, **kwargs)


@method_decorator(csrf_exempt, name="dispatch")
class ClientManagement(DynamicClientRegistrationManagementView):
    """RFC 7592 updates keep the same limits as registration."""

    def put(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if throttle.over(throttle.REGISTRATIONS, throttle.address_of(request)):
            return throttle.too_many(throttle.REGISTRATIONS)
        return _metadata_problem(request) or super().put(request, *args, **kwargs)


class _ClientAuthThrottled:
    """Token and revocation requests: a per-address rate, and after repeated wrong client
    secrets, no more hashing of secrets from that address for a while (oauth/throttle.py)."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        address = throttle.address_of(request)
        if throttle.over(throttle.TOKEN_REQUESTS, address):
            return throttle.too_many(throttle.TOKEN_REQUESTS)
        with_secret = throttle.carries_client_secret(request)
        failures = throttle.CLIENT_AUTH_FAILURES
        if with_secret and failures.count(address) >= failures.limit:
            return throttle.too_many(failures)
        response = super().post(request, *args, **kwargs)  # type: ignore[misc]
        if with_secret and response.status_code == 401:  # invalid_client: the secret was wrong
            failures.hit(address)
        return response


@method_decorator(csrf_exempt, name="dispatch")
class Token(_ClientAuthThrottled, TokenView):
    pass


@method_decorator(csrf_exempt, name="dispatch")
class RevokeToken(_ClientAuthThrottled, RevokeTokenView):
    pass


def _form_action_source(redirect_uri: str) -> str | None:
    """The CSP source expression for a validated redirect URI: its origin, or ``scheme:``."""
    if not redirect_uri or any(c in redirect_uri for c in " \t\r\n;,'\""):
        return None
    parts = urlsplit(redirect_uri)
    if parts.scheme in ("http", "https"):
        return f"{parts.scheme}://{parts.netloc}" if parts.netloc else None
    return f"{parts.scheme}:" if parts.scheme else None


def _metadata_error(description: str) -> JsonResponse:
    return JsonResponse({"error": "invalid_client_metadata", "error_description": description}, status=400)


class Consent(AuthorizationView):
    """The consent page in the admin's style: which client, which user, what it will be served."""

    template_name = "oauth/authorize.html"

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        # The toolkit refuses "plain" only when it issues the code, after the user consented;
        # refuse it before asking anyone anything (OAuth 2.1 §4.1.1: S256 only here).
        method = request.GET.get("code_challenge_method")
        if method == "plain":
            error = {"error": "invalid_request",
                     "description": _('The "plain" PKCE method is not accepted; use "S256".')}
            return self.render_to_response({"error": error, "title": CONNECT_TITLE}, status=400)
        if request.GET.get("code_challenge") and method != "S256":
            # A missing method means "plain" (RFC 7636 §4.3), which is refused only once the code
            # is issued: after the user pressed "Allow". Say so before asking anything.
            error = {"error": "invalid_request",
                     "description": _('code_challenge_method must be "S256".')}
            return self.render_to_response({"error": error, "title": CONNECT_TITLE}, status=400)
        query = request.GET.copy()
        request.GET = query  # type: ignore[assignment]  # a mutable copy, which the stubs' GET cannot be
        # The settings ask for consent every time; a client's approval_prompt=auto would skip
        # the page whenever the user holds a live token of this client.
        query["approval_prompt"] = oauth2_settings.REQUEST_APPROVAL_PROMPT
        ours = resource_url(cast(str, request.scheme), request.get_host())
        asked = request.GET.getlist("resource")
        if not asked:  # RFC 8707 §2: the server may bind a default audience; ours is the only one
            query["resource"] = ours
        elif any(value != ours for value in asked):
            error = {"error": "invalid_target",
                     "description": _("This server issues tokens only for %(ours)s, not for %(asked)s.")
                     % {"ours": ours, "asked": ", ".join(asked)}}
            return self.render_to_response({"error": error, "title": CONNECT_TITLE}, status=400)
        response = super().get(request, *args, **kwargs)
        redirect_uri = getattr(self, "oauth2_data", {}).get("redirect_uri") or ""
        problem = redirect_uri and _redirect_uri_problem(redirect_uri)
        if problem:  # whoever registered it (an admin, a metadata document): no code over plain http
            error = {"error": "invalid_request", "description": problem}
            return self.render_to_response({"error": error, "title": CONNECT_TITLE}, status=400)
        source = _form_action_source(redirect_uri)
        if source and response.status_code == 200:
            # CSP form-action also governs the redirect that answers the form (the client's
            # callback), so the page's policy must name the callback the toolkit just validated.
            response._csp_update = {"form-action": [source]}
        return response

    def form_valid(self, form: Any) -> HttpResponse:
        problem = _redirect_uri_problem(form.cleaned_data.get("redirect_uri") or "")
        if problem:
            error = {"error": "invalid_request", "description": problem}
            return self.render_to_response({"error": error, "title": CONNECT_TITLE}, status=400)
        if not form.cleaned_data.get("resource"):
            form.cleaned_data["resource"] = resource_url(self.request.scheme, self.request.get_host())
        return super().form_valid(form)

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        application = context.get("application")
        user = self.request.user
        link = None
        if application is not None and user.is_authenticated:
            link = OAuthConnection.objects.select_related("client").filter(application=application, user=user).first()
        if link is not None:
            label, tags = link.client.label, link.client.scope_tags
        elif user.is_authenticated:
            label, tags = defaults_for(user)
        else:
            label, tags = "", ""
        context.update(served_label=label, served_tags=[t.strip() for t in tags.split(",") if t.strip()],
                       title=CONNECT_TITLE, site_header=_("MCP Prompt Registry"),
                       redirect_host=urlsplit(context.get("redirect_uri") or "").netloc)
        return context
