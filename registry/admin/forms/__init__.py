"""Admin forms and inline formsets: validation at save, worded for non-programmers.

The checks themselves live in `registry.authoring.validation` (the services re-run them at publish);
these forms only decide where each message lands: next to the field it is about when there
is one, otherwise at the top of the inline it concerns. Warnings never block a save; they
are collected on `registry_warnings` and shown by the admin through the messages framework.

Its modules, by kind of form:

- `fields`     how fields behave on every edit form: labels, uploads, line breaks
- `entry`      the base of an entry's edit form (draft revision check) and what inline formsets share
- `prompts`    a prompt, its arguments and its messages
- `resources`  a resource, a resource template and its variables
- `snippets`   a snippet and its arguments
- `releases`   publishing, label moves, review requests and decisions, rollouts
"""
