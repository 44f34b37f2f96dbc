"""The reference's Java-compatible primitives against a real JVM and Guava (PRIM-01..04, FIFO-01..03, ALLOC-03).

Hypothesis draws strings and bucket counts; a JVM process answers with ``String.hashCode``, Guava's
``consistentHash`` and ``sipHash24``, the MD5 ring hash and the 4.x hash selector. Without ``javac``
or Guava (Debian's libguava-java) the test is not applicable, and says why.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from history.outcomes import NotApplicable
from reference_impl.rules import fifo, primitives
from suites.checks import require

pytestmark = pytest.mark.reference_rule
GUAVA = Path("/usr/share/java/guava.jar")
SOURCE = Path(__file__).parent / "java" / "PrimitiveOracle.java"


class Jvm:
    def __init__(self, workdir: Path) -> None:
        subprocess.run(["javac", "-cp", str(GUAVA), "-d", str(workdir), str(SOURCE)], check=True, timeout=120,
                       capture_output=True)
        self.proc = subprocess.Popen(["java", "-Dfile.encoding=UTF-8", "-cp", f"{workdir}:{GUAVA}", "PrimitiveOracle"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

    def ask(self, text: str, buckets: int) -> tuple[int, int, int, int, int]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{text.encode('utf-8').hex()}\t{buckets}\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline()
        if not answer:
            raise RuntimeError("the JVM oracle stopped answering")
        return tuple(int(x) for x in answer.split("\t"))  # type: ignore[return-value]

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


@pytest.fixture(scope="module")
def jvm(tmp_path_factory: pytest.TempPathFactory):
    missing = [what for what, ok in (("javac", shutil.which("javac")), ("java", shutil.which("java")),
                                     (str(GUAVA), GUAVA.exists())) if not ok]
    if missing:
        raise NotApplicable(f"no JVM oracle: {', '.join(missing)} not found (install openjdk-17-jdk and libguava-java)")
    oracle = Jvm(tmp_path_factory.mktemp("jvm"))
    yield oracle
    oracle.close()


@pytest.mark.spec("PRIM-01", "PRIM-02", "PRIM-03", "PRIM-04", "FIFO-01", "FIFO-02", "FIFO-03", "ALLOC-03")
@settings(max_examples=300)
@given(text=st.text(max_size=40), buckets=st.integers(1, 1024))
def test_primitives_agree_with_the_jvm(jvm, text, buckets):
    java_hash, consistent, sip, ring, selected = jvm.ask(text, buckets)
    require(primitives.java_string_hash(text) == java_hash, "PRIM-01", f"hashCode({text!r})")
    require(primitives.guava_consistent_hash(java_hash, buckets) == consistent, "PRIM-02",
            f"consistentHash({java_hash}, {buckets})")
    require(fifo.proxy_queue_for_group(text, buckets) == consistent, "FIFO-01", f"proxy queue for {text!r}")
    require(primitives.siphash24(text.encode("utf-8")) == sip, "PRIM-03", f"sipHash24({text!r})")
    require(primitives.md5_ring_hash(text) == ring, "PRIM-04", f"MD5 ring hash of {text!r}")
    require(fifo.select_queue_by_hash_4x(java_hash, buckets) == selected, "FIFO-03", f"4.x selector for {text!r}")
