"""MCP clients (bearer-token holders) and the counters of what each was served."""

from __future__ import annotations

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from registry.models.base import PRODUCTION, ServedQuerySet, label_name_validator
from registry.models.managers import GuardedManager

# What a client is served follows from these, and nothing else: the Viewer its token stands for
# (label, scope tags, and the name its rollout buckets are drawn by) and whether the token stands
# (its hash, active, expiry). The one list: bulk updates of them are refused (below), a save of one
# drops the cached token answers (registry/release/receivers.py), re-checks the client's open
# streams (registry/serving/credentials.py, clients.still_serves) and is audited (serving/clients.py).
SERVED_FIELDS = ("name", "token_hash", "label", "scope_tags", "active", "expires_at")


class ClientQuerySet(ServedQuerySet):
    # last_seen_at and the description may be bulk-updated.
    served_fields = frozenset(SERVED_FIELDS)


class ClientManager(GuardedManager.from_queryset(ClientQuerySet)):  # type: ignore[misc]
    """ClientQuerySet's rules, in data migrations too (registry/models/managers.py)."""


class McpClient(models.Model):
    """An MCP client the admin issued a token to; the token itself is shown once, stored hashed."""

    name = models.CharField(_("name"), max_length=100, unique=True, help_text=_("e.g. 'support-desk-agent'."))
    description = models.TextField(_("description"), blank=True)
    token_hash = models.CharField(_("token hash"), max_length=64, unique=True, editable=False)
    token_prefix = models.CharField(
        _("token prefix"), max_length=12, editable=False, help_text=_("First characters, to recognise it."),
    )
    label = models.CharField(
        _("label"),
        max_length=40,
        default=PRODUCTION,
        validators=[label_name_validator],
        help_text=_("Release label this client is served ('staging' for early adopters)."),
    )
    scope_tags = models.CharField(
        _("scope tags"), max_length=500, blank=True,
        help_text=_("Comma-separated tags; if set, the client only sees entries with one."),
    )
    active = models.BooleanField(_("active"), default=True, help_text=_("Untick to revoke the token."))
    expires_at = models.DateTimeField(_("expires at"), null=True, blank=True)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    last_seen_at = models.DateTimeField(_("last seen at"), null=True, blank=True, editable=False)

    objects = ClientManager()

    class Meta:
        verbose_name_plural = _("MCP clients")
        ordering = ["name"]
        verbose_name = _("MCP client")

    def __str__(self) -> str:
        return self.name

    @property
    def scope(self) -> frozenset[str]:
        return frozenset(t.strip().lower() for t in self.scope_tags.split(",") if t.strip())

    @property
    def usable(self) -> bool:
        return self.active and (self.expires_at is None or self.expires_at > timezone.now())


class FetchCounter(models.Model):
    """How often one client (or anonymous callers) was served one version of one entry."""

    client = models.ForeignKey(
        McpClient, verbose_name=_("client"), null=True, blank=True, on_delete=models.SET_NULL,
        related_name="fetches",
    )
    client_name = models.CharField(
        _("client name"), max_length=100, help_text=_("Client name at fetch time; '' for anonymous."),
    )
    entry_kind = models.CharField(_("entry kind"), max_length=20)
    entry_key = models.CharField(_("entry key"), max_length=2048)
    version = models.PositiveIntegerField(_("version"))
    label = models.CharField(_("label"), max_length=40)
    count = models.PositiveBigIntegerField(_("count"), default=0)
    first_at = models.DateTimeField(_("first at"))
    last_at = models.DateTimeField(_("last at"))

    class Meta:
        verbose_name = _("fetch counter")
        verbose_name_plural = _("fetch counters")
        ordering = ["-last_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["client_name", "entry_kind", "entry_key", "version", "label"], name="unique_fetch_counter"
            )
        ]

    def __str__(self) -> str:
        who = self.client_name or "anonymous"
        return f"{who}: {self.entry_kind} {self.entry_key} v{self.version} ×{self.count}"
