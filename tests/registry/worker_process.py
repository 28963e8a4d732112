"""A registry worker in its own process, as a second `manage.py registry_worker` would be.

    python -m tests.registry.worker_process setup PUBLISHERS   # one release due now; mail to PUBLISHERS people
    python -m tests.registry.worker_process work SECONDS GO_FILE
        # wait for GO_FILE, then carry out due releases and send due mail (one message a claim),
        # again and again, for SECONDS
"""

from __future__ import annotations

import os
import sys
import time
from datetime import timedelta

import django


def setup(publishers: int) -> None:
    from django.utils import timezone

    from registry.authoring import drafts
    from registry.release import reviews
    from tests.factories import make_prompt, make_user, release

    editor = make_user("Editors", email="@")
    approver = make_user("Publishers", email="@")
    for _ in range(publishers - 1):
        make_user("Publishers", email="@")
    prompt = make_prompt("raced")
    release(prompt)
    data = drafts.draft_data(prompt)
    data["description"] = "v2"
    drafts.save_draft(prompt, data, acting_user=editor)
    review = reviews.request_publication(prompt, acting_user=editor, note="race me")
    reviews.approve(review, acting_user=approver, go_live_at=timezone.now() + timedelta(seconds=30))
    review.schedules.update(go_live_at=timezone.now() - timedelta(seconds=1))


def work(seconds: float, go_file: str) -> None:
    from registry.mail import sending
    from registry.release import schedules

    sending.BATCH = 1
    while not os.path.exists(go_file):
        time.sleep(0.01)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        schedules.run_due()
        sending.send_due()
        time.sleep(0.02)


def main(argv: list[str]) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    if argv[0] == "setup":
        setup(int(argv[1]))
    else:
        work(float(argv[1]), argv[2])


if __name__ == "__main__":
    main(sys.argv[1:])
