"""The discussion of a review request: comments by its requester and the publishers who may decide it.

Comments are insert-only, like versions and audit rows: once written nobody edits or deletes one
(the model and its queryset refuse), so what a decision answered stays readable as it was.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from registry.errors import ImmutableVersionError
from registry.models.managers import GuardedManager, InsertOnly
from registry.models.reviews import ReviewRequest


class CommentKind(models.TextChoices):
    COMMENT = "comment", _("Comment")
    CHANGES_REQUESTED = "changes", _("Changes requested")


class InsertOnlyQuerySet(InsertOnly):
    overwrite_refused = "Review comments are never changed once written."


    def delete(self) -> tuple[int, dict[str, int]]:
        raise ImmutableVersionError("Review comments are never deleted.")


class CommentManager(GuardedManager.from_queryset(InsertOnlyQuerySet)):  # type: ignore[misc]
    """InsertOnlyQuerySet's rules, in data migrations too (registry/models/managers.py)."""


class ReviewComment(models.Model):
    """One comment on a review request (or a reviewer's request for changes, with its reason)."""

    review = models.ForeignKey(ReviewRequest, verbose_name=_("review request"), on_delete=models.PROTECT,
                               related_name="comments")
    kind = models.CharField(_("kind"), max_length=10, choices=CommentKind.choices, default=CommentKind.COMMENT)
    author = models.ForeignKey(settings.AUTH_USER_MODEL, verbose_name=_("author"), null=True, blank=True,
                               on_delete=models.SET_NULL, related_name="+")
    author_name = models.CharField(_("author name"), max_length=150, help_text=_("Kept if the user is deleted."))
    text = models.TextField(_("text"))
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    objects = CommentManager()

    class Meta:
        verbose_name = _("review comment")
        verbose_name_plural = _("review comments")
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"#{self.review_id} {self.author_name}: {self.text[:40]}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise ImmutableVersionError("Review comments are never changed once written.")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        raise ImmutableVersionError("Review comments are never deleted.")
