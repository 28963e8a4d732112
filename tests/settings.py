"""The test run's settings: the project's own, with a signing key.

The settings refuse to start in production mode (DJANGO_DEBUG off) without a real signing key,
and the suite runs in production mode. This gives the run, and every server or ``manage.py``
child process it starts (they inherit the environment), one random key unless the caller set one.
"""

import os
import secrets

os.environ.setdefault("DJANGO_SECRET_KEY", "test-run-" + secrets.token_urlsafe(40))

from config.settings import *  # noqa: F403

# Role fixtures create many users: a fast hasher keeps the suite's time on what it tests.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# E-mail is sent by the tests that test it (registry_worker, or the sender thread switched on):
# a thread sending in the background of every other test would race their database teardown.
REGISTRY = {**REGISTRY, "MAIL_DELIVERY_THREAD": False}  # noqa: F405
