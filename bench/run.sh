#!/usr/bin/env bash
# Throughput comparison against the official-SDK peer (see bench/run.py for options).
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python bench/run.py "$@"
