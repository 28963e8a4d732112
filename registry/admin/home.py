"""The admin home page by task: write, review and release, clients, audit; the other tables behind one link.

Django lists every model of every app alphabetically, so a publisher met 16 tables, internal ones
among them (prompt labels, template versions, fetch counters, webhook deliveries) that nobody
edits by hand. The tasks name the tables people work in; whatever else the user may see stays
reachable under "Internal tables", so nothing is lost, only out of the way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.utils.translation import gettext_lazy

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise

TASKS: list[tuple[str, StrOrPromise, list[str]]] = [
    ("write", gettext_lazy("Write"), ["registry.prompt", "registry.resource", "registry.resourcetemplate",
                                      "registry.snippet"]),
    ("release", gettext_lazy("Review and release"), ["registry.reviewrequest", "registry.rollout"]),
    ("clients", gettext_lazy("Clients and notifications"), ["registry.mcpclient", "webhooks.webhook"]),
    ("audit", gettext_lazy("Audit"), ["registry.auditentry"]),
    ("people", gettext_lazy("People and access"), ["auth.user", "auth.group"]),
]


def home_groups(app_list: list[dict[str, Any]]) -> dict[str, Any]:
    """Split Django's `app_list` (what this user may see) into task groups and the internal apps."""
    by_key = {f"{app['app_label']}.{model['object_name'].lower()}": model
              for app in app_list for model in app["models"]}
    tasks = []
    for slug, title, keys in TASKS:
        models = [by_key[key] for key in keys if key in by_key]
        if models:
            tasks.append({"slug": slug, "title": title, "models": models})
    in_tasks = {key for _slug, _title, keys in TASKS for key in keys}
    internal = []
    for app in app_list:
        rest = [m for m in app["models"] if f"{app['app_label']}.{m['object_name'].lower()}" not in in_tasks]
        if rest:
            internal.append({**app, "models": rest})
    return {"tasks": tasks, "internal_apps": internal,
            "internal_count": sum(len(app["models"]) for app in internal)}
