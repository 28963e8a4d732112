"""Direct resources and RFC 6570 resource templates, each versioned and labelled like prompts."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils.translation import gettext_lazy as _

from registry.errors import InvalidUri
from registry.formats.uris import normalize_uri, normalize_uri_template, parse_uri_template, validate_uri
from registry.models.base import EntryVersion, ReleaseLabel, VersionedEntry
from registry.storage.stored_bytes import StoredBytesMixin


def uri_field_validator(value: str) -> None:
    try:
        validate_uri(value)
    except InvalidUri as exc:
        raise ValidationError(exc.message, code="invalid_uri") from exc


def uri_template_field_validator(value: str) -> None:
    try:
        parse_uri_template(value)
    except InvalidUri as exc:
        raise ValidationError(exc.message, code="invalid_uri_template") from exc


class Audience(models.TextChoices):
    ANY = "", _("Not specified")
    USER = "user", _("User")
    ASSISTANT = "assistant", _("Assistant (the model)")
    BOTH = "user,assistant", _("User and assistant")


class ResourceDescription(VersionedEntry):
    """What resources and templates share: naming, MIME type and annotations."""

    name = models.CharField(
        _("name"), max_length=200, help_text=_("Short programmatic name, e.g. 'style-guide'."),
    )
    title = models.CharField(_("title"), max_length=200, blank=True)
    description = models.TextField(_("description"), blank=True)
    mime_type = models.CharField(
        _("mime type"), max_length=100, blank=True, help_text=_("e.g. text/markdown, image/png."),
    )
    audience = models.CharField(_("audience"), max_length=20, choices=Audience.choices, blank=True)
    priority = models.FloatField(
        _("priority"),
        null=True,
        blank=True,
        validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text=_("0 to 1; 1 means clients should treat it as required context."),
    )

    class Meta:
        abstract = True


class Resource(StoredBytesMixin, ResourceDescription):
    uri = models.CharField(
        _("uri"),
        max_length=2048,
        unique=True,
        validators=[uri_field_validator],
        help_text=_("The URI clients read, e.g. docs://style-guide. Cannot change once published."),
    )
    text = models.TextField(
        _("text"), blank=True, help_text=_("Text content (leave empty when uploading a file)."),
    )
    data_sha256 = models.CharField(
        _("data sha256"), max_length=64, blank=True, default="", editable=False,
        help_text=_("SHA-256 of the uploaded bytes in the content store (binary content)."),
    )
    data_size = models.PositiveBigIntegerField(_("data size"), default=0, editable=False)

    kind = "resource"

    class Meta:
        verbose_name = _("resource")
        verbose_name_plural = _("resources")
        ordering = ["uri"]
        permissions = [("publish_resource", "Can publish resource versions, move labels and roll back")]

    def __str__(self) -> str:
        return self.uri

    @property
    def key(self) -> str:
        return self.uri

    def save(self, *args, **kwargs) -> None:
        self.uri = normalize_uri(self.uri)  # one spelling per resource, as lookups normalise too
        super().save(*args, **kwargs)

    @property
    def size(self) -> int:
        return self.data_size if self.data_sha256 else len(self.text.encode("utf-8"))


class ResourceVersion(EntryVersion):
    entry = models.ForeignKey(
        Resource, verbose_name=_("entry"), on_delete=models.PROTECT, related_name="versions",
    )
    parent = models.ForeignKey(
        "self", verbose_name=_("parent"), null=True, blank=True, on_delete=models.PROTECT, related_name="+",
    )

    class Meta(EntryVersion.Meta):
        verbose_name = _("resource version")
        verbose_name_plural = _("resource versions")
        constraints = [models.UniqueConstraint(fields=["entry", "number"], name="unique_resource_version")]


class ResourceLabel(ReleaseLabel):
    entry = models.ForeignKey(
        Resource, verbose_name=_("entry"), on_delete=models.CASCADE, related_name="labels",
    )
    version = models.ForeignKey(
        ResourceVersion, verbose_name=_("version"), on_delete=models.PROTECT, related_name="labels",
    )

    class Meta(ReleaseLabel.Meta):
        verbose_name = _("resource label")
        verbose_name_plural = _("resource labels")
        constraints = [models.UniqueConstraint(fields=["entry", "name"], name="unique_resource_label")]


class ResourceTemplate(ResourceDescription):
    uri_template = models.CharField(
        _("uri template"),
        max_length=2048,
        unique=True,
        validators=[uri_template_field_validator],
        help_text=_("RFC 6570 template, e.g. docs://tickets/{id}. Cannot change once published."),
    )
    body = models.TextField(
        _("body"),
        blank=True, help_text=_("Text returned for a matching URI; {{ variable }} inserts the URI's values.")
    )

    kind = "template"

    class Meta:
        verbose_name = _("resource template")
        verbose_name_plural = _("resource templates")
        ordering = ["uri_template"]
        permissions = [("publish_resourcetemplate", "Can publish template versions, move labels and roll back")]

    def __str__(self) -> str:
        return self.uri_template

    @property
    def key(self) -> str:
        return self.uri_template

    def save(self, *args, **kwargs) -> None:
        self.uri_template = normalize_uri_template(self.uri_template)
        super().save(*args, **kwargs)


class TemplateVariable(models.Model):
    """Per-variable help and suggested values, which drive completion/complete."""

    template = models.ForeignKey(
        ResourceTemplate, verbose_name=_("template"), on_delete=models.CASCADE, related_name="variables",
    )
    name = models.CharField(_("name"), max_length=64)
    description = models.TextField(_("description"), blank=True)
    suggestions = models.TextField(
        _("suggestions"), blank=True, help_text=_("Suggested values, one per line."),
    )

    class Meta:
        verbose_name = _("template variable")
        verbose_name_plural = _("template variables")
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["template", "name"], name="unique_template_variable")]

    def __str__(self) -> str:
        return self.name

    @property
    def suggestion_list(self) -> list[str]:
        return [line.strip() for line in self.suggestions.splitlines() if line.strip()]


class ResourceTemplateVersion(EntryVersion):
    entry = models.ForeignKey(
        ResourceTemplate, verbose_name=_("entry"), on_delete=models.PROTECT, related_name="versions",
    )
    parent = models.ForeignKey(
        "self", verbose_name=_("parent"), null=True, blank=True, on_delete=models.PROTECT, related_name="+",
    )

    class Meta(EntryVersion.Meta):
        verbose_name = _("resource template version")
        verbose_name_plural = _("resource template versions")
        constraints = [models.UniqueConstraint(fields=["entry", "number"], name="unique_template_version")]


class ResourceTemplateLabel(ReleaseLabel):
    entry = models.ForeignKey(
        ResourceTemplate, verbose_name=_("entry"), on_delete=models.CASCADE, related_name="labels",
    )
    version = models.ForeignKey(
        ResourceTemplateVersion, verbose_name=_("version"), on_delete=models.PROTECT, related_name="labels",
    )

    class Meta(ReleaseLabel.Meta):
        verbose_name = _("resource template label")
        verbose_name_plural = _("resource template labels")
        constraints = [models.UniqueConstraint(fields=["entry", "name"], name="unique_template_label")]
