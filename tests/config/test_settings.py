"""Production mode (DJANGO_DEBUG off) refuses to start without a real signing key."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEVELOPMENT_KEY = "insecure-development-key-set-DJANGO_SECRET_KEY-in-production"


def load_settings(**env: str) -> subprocess.CompletedProcess:
    """Import config.settings in a fresh interpreter with exactly these key/debug variables."""
    child = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SECRET_KEY", "DJANGO_DEBUG")}
    child.update(env)
    return subprocess.run([sys.executable, "-c", "import config.settings as s; print(s.SECRET_KEY)"],
                          cwd=ROOT, env=child, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("env", [
    {},
    {"DJANGO_DEBUG": "0"},
    {"DJANGO_SECRET_KEY": "", "DJANGO_DEBUG": "0"},
    {"DJANGO_SECRET_KEY": DEVELOPMENT_KEY},
    {"DJANGO_SECRET_KEY": "short-key"},
], ids=["unset", "debug-off", "empty", "development-key", "too-short"])
def test_production_mode_without_a_real_key_refuses_to_start(env):
    done = load_settings(**env)
    assert done.returncode != 0
    assert "ImproperlyConfigured: DJANGO_SECRET_KEY must be set to a random secret" in done.stderr


def test_production_mode_with_a_real_key_uses_it():
    key = "k" * 20 + "-a-real-random-secret-here"
    done = load_settings(DJANGO_SECRET_KEY=key, DJANGO_DEBUG="0")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == key


def test_debug_mode_falls_back_to_the_development_key():
    done = load_settings(DJANGO_DEBUG="1")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == DEVELOPMENT_KEY
