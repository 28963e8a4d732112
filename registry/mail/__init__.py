"""E-mail to people: who is told of which audited event, in their language, sent from an outbox.

    recipients.py  which audit actions are told to whom, as which kind (a person turns kinds off)
    queue.py       audit_recorded -> one outbox row per (event, recipient), in the event's transaction
    compose.py     subject, plain text and HTML in the recipient's language, with the link to act on
    sending.py     the worker's (and server threads') sending: lease, SMTP, retry with backoff
    checks.py      `manage.py check` warns when links in e-mail would point nowhere
"""
