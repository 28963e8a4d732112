from __future__ import annotations

import time

from webhooks.signing import sign, verify


def test_a_signature_verifies_with_the_same_secret_timestamp_and_body():
    now = int(time.time())
    signature = sign("s3cret", now, b'{"event":"x"}')
    assert signature.startswith("sha256=") and len(signature) == len("sha256=") + 64
    assert verify("s3cret", str(now), b'{"event":"x"}', signature)


def test_any_change_breaks_the_signature():
    now = int(time.time())
    signature = sign("s3cret", now, b"body")
    assert not verify("other", now, b"body", signature)
    assert not verify("s3cret", now, b"body!", signature)
    assert not verify("s3cret", now + 1, b"body", signature)
    assert not verify("s3cret", now, b"body", signature.replace("sha256=", "sha1="))
    assert not verify("s3cret", "not-a-number", b"body", signature)


def test_old_timestamps_are_refused_unless_tolerance_is_off():
    then = int(time.time()) - 3600
    signature = sign("s3cret", then, b"body")
    assert not verify("s3cret", then, b"body", signature)
    assert verify("s3cret", then, b"body", signature, tolerance=None)
