"""Two `registry_worker` processes at once: one scheduled release moves the label once, each e-mail
is sent once (a SQLite file, and PostgreSQL where TEST_POSTGRES_URL is set)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections import Counter

import pytest

from tests.registry.smtp_server import SmtpServer
from tests.webhooks.test_delivery import ROOT, _child, _database_urls, worker_database  # noqa: F401  (fixture)


class SlowRecorder:
    """Wraps the server's recorder: each message takes a while, so both workers are busy at once."""

    def __init__(self, inner) -> None:
        self.inner = inner

    async def handle_DATA(self, server, session, envelope) -> str:
        await asyncio.sleep(0.2)
        return await self.inner.handle_DATA(server, session, envelope)


@pytest.mark.parametrize("worker_database", _database_urls(), indirect=True)
def test_two_worker_processes_release_once_and_send_each_mail_once(worker_database, tmp_path):  # noqa: F811
    smtp = SmtpServer()
    smtp.recorder_slow = SlowRecorder(smtp.recorder)  # type: ignore[attr-defined]
    from aiosmtpd.controller import Controller

    smtp.controller = Controller(smtp.recorder_slow, hostname="127.0.0.1", port=smtp.port)  # type: ignore[attr-defined]
    smtp.controller.start()
    try:
        env = dict(os.environ, DATABASE_URL=worker_database, DJANGO_SETTINGS_MODULE="config.settings",
                   EMAIL_HOST="127.0.0.1", EMAIL_PORT=str(smtp.port), REGISTRY_PUBLIC_URL="https://r.example")
        env.pop("EMAIL_BACKEND", None)
        _child(env, "manage.py", "migrate", "--noinput", "-v0")
        _child(env, "-m", "tests.registry.worker_process", "setup", "6")
        go = tmp_path / "go"
        workers = [subprocess.Popen([sys.executable, "-m", "tests.registry.worker_process", "work", "6", str(go)],
                                    cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                   for _ in range(2)]
        time.sleep(0.5)
        go.touch()
        for worker in workers:
            _out, err = worker.communicate(timeout=120)
            assert worker.returncode == 0, err
        checked = _child(env, "manage.py", "shell", "-c", CHECK)
    finally:
        smtp.stop()
    moves, live, production, pending = checked.stdout.split()[-4:]
    assert (moves, live, production, pending) == ("1", "1", "2", "0")
    sent = Counter((str(m["To"]), str(m["Subject"])) for m in smtp.messages)
    assert sent and max(sent.values()) == 1, sent  # no message twice
    # the review request (to the 6 publishers), the approval (requester), gone live (requester and approver)
    assert len(sent) == 6 + 1 + 2, sorted(sent)


CHECK = """
from registry.models import AuditEntry, MailMessage, PromptLabel
print("counts", AuditEntry.objects.filter(action="label_move", to_version=2).count(),
      AuditEntry.objects.filter(action="release_went_live").count(),
      PromptLabel.objects.get(entry__name="raced", name="production").version.number,
      MailMessage.objects.exclude(status="sent").count())
"""
