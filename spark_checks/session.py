"""One SparkSession per process, local by default, any --master for a cluster."""
from __future__ import annotations

import os

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


def spark_session(master: str = "local[2]", driver_memory: str | None = None, app: str = "rmqc-check"):
    global _SESSION
    if _SESSION is not None:
        return _SESSION
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", os.environ.get("PYSPARK_PYTHON", "python3"))
    from pyspark.sql import SparkSession

    builder = (SparkSession.builder.master(master).appName(app)
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "8")
               .config("spark.sql.adaptive.enabled", "true")
               # a check run compiles about 170 classes: with the default 100 kept, every run compiled them
               # again and the JIT started over on each (10M events: 25 s -> 19 s a warm run)
               .config("spark.sql.codegen.cache.maxEntries", "1000")
               .config("spark.driver.extraJavaOptions", " ".join(DRIVER_JVM_OPTIONS))
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.driver.bindAddress", "127.0.0.1"))
    if driver_memory:
        builder = builder.config("spark.driver.memory", driver_memory)
    _SESSION = builder.getOrCreate()
    _SESSION.sparkContext.setLogLevel("ERROR")
    return _SESSION


def stop_session() -> None:
    global _SESSION
    if _SESSION is not None:
        _SESSION.stop()
        _SESSION = None
