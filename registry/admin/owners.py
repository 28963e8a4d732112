"""The folder owners page: which team looks after which folder (for holders of the permission).

Saving and deleting write registry.authoring.ownership.record_owner_change's audit row (the one
set_folder_owner writes), so every change of owner is audited like the changes it governs.
"""

from __future__ import annotations

from django.contrib import admin

from registry.authoring.ownership import record_owner_change
from registry.models import FolderOwner


@admin.register(FolderOwner)
class FolderOwnerAdmin(admin.ModelAdmin):
    list_display = ("folder", "group")
    list_select_related = ("group",)
    search_fields = ("folder", "group__name")
    ordering = ("folder",)

    def save_model(self, request, obj, form, change):
        # changeform_view is one transaction: the audit row commits with the row it describes.
        stored = FolderOwner.objects.select_related("group").filter(pk=obj.pk).first() if change else None
        super().save_model(request, obj, form, change)
        if stored is not None and stored.folder != obj.folder:
            record_owner_change(stored.folder, before=stored.group.name, after=None, acting_user=request.user)
            before = None
        else:
            before = stored.group.name if stored is not None else None
        if before != obj.group.name:
            record_owner_change(obj.folder, before=before, after=obj.group.name, acting_user=request.user)

    def delete_model(self, request, obj):
        record_owner_change(obj.folder, before=obj.group.name, after=None, acting_user=request.user)
        super().delete_model(request, obj)

    def delete_queryset(self, request, queryset):
        for obj in queryset.select_related("group"):
            self.delete_model(request, obj)
