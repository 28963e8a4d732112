"""Custom signals the registry sends across the app boundary.

registry_changed: sent after a transaction that changed served content has committed.
    sender: the ChangeBatch class
    batch:  a ChangeBatch listing what changed (change-log ids, entries, labels)
Receivers (the MCP endpoint's notifier) must not assume they run in any particular thread.

audit_recorded: sent synchronously by `services.write_audit`, INSIDE the writing transaction,
    right after the audit row was inserted (publish, label move, review requested/approved/
    rejected, override, rollout changed, draft edits...).
    sender: the AuditEntry class
    entry:  the AuditEntry just created (it has a primary key)
    review: the ReviewRequest the row is about (requested, decided, discussed, stale, superseded,
            scheduled, gone live...), or None
Receivers must be quick and must not do network I/O: defer side effects with
`transaction.on_commit` (a rolled-back transaction then discards them). An exception in a
receiver propagates and rolls the change back.

audits_recorded: sent by bulk writers (registry.portable.bulk) instead of one audit_recorded per
    row, INSIDE the writing transaction, right after the rows were inserted in bulk.
    sender: the AuditEntry class
    entries: the AuditEntry rows just created, in order (they have primary keys)
Receivers of audit_recorded that must see every audit row connect to both.

served_rows_bulk_created: sent by `QuerySet.bulk_create` of the models that decide what clients
    are served (registry.models.base.ServedQuerySet), which sends no post_save.
    sender: the model class
    objs:   the created instances
registry.release.receivers records the change from it.

credentials_changed: sent INSIDE the changing transaction when what lets a client be served may
    have changed: an MCP client saved (revoked, expired, re-labelled, re-scoped, given a new
    token) or deleted (registry.serving.credentials), an OAuth access token saved or deleted, a user
    deactivated, an OAuth connection deleted (oauth.credentials).
    sender: the model class whose row changed
    client_ids: McpClient primary keys whose open streams must be re-checked
    token_checksums: SHA-256 checksums of OAuth access tokens whose open streams must be re-checked
Receivers (the MCP endpoint, mcp_endpoint/notify/revocation.py) record it durably in the same
transaction and act after commit, in every process.

worker_pass: sent by `manage.py registry_worker` once per pass of its loop, OUTSIDE any
    transaction, after the registry's own due work (scheduled releases, e-mail).
    sender: None
Each receiver does the work of its app that is due now (webhooks: due deliveries) and returns
the seconds until its next item is due, or None when nothing is pending; the worker sleeps until
the earliest. A receiver that raises is logged and asked again on the next pass.
"""

from django.dispatch import Signal

registry_changed = Signal()
audit_recorded = Signal()
audits_recorded = Signal()
served_rows_bulk_created = Signal()
credentials_changed = Signal()
worker_pass = Signal()
