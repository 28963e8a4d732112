"""Prompts: the working copy (with arguments and messages), versions and labels."""

from __future__ import annotations

from django.core.validators import RegexValidator
from django.db import models
from django.utils.translation import gettext_lazy as _

from registry.models.base import EntryVersion, ReleaseLabel, VersionedEntry
from registry.storage.stored_bytes import StoredBytesMixin

prompt_name_validator = RegexValidator(
    r"^[A-Za-z0-9_.\-]{1,128}$",
    "A prompt name is 1-128 letters, digits, '_', '-' or '.', with no spaces.",
    code="invalid_prompt_name",
)
argument_name_validator = RegexValidator(
    r"^[A-Za-z_][A-Za-z0-9_.\-]{0,63}$",
    "An argument name starts with a letter or '_' and has only letters, digits, '_', '-' or '.'.",
    code="invalid_argument_name",
)


class Prompt(VersionedEntry):
    name = models.CharField(
        _("name"),
        max_length=128,
        unique=True,
        validators=[prompt_name_validator],
        help_text=_("The name MCP clients use. Cannot change once published."),
    )
    title = models.CharField(
        _("title"), max_length=200, blank=True, help_text=_("Human-readable name shown in clients."),
    )
    description = models.TextField(
        _("description"), blank=True, help_text=_("What the prompt is for; shown in clients' prompt lists."),
    )

    kind = "prompt"

    class Meta:
        verbose_name = _("prompt")
        verbose_name_plural = _("prompts")
        ordering = ["name"]
        permissions = [("publish_prompt", "Can publish prompt versions, move labels and roll back")]

    def __str__(self) -> str:
        return self.name

    @property
    def key(self) -> str:
        return self.name


class ArgumentType(models.TextChoices):
    """What values an argument accepts; MCP sends them all as strings, the registry checks them."""

    TEXT = "text", _("Text (any, may span lines)")
    STRING = "string", _("Single line of text")
    ENUM = "enum", _("One of a list of choices")
    INTEGER = "integer", _("Whole number")
    NUMBER = "number", _("Number")
    BOOLEAN = "boolean", _("Yes/no (true or false)")
    RESOURCE = "resource", _("URI of a registry resource")


class PromptArgument(models.Model):
    prompt = models.ForeignKey(
        Prompt, verbose_name=_("prompt"), on_delete=models.CASCADE, related_name="arguments",
    )
    position = models.PositiveIntegerField(_("position"), default=0)
    name = models.CharField(_("name"), max_length=64, validators=[argument_name_validator])
    title = models.CharField(_("title"), max_length=200, blank=True)
    description = models.TextField(_("description"), blank=True)
    required = models.BooleanField(_("required"), default=True)
    default = models.TextField(
        _("default"), blank=True, help_text=_("Used when an optional argument is not given."),
    )
    suggestions = models.TextField(
        _("suggestions"),
        blank=True, help_text=_("Suggested values, one per line; clients offer them as completions.")
    )
    type = models.CharField(
        _("type"), max_length=16, choices=ArgumentType.choices, default=ArgumentType.TEXT,
        help_text=_("What values are accepted; clients that send anything else get an error naming the argument."),
    )
    choices = models.TextField(
        _("choices"), blank=True, help_text=_("One of a list: the allowed values, one per line."),
    )
    min_length = models.PositiveIntegerField(
        _("min length"), null=True, blank=True, help_text=_("Text: fewest characters."),
    )
    max_length = models.PositiveIntegerField(
        _("max length"), null=True, blank=True, help_text=_("Text: most characters."),
    )
    pattern = models.CharField(
        _("pattern"),
        max_length=500, blank=True,
        help_text=_("Text: a regular expression the whole value must match, e.g. [A-Z]{3}-[0-9]+."),
    )
    minimum = models.FloatField(
        _("minimum"), null=True, blank=True, help_text=_("Numbers: the smallest value allowed."),
    )
    maximum = models.FloatField(
        _("maximum"), null=True, blank=True, help_text=_("Numbers: the largest value allowed."),
    )

    class Meta:
        verbose_name = _("prompt argument")
        verbose_name_plural = _("prompt arguments")
        ordering = ["position", "id"]
        constraints = [models.UniqueConstraint(fields=["prompt", "name"], name="unique_argument_name")]

    def __str__(self) -> str:
        return self.name

    @property
    def suggestion_list(self) -> list[str]:
        return [line.strip() for line in self.suggestions.splitlines() if line.strip()]

    @property
    def choice_list(self) -> list[str]:
        return [line.strip() for line in self.choices.splitlines() if line.strip()]


class MessageRole(models.TextChoices):
    USER = "user", _("User")
    ASSISTANT = "assistant", _("Assistant")


class ContentKind(models.TextChoices):
    TEXT = "text", _("Text")
    IMAGE = "image", _("Image")
    AUDIO = "audio", _("Audio")
    RESOURCE = "resource", _("Embedded resource")
    RESOURCE_LINK = "resource_link", _("Resource link")


class PromptMessage(StoredBytesMixin, models.Model):
    """One message of the prompt body; each carries exactly one content block."""

    prompt = models.ForeignKey(
        Prompt, verbose_name=_("prompt"), on_delete=models.CASCADE, related_name="messages",
    )
    position = models.PositiveIntegerField(_("position"), default=0)
    role = models.CharField(_("role"), max_length=10, choices=MessageRole.choices, default=MessageRole.USER)
    kind = models.CharField(_("kind"), max_length=16, choices=ContentKind.choices, default=ContentKind.TEXT)
    text = models.TextField(
        _("text"),
        blank=True,
        help_text=_("Text messages: the text, with {{ argument }} placeholders. "
                    "Embedded resources given inline: their text."),
    )
    uri = models.CharField(
        _("uri"), max_length=2048, blank=True,
        help_text=_("Embedded resources and links: the URI; may use {{ argument }}."),
    )
    resource = models.ForeignKey(
        "registry.Resource", verbose_name=_("resource"),
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text=_("Embed or link a registry resource (its published content is frozen into the version)."),
    )
    mime_type = models.CharField(_("mime type"), max_length=100, blank=True)
    data_sha256 = models.CharField(
        _("data sha256"), max_length=64, blank=True, default="", editable=False,
        help_text=_("SHA-256 of the uploaded bytes (images, audio, binary embeds)."),
    )
    data_size = models.PositiveBigIntegerField(_("data size"), default=0, editable=False)
    link_name = models.CharField(
        _("link name"), max_length=200, blank=True, help_text=_("Resource links: the name shown."),
    )

    class Meta:
        verbose_name = _("prompt message")
        verbose_name_plural = _("prompt messages")
        ordering = ["position", "id"]

    def __str__(self) -> str:
        """The heading of the message's row: 1-based like the diffs ("Message 1"), in words."""
        return _("%(number)s. %(role)s, %(kind)s") % {
            "number": (self.position or 0) + 1, "role": self.get_role_display(), "kind": self.get_kind_display()}


class PromptVersion(EntryVersion):
    entry = models.ForeignKey(
        Prompt, verbose_name=_("entry"), on_delete=models.PROTECT, related_name="versions",
    )
    parent = models.ForeignKey(
        "self", verbose_name=_("parent"), null=True, blank=True, on_delete=models.PROTECT, related_name="+",
    )

    class Meta(EntryVersion.Meta):
        verbose_name = _("prompt version")
        verbose_name_plural = _("prompt versions")
        constraints = [models.UniqueConstraint(fields=["entry", "number"], name="unique_prompt_version")]


class PromptLabel(ReleaseLabel):
    entry = models.ForeignKey(
        Prompt, verbose_name=_("entry"), on_delete=models.CASCADE, related_name="labels",
    )
    version = models.ForeignKey(
        PromptVersion, verbose_name=_("version"), on_delete=models.PROTECT, related_name="labels",
    )

    class Meta(ReleaseLabel.Meta):
        verbose_name = _("prompt label")
        verbose_name_plural = _("prompt labels")
        constraints = [models.UniqueConstraint(fields=["entry", "name"], name="unique_prompt_label")]
