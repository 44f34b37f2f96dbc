"""One SparkSession per process, local by default, any --master for a cluster.

Quiet by default: no console stage bars (``spark.ui.showConsoleProgress``), the JVM's logging at ERROR
through a log4j2 configuration of our own, and the start-up lines a user cannot act on (the JVM's note on
incubator modules, Spark's notes on its default logging, Hadoop's native library) filtered out of the JVM's
standard error; anything else the JVM writes there still reaches the user.
"""
from __future__ import annotations

import os
import re
import sys
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

_SESSION = None

DRIVER_JVM_OPTIONS = (
    # no concurrent collector threads taking a core from the tasks and the JIT (10M cold: 35 s -> 32 s)
    "-XX:+UseParallelGC",
    # The JIT inlines methods of at most 100 bytecodes into hot code, not 325: a first check run compiles
    # about 1,900 methods with C2 (sorts, shuffles, the cache, some 200 of Spark's generated classes) on the
    # cores the tasks run on, and smaller compilations give the tasks those cores back sooner (10M events
    # on 2 cores, median of 4: cold 19.3 s -> 16.9 s, warm 11.4 s -> 10.7 s; 50, 80 and 150 were slower).
    "-XX:FreqInlineSize=100",
)
"""JVM options of the driver, which runs the tasks too in local mode."""


NOISE = re.compile(r"WARNING: Using incubator modules|Using Spark's default log4j profile|"
                   r"Setting default log level to|To adjust logging level use|NativeCodeLoader|^\s*$")
"""Lines of the JVM's standard error a user cannot act on."""
LOG4J2 = """status = error
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


def _log4j2_file() -> Path:
    path = Path(tempfile.gettempdir()) / "rmqc-spark-log4j2.properties"
    if not path.exists() or path.read_text() != LOG4J2:
        path.write_text(LOG4J2)
    return path


@contextmanager
def _jvm_stderr_filtered() -> Iterator[None]:
    """While the JVM starts, standard error is a pipe; the JVM keeps it, and a thread passes on what is not
    ``NOISE`` to the real standard error for as long as the JVM writes."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no real standard error (some test runners): nothing to filter
        yield
        return
    read_end, write_end = os.pipe()

    def forward() -> None:
        with os.fdopen(read_end, "r", errors="replace") as lines, os.fdopen(os.dup(saved), "w") as out:
            for line in lines:
                if not NOISE.search(line):
                    out.write(line)
                    out.flush()

    threading.Thread(target=forward, name="rmqc-spark-stderr", daemon=True).start()
    os.dup2(write_end, 2)
    os.close(write_end)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def spark_session(master: str = "local[2]", driver_memory: str | None = None, app: str = "rmqc-check",
                  conf: dict[str, str] | None = None):
    """The process's SparkSession (made on the first call; later calls return it). ``conf``: more settings
    (the benchmark's event log)."""
    global _SESSION
    if _SESSION is not None:
        return _SESSION
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", os.environ.get("PYSPARK_PYTHON", "python3"))
    from pyspark.sql import SparkSession

    builder = (SparkSession.builder.master(master).appName(app)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "8")
               .config("spark.sql.adaptive.enabled", "true")
               # a check run compiles about 170 classes: with the default 100 kept, every run compiled them
               # again and the JIT started over on each (10M events: 25 s -> 19 s a warm run)
               .config("spark.sql.codegen.cache.maxEntries", "1000")
               .config("spark.driver.extraJavaOptions",
                       " ".join((*DRIVER_JVM_OPTIONS, f"-Dlog4j.configurationFile={_log4j2_file()}")))
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.driver.bindAddress", "127.0.0.1"))
    if driver_memory:
        builder = builder.config("spark.driver.memory", driver_memory)
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    with _jvm_stderr_filtered():
        _SESSION = builder.getOrCreate()
    _SESSION.sparkContext.setLogLevel("ERROR")
    return _SESSION


def stop_session() -> None:
    global _SESSION
    if _SESSION is not None:
        _SESSION.stop()
        _SESSION = None
