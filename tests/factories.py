"""Plain builders for test data (no JSON fixtures): each returns saved rows with sensible defaults."""

from __future__ import annotations

import base64
import itertools
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from registry.models import (
    Prompt,
    PromptArgument,
    PromptMessage,
    Resource,
    ResourceTemplate,
    Snippet,
    SnippetArgument,
    TemplateVariable,
)
from registry.roles import ensure_role_groups

PNG_1X1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
_counter = itertools.count(1)


def make_user(role: str | None = None, *, username: str | None = None, password: str = "pw-for-tests-1",
              email: str = ""):
    """A staff user in one of the role groups ('Editors', 'Publishers', 'Auditors'), or a superuser for None.
    `email="@"` gives them the address <username>@example.com."""
    User = get_user_model()
    username = username or f"{(role or 'admin').lower()}-{next(_counter)}"
    user = User.objects.create_user(
        username=username, password=password, is_staff=True, email=f"{username}@example.com" if email == "@" else email
    )
    if role is None:
        user.is_superuser = True
        user.save()
    else:
        if not Group.objects.filter(name=role).exists():  # transactional tests flush migration data
            ensure_role_groups()
        user.groups.add(Group.objects.get(name=role))
    return user


def make_prompt(
    name: str | None = None,
    *,
    description: str = "A prompt for tests",
    arguments: list[dict[str, Any]] | None = None,
    messages: list[dict[str, Any]] | None = None,
    **fields: Any,
) -> Prompt:
    """A draft prompt; by default one required argument `topic` and one user text message using it."""
    prompt = Prompt.objects.create(name=name or f"prompt-{next(_counter)}", description=description, **fields)
    if arguments is None:
        arguments = [{"name": "topic", "required": True}]
    if messages is None:
        messages = [{"role": "user", "kind": "text", "text": "Tell me about {{ topic }}."}]
    for position, arg in enumerate(arguments):
        PromptArgument.objects.create(prompt=prompt, position=position, **arg)
    for position, message in enumerate(messages):
        PromptMessage.objects.create(prompt=prompt, position=position, **message)
    return prompt


def make_resource(uri: str | None = None, *, text: str = "Some content", **fields: Any) -> Resource:
    fields.setdefault("name", (uri or "doc").rsplit("/", 1)[-1] or "doc")
    fields.setdefault("mime_type", "text/plain")
    return Resource.objects.create(uri=uri or f"docs://doc-{next(_counter)}", text=text, **fields)


def make_template(
    uri_template: str | None = None,
    *,
    body: str = "Item {{ id }}",
    suggestions: dict[str, list[str]] | None = None,
    **fields: Any,
) -> ResourceTemplate:
    fields.setdefault("name", "items")
    fields.setdefault("mime_type", "text/plain")
    template = ResourceTemplate.objects.create(
        uri_template=uri_template or f"items{next(_counter)}://{{id}}", body=body, **fields
    )
    for name, values in (suggestions or {}).items():
        TemplateVariable.objects.create(template=template, name=name, suggestions="\n".join(values))
    return template


def make_snippet(name: str | None = None, *, text: str = "Answer briefly and politely.",
                 arguments: list[dict[str, Any]] | None = None, **fields: Any) -> Snippet:
    """A draft snippet; `arguments` like [{"name": "topic"}] for the placeholders its text uses."""
    snippet = Snippet.objects.create(name=name or f"snippet-{next(_counter)}", text=text, **fields)
    for position, arg in enumerate(arguments or []):
        SnippetArgument.objects.create(snippet=snippet, position=position, **arg)
    return snippet


def release(entry, *, note: str = "first release", labels=("production",)):
    """Publish the draft to `labels` as the operator at the command line would (production is
    protected; the command line is an audited override). For setting up what clients are served."""
    from registry.release import services

    return services.publish(entry, acting_user=None, actor="release script", note=note, labels=labels)


def grant(user, *perms: str):
    """Give `user` extra permissions ('registry.override_protected_labels'); returns a fresh copy."""
    from django.contrib.auth.models import Permission

    for perm in perms:
        app_label, codename = perm.split(".", 1)
        user.user_permissions.add(Permission.objects.get(content_type__app_label=app_label, codename=codename))
    return type(user).objects.get(pk=user.pk)  # permission caches are per instance


TYPED_ARGUMENTS: list[dict[str, Any]] = [
    {"name": "tone", "description": "Tone of the reply", "type": "enum", "choices": "formal\nwarm"},
    {"name": "count", "type": "integer", "minimum": 1, "maximum": 10},
    {"name": "ratio", "type": "number", "minimum": 0, "maximum": 1, "required": False, "default": "0.5"},
    {"name": "short", "type": "boolean", "required": False, "default": "false"},
    {"name": "code", "type": "string", "min_length": 3, "max_length": 8, "pattern": "[A-Z]+-[0-9]+"},
    {"name": "doc", "type": "resource", "required": False},
]


def make_typed_prompt(name: str = "typed-reply", **fields: Any) -> Prompt:
    """A draft prompt with one argument of each type (and its bounds), all used in one message."""
    return make_prompt(
        name, arguments=[dict(a) for a in TYPED_ARGUMENTS],
        messages=[{"role": "user", "kind": "text",
                   "text": "{{ tone }} x{{ count }} r{{ ratio }} s{{ short }} c{{ code }} d{{ doc }}"}],
        **fields,
    )


def make_complete_entries() -> dict[str, list[Any]]:
    """Entries of every kind and shape with every field a snapshot can carry set (drafts, unpublished,
    but for the snippets they include).

    A prompt with typed arguments (every type, with choices, length bounds, a pattern, number
    bounds, defaults and suggestions) and a message of every content type (text, image, audio,
    an embedded text and a binary document, an embedded and a linked registry resource, an inline
    link); a text and a binary resource; a template with annotations and variables; two snippets, one
    including the other, that the prompt, the text resource and the template include. The snapshot
    schema's test walks their snapshots; the portable format's test exports and imports them.
    """
    signature = make_snippet("signature", text="Regards, the team.")
    house_style = make_snippet("house-style", description="How we write", tags="style",
                               text="Use {{ tone }} words.\n{{> signature@1 }}\n",
                               arguments=[{"name": "tone", "description": "The tone", "type": "enum"}])
    # Published, as texts may include only snippets with a version to serve (the other entries stay drafts).
    release(signature)
    release(house_style)
    guide = make_resource("docs://guide", text="Write plainly.\nShort sentences.\n{{> signature }}\n", name="guide",
                          title="Style guide", description="How we write", tags="docs, style",
                          audience="user,assistant", priority=0.5, mime_type="text/markdown")
    logo = make_resource("docs://logo", text="", name="logo", title="Logo", description="The logo",
                         tags="brand", audience="user", priority=1.0, mime_type="image/png")
    logo.data = PNG_1X1
    logo.save()
    arguments = [
        {"name": "tone", "title": "Tone", "description": "Tone of the reply", "type": "enum",
         "choices": "formal\nwarm", "suggestions": "warm"},
        {"name": "count", "title": "Count", "description": "How many", "type": "integer", "minimum": 1,
         "maximum": 10, "required": False, "default": "5", "suggestions": "3\n5"},
        {"name": "ratio", "title": "Ratio", "type": "number", "minimum": 0, "maximum": 1, "required": False,
         "default": "0.5"},
        {"name": "short", "title": "Short", "type": "boolean", "required": False, "default": "false"},
        {"name": "code", "title": "Code", "description": "A ticket code", "type": "string", "min_length": 3,
         "max_length": 8, "pattern": "[A-Z]+-[0-9]+", "suggestions": "AB-12"},
        {"name": "doc", "title": "Document", "type": "resource", "required": False},
        {"name": "topic", "title": "Topic", "description": "What it is about", "min_length": 2, "max_length": 200},
    ]
    prompt = make_prompt(
        "complete", title="Complete", description="Every field set", tags="support, billing", arguments=arguments,
        messages=[
            {"role": "user", "kind": "text",
             "text": "{{ tone }} {{ count }} {{ ratio }} {{ short }} {{ code }} {{ doc }} {{ topic }}\n"
                     "{{> house-style }}"},
            {"role": "user", "kind": "image", "mime_type": "image/png", "data": PNG_1X1},
            {"role": "assistant", "kind": "audio", "mime_type": "audio/wav", "data": b"RIFF0000WAVE"},
            {"role": "user", "kind": "resource", "uri": "docs://inline", "mime_type": "text/plain",
             "text": "Embedded text\n"},
            {"role": "user", "kind": "resource", "uri": "docs://inline.pdf", "mime_type": "application/pdf",
             "data": b"%PDF-1.4 tiny"},
            {"role": "user", "kind": "resource", "resource": guide},
            {"role": "assistant", "kind": "resource_link", "uri": "https://example.com/spec", "link_name": "spec",
             "mime_type": "text/html"},
            {"role": "assistant", "kind": "resource_link", "resource": guide},
        ],
    )
    template = make_template("tickets://{project}/{id}", body="Ticket {{ id }} of {{ project }}\n{{> signature }}",
                             name="ticket",
                             title="Ticket", description="One ticket", tags="support", audience="assistant",
                             priority=0.25, mime_type="text/markdown")
    TemplateVariable.objects.create(template=template, name="id", description="The ticket number",
                                    suggestions="1\n2")
    TemplateVariable.objects.create(template=template, name="project", description="The project",
                                    suggestions="web\napi")
    return {"prompt": [prompt], "resource": [guide, logo], "template": [template], "snippet": [house_style, signature]}


# Prompts-as-code with texts that begin or end with spaces or newlines, and a title with a line
# break: what an unchanged save (admin, API) must leave exactly as it is.
UNTRIMMED_YAML = """
prompts:
  - name: spaced
    title: "Two\\nlines"
    description: "Says hello.\\n"
    arguments:
      - {name: who, description: "  the person\\n", required: false, default: "world ", suggestions: [" a", "b "]}
      - {name: code, type: string, pattern: "[A-Z]+ ?", max_length: 12}
    messages:
      - {role: user, text: "Hello {{ who }} {{ code }}\\n\\n"}
      - {role: assistant, text: "\\n  indented reply  "}
      - {role: user, resource: {uri: "docs://inline", mime_type: text/plain, text: "embedded\\n"}}
resources:
  - uri: docs://trailing
    name: trailing
    title: "Guide "
    description: " about it "
    mime_type: text/markdown
    text: "# Guide\\n\\nLast line\\n"
templates:
  - uri_template: "items://{id}"
    name: items
    description: "Items\\n"
    body: "Item {{ id }}\\n"
    variables:
      - {name: id, description: "  the id\\n", suggestions: ["1 ", " 2"]}
"""
