"""Where the client matrix finds things: its drivers, the repository, the fixtures, the install cache.

Shared by the matrix's modules (run_matrix.py and the matrix_*.py beside it), which import each
other by name: run as a script, this folder is the first entry of sys.path.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PY = sys.executable
CACHE = Path(os.environ.get("CLIENT_MATRIX_CACHE", "/tmp/mcp-client-matrix"))
FIXTURE = ROOT / "tests" / "fixtures" / "conformance.yaml"
