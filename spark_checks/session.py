"""One SparkSession per process, local by default, any --master for a cluster."""
from __future__ import annotations

import os

_SESSION = None


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
               # no concurrent collector threads taking a core from the tasks and the JIT (10M cold: 35 s -> 32 s)
               .config("spark.driver.extraJavaOptions", "-XX:+UseParallelGC")
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
