"""The SDK × server matrix over the six SDKs (Python 5.x, Node.js 5.x, Java 5.x, Go 5.x, C++ 4.x, Java 4.x), each
against the newest covered release and against ``rmqc serve``: ``rmqc report`` over those twelve runs renders in
headless Chromium, one column per SDK and server, the behaviours where they disagree first.

The runs are ``make real-matrix``'s (``bench/real_matrix.py --serve``: about an hour on the wall clock), read from
``$RMQC_MATRIX_RUNS`` (default ``reports/out/real-matrix``); where they are not there this test is not applicable,
naming the runs it misses, never passed. ``bench/real_matrix.py`` runs it over its own runs at the end."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_reports import CHROMIUM_FLAGS, chromium

pytestmark = pytest.mark.real_release

ROOT = Path(__file__).resolve().parent.parent
NEWEST = "5.5.0"
SDKS = {"python": "rocketmq-python-client", "nodejs": "rocketmq-client-nodejs", "java5x": "rocketmq-client-java",
        "go": "github.com/apache/rocketmq-clients/golang/v5", "cpp4x": "rocketmq-client-python",
        "java4x": "rocketmq-client"}
"""The folder suffix of each SDK's run (``bench/real_matrix.py``) and the SDK name its driver says in its hello."""


def _runs() -> list[Path]:
    base = Path(os.environ.get("RMQC_MATRIX_RUNS") or ROOT / "reports" / "out" / "real-matrix")
    folders = [base / f"{server}-{sdk}" for server in (NEWEST, "serve") for sdk in SDKS]
    missing = [f.name for f in folders if not (f / "summary.json").exists()]
    if missing:
        pytest.skip(f"not applicable: the real-matrix runs are not here ({base}: missing {', '.join(missing)}); "
                    "make real-matrix (bench/real_matrix.py --serve) makes them")
    return folders


def test_the_sdk_by_release_matrix_renders_with_the_disagreements_first(tmp_path):
    runs = _runs()
    out = tmp_path / "report"
    made = subprocess.run([sys.executable, "-m", "rmqc.cli", "report", *map(str, runs), "--out", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert made.returncode == 0, made.stderr[-2000:]
    matrix = json.loads((out / "matrix.json").read_text())
    names = [r["sdk"].rsplit(" ", 1)[0] for r in matrix["runs"]]
    assert names == list(SDKS.values()) * 2, names  # every SDK under the release, then under rmqc serve
    disagree = matrix["disagreements"]
    print(f"{len(matrix['runs'])} columns; the SDKs and servers disagree on {len(disagree)} behaviours: "
          f"{' '.join(disagree)}")
    assert disagree, "six SDKs on two servers that agree on every behaviour: the matrix shows nothing"

    browser = chromium()
    page = (out / "matrix.html").resolve().as_uri()
    shot = tmp_path / "matrix.png"
    subprocess.run([browser, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile-a'}", "--window-size=2400,2000",
                    f"--screenshot={shot}", page], capture_output=True, timeout=60, check=True)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    dom = subprocess.run([browser, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile-b'}", "--dump-dom", page],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    table = dom[dom.index('<table class="matrix">'):]
    heads = [h.rsplit(" ", 1)[0] for h in re.findall(r'<th class="sdk"[^>]*>([^<]+)<br>', table)]
    assert heads == list(SDKS.values()) * 2, heads
    rows = re.findall(r'<tr class="behaviour( disagree)?" id="row-([^"]+)"', table)
    assert len(rows) == len(matrix["behaviours"])
    flags = [bool(flag) for flag, _ in rows]
    assert flags == sorted(flags, reverse=True), "every disagreement row comes before the agreeing ones"
    assert [bid for flag, bid in rows if flag] == disagree
