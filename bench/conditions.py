"""The conditions a benchmark ran under, in words a reader can compare with their own machine.

A throughput figure without them is not reproducible: on this project's 2-core machine, shared
with other work, the same command has given figures 5x apart. bench/run.py prints these beside
its table (and the README carries them with the figures): the machine (cores, CPU model), the
load average before and after, what else used the CPU while it ran, the date and the versions.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import time

VERSIONED = ("django", "channels", "uvicorn", "uvloop", "httptools", "daphne", "twisted", "mcp")


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def load_average() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def versions() -> str:
    found = [f"Python {platform.python_version()}"]
    for name in VERSIONED:
        try:
            found.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            continue
    return ", ".join(found)


def busy_processes(exclude: set[int], threshold: float = 5.0, limit: int = 6) -> list[str]:
    """Other processes using more than ``threshold`` % of a core over a 2 s sample (``top``-like,
    from /proc), as "name NN%" with the command's script name: what ran beside the bench."""

    def ticks() -> dict[int, tuple[int, str]]:
        out: dict[int, tuple[int, str]] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parts = f.read().rsplit(")", 1)[1].split()
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
            except OSError:
                continue
            out[int(entry)] = (int(parts[11]) + int(parts[12]), _label(argv))
        return out

    before = ticks()
    time.sleep(2.0)
    after = ticks()
    hz = os.sysconf("SC_CLK_TCK")
    usage = []
    for pid, (t1, label) in after.items():
        if pid in exclude or pid == os.getpid() or pid not in before:
            continue
        pct = 100 * (t1 - before[pid][0]) / hz / 2.0
        if pct >= threshold:
            usage.append((pct, label))
    usage.sort(reverse=True)
    return [f"{label} {pct:.0f}%" for pct, label in usage[:limit]]


def _label(argv: list[str]) -> str:
    """A short name for a process: the script or module it runs, not its whole command line."""
    if not argv:
        return "?"
    if "-c" in argv[1:2]:
        return f"{os.path.basename(argv[0])} -c"
    words = [a for a in argv[1:] if not a.startswith("-")]
    if "-m" in argv[1:]:
        module = argv[argv.index("-m") + 1] if argv.index("-m") + 1 < len(argv) else "?"
        return f"{os.path.basename(argv[0])} -m {module}"
    if os.path.basename(argv[0]).startswith("python") and words:
        return os.path.basename(words[0])
    return os.path.basename(argv[0])


def machine() -> str:
    return f"{os.cpu_count()} cores ({cpu_model()})"


def today() -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())

