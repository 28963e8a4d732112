"""Static files through the served application: a path that leaves the static folders is a 404,
not a 500 with a traceback."""

from __future__ import annotations

import pytest
from channels.testing import HttpCommunicator


@pytest.mark.parametrize("path", ["/static/../x", "/static/admin/../../config/settings.py",
                                  "/static/..%2f..%2fconfig/settings.py"])
async def test_a_path_outside_the_static_folders_is_not_found(path, caplog):
    from config.asgi import application

    response = await HttpCommunicator(application, "GET", path).get_response(timeout=10)
    assert response["status"] == 404
    assert not [r for r in caplog.records if r.levelname == "ERROR"]


async def test_static_files_are_still_served():
    from config.asgi import application

    communicator = HttpCommunicator(application, "GET", "/static/admin/css/base.css")
    await communicator.send_input({"type": "http.request", "body": b""})
    start = await communicator.receive_output(10)  # the body follows in parts (a file response)
    assert start["type"] == "http.response.start" and start["status"] == 200
    await communicator.wait(10)
