"""docs/sdks.md's minimal driver, taken out of the page and run: it speaks the protocol (every line checked
against the schema), sends through the Python 5.x SDK, answers its push consumer's listener through the
harness, and says NotApplicable for what it does not do. The docs cannot rot."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from serving import ROOT

from adapters.driver import VALIDATE_ENV, DriverTarget
from frontends.grpc.server import ReferenceServer, ServeConfig
from history.outcomes import NotApplicable
from history.values import ListenerOutcome

MARKER = "<!-- minimal-driver -->"


def minimal_driver(folder: Path) -> Path:
    page = (ROOT / "docs" / "sdks.md").read_text()
    block = page.split(MARKER, 1)[1].split("```python\n", 1)[1].split("\n```", 1)[0]
    path = folder / "docs_driver.py"
    path.write_text(block + "\n")
    return path


def test_the_minimal_driver_in_the_docs_runs(tmp_path, monkeypatch):
    monkeypatch.setenv(VALIDATE_ENV, "1")
    monkeypatch.setenv("HOME", str(tmp_path))  # the SDK's log folder
    server = ReferenceServer(port=0, time_scale=0.01, config=ServeConfig(topics=[{"name": "T", "queues": 2}])).start()
    target = None
    try:
        target = DriverTarget(f"{sys.executable} {minimal_driver(tmp_path)} --endpoint {server.address}", "grpc-5.x")
        assert target.process.validator is not None and target.capabilities == {"send.sync", "consumer.push5x"}
        assert target.client_library == ("minimal-python-driver", "0.1")
        with pytest.raises(NotApplicable, match="the minimal driver has no 'create_topic'"):
            target.create_topic("U")
        seen = []

        def listener(view):
            seen.append(view.key)
            return ListenerOutcome.SUCCESS if len(seen) > 1 else ListenerOutcome.RECONSUME_LATER

        target.push_consumer_5x("G", "T", listener)
        result = target.producer().send("T", b"hello", key="k1")
        assert result.status == "SEND_OK" and result.msg_id
        assert target.wait_until(lambda: any(e.kind == "CONSUME_OK" for e in target.events()), 60_000)
        kinds = [e.kind for e in target.events()]
        assert kinds[:2] == ["SEND_INVOKE", "SEND_OK"] and kinds.count("DELIVER") == 2 and "CONSUME_FAIL" in kinds
        assert seen == ["k1", "k1"]
        assert target.process.validator.checked > 10
    finally:
        if target is not None:
            target.close()
            target.process.stop()
        server.stop()
