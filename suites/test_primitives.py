"""The reference's Java-compatible primitives against a real JVM and Guava (PRIM-01..04, FIFO-01..03, ALLOC-03).

Hypothesis draws strings and bucket counts; a JVM process answers with ``String.hashCode``, Guava's
``consistentHash`` and ``sipHash24``, the MD5 ring hash and the 4.x hash selector. Without ``javac``
or Guava (Debian's libguava-java) the test is not applicable, and says why.
"""
from __future__ import annotations

import hashlib
import shutil
import struct
import subprocess
import tempfile
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


def compiled(name: str) -> Path:
    """The classes of ``suites/java/<name>.java``, compiled once per version of its source: a folder in the
    temporary directory named by the source's hash (a mutation run starts the oracle once a mutant)."""
    source = SOURCE.with_name(f"{name}.java")
    digest = hashlib.sha256(source.read_bytes() + str(GUAVA.stat().st_size).encode()).hexdigest()[:16]
    classes = Path(tempfile.gettempdir()) / f"rmqc-jvm-oracle-{name}-{digest}"
    if not (classes / f"{name}.class").exists():
        building = Path(tempfile.mkdtemp(prefix=f"rmqc-jvm-oracle-{name}-"))
        subprocess.run(["javac", "-cp", str(GUAVA), "-d", str(building), str(source)], check=True, timeout=120,
                       capture_output=True)
        try:
            building.rename(classes)  # whole or not at all; a concurrent compile that won first is as good
        except OSError:
            shutil.rmtree(building, ignore_errors=True)
    return classes


class Jvm:
    """One oracle program (``suites/java/<name>.java``) compiled and running; a line in, a line out."""

    def __init__(self, name: str) -> None:
        classes = compiled(name)
        self.proc = subprocess.Popen(["java", "-Dfile.encoding=UTF-8", "-cp", f"{classes}:{GUAVA}", name],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

    def line(self, request: str) -> list[str]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(request + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline()
        if not answer:
            raise RuntimeError("the JVM oracle stopped answering")
        return answer.rstrip("\n").split("\t")

    def ask(self, text: str, buckets: int) -> tuple[int, int, int, int, int]:
        return tuple(int(x) for x in self.line(f"{text.encode('utf-8').hex()}\t{buckets}"))  # type: ignore[return-value]

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


def _start(name: str) -> Jvm:
    missing = [what for what, ok in (("javac", shutil.which("javac")), ("java", shutil.which("java")),
                                     (str(GUAVA), GUAVA.exists())) if not ok]
    if missing:
        raise NotApplicable(f"no JVM oracle: {', '.join(missing)} not found (install openjdk-17-jdk and libguava-java)")
    return Jvm(name)


@pytest.fixture(scope="module")
def jvm():
    oracle = _start("PrimitiveOracle")
    yield oracle
    oracle.close()


@pytest.fixture(scope="module")
def number_jvm():
    oracle = _start("NumberOracle")
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


NUMBER_PIECES = st.sampled_from(["0", "1", "7", "9", "00", "+", "-", ".", "e", "E", "x", "X", "p", "P", "a", "f",
                                 "F", "d", "D", "L", " ", "\t", "\x01", "NaN", "Infinity", "0x", "1.8", "p-3",
                                 "\u0663", "\uff17", "\U0001d7ce", "\u00b2", "true", "TRUE", "tRuE", "2147483648",
                                 "9223372036854775808", "e400", "e-400"])


@pytest.mark.spec("FILTER-06", "DELAY-02")
@settings(max_examples=400)
@given(text=st.one_of(st.lists(NUMBER_PIECES, max_size=6).map("".join), st.text(max_size=12)))
def test_java_number_parsing_agrees_with_the_jvm(number_jvm, text):
    """``Integer.valueOf``, ``Long.valueOf``, ``Double.valueOf`` and ``Boolean.valueOf`` on odd strings:
    any script's digits for the integers, hexadecimal and suffixes for the double, trimming only for it."""
    as_int, as_long, as_double, as_boolean = number_jvm.line(text.encode("utf-8").hex())

    def ours(parse):
        try:
            return str(parse())
        except ValueError:
            return "NFE"

    require(ours(lambda: primitives.java_parse_long(text, primitives.INT_MIN, primitives.INT_MAX)) == as_int,
            "FILTER-06", f"Integer.valueOf({text!r}) is {as_int}")
    require(ours(lambda: primitives.java_parse_long(text)) == as_long, "FILTER-06", f"Long.valueOf({text!r}) is {as_long}")
    require(ours(lambda: _raw_bits(primitives.java_parse_double(text))) == as_double, "FILTER-06",
            f"Double.valueOf({text!r}) has bits {as_double}")
    require(str(primitives.java_boolean_value_of(text)).lower() == as_boolean, "FILTER-06",
            f"Boolean.valueOf({text!r}) is {as_boolean}")


def _raw_bits(value: float) -> int:
    return struct.unpack(">q", struct.pack(">d", value))[0]
