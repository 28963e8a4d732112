"""`.ci/run` installs a CJK font for the browser tests, and a failed install never stops CI (issue 23).

Chinese pages render as boxes in a headless Chromium on a Debian without CJK fonts. The script is
run here with stand-ins for apt-get, dpkg-query and make on the PATH, so nothing is installed.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _stand_in(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


def _run_ci(tmp_path: Path, *, apt_works: bool, font_installed: bool) -> tuple[subprocess.CompletedProcess, str]:
    bin_dir, log = tmp_path / "bin", tmp_path / "calls.log"
    bin_dir.mkdir()
    _stand_in(bin_dir, "apt-get", f'echo "apt-get $*" >> {log}\nexit {0 if apt_works else 1}')
    _stand_in(bin_dir, "dpkg-query", "echo 'install ok installed'" if font_installed else "exit 1")
    _stand_in(bin_dir, "chromium", "exit 0")
    _stand_in(bin_dir, "make", f'echo "make $*" >> {log}')
    env = {**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin"}
    done = subprocess.run(["bash", str(ROOT / ".ci/run")], env=env, capture_output=True, text=True, timeout=60)
    return done, log.read_text() if log.exists() else ""


@pytest.mark.skipif(not Path("/bin/bash").exists(), reason="needs bash")
def test_ci_installs_the_cjk_font_before_the_tests(tmp_path):
    done, calls = _run_ci(tmp_path, apt_works=True, font_installed=False)
    assert done.returncode == 0, done.stderr
    assert "install -y -qq fonts-noto-cjk" in calls
    assert calls.index("fonts-noto-cjk") < calls.index("make test")


@pytest.mark.skipif(not Path("/bin/bash").exists(), reason="needs bash")
def test_a_failed_font_install_is_reported_and_the_tests_still_run(tmp_path):
    done, calls = _run_ci(tmp_path, apt_works=False, font_installed=False)
    assert done.returncode == 0, done.stderr
    assert "could not install fonts-noto-cjk" in done.stderr
    assert "make test" in calls


@pytest.mark.skipif(not Path("/bin/bash").exists(), reason="needs bash")
def test_an_installed_font_is_not_installed_again(tmp_path):
    done, calls = _run_ci(tmp_path, apt_works=True, font_installed=True)
    assert done.returncode == 0, done.stderr
    assert "fonts-noto-cjk" not in calls and "make test" in calls


def test_the_readme_says_what_a_server_and_a_screenshot_machine_need():
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert "a server needs none" in readme
    assert "apt-get install fonts-noto-cjk" in readme
