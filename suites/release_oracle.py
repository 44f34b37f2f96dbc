"""The released RocketMQ classes as the oracle of the reference's rules, release by release (issue 35).

For each covered release (``spec.versions.COVERED``) a generated POM names the release's artifacts
(``ARTIFACTS``); Maven copies them with their runtime dependencies from Maven Central into
``<cache>/<release>/lib``, where the cache is ``$RMQC_ORACLE_CACHE`` or
``~/.cache/rocketmq-conformance/oracle``: nothing of RocketMQ's is ever written into the project. An artifact
the registry serves no jar of at a release (the 4.9.8 broker, the 5.1.4 proxy) is built from the release's source
release on Maven Central (``adapters.release_jars.build_from_source``); what cannot be had is recorded with why, and
the rules that need it are not applicable at that release. ``suites/java/ReleaseOracle.java`` (the project's
own program, JDK classes only) is compiled once into the cache and started once per release per process; it
answers JSON-lines calls on the release's real classes (``Jvm.call``).

Without Java, Maven or the registry every oracle test is not applicable with that reason, never passed.
"""
from __future__ import annotations

import atexit
import hashlib
import json
import os
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.release_jars import ReleaseJars, ReleaseUnavailable, copy_artifacts
from history.outcomes import NotApplicable
from spec import versions

CACHE_ENV = "RMQC_ORACLE_CACHE"
SOURCE = Path(__file__).parent / "java" / "ReleaseOracle.java"
ARTIFACTS = ("common", "remoting", "client", "filter", "store", "broker", "proxy")
"""The modules whose classes the rules model (``rocketmq-<name>``); ``proxy`` exists from 5.0.0."""


def cache_root() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "rocketmq-conformance" / "oracle")


def wanted(release: str) -> tuple[str, ...]:
    return ARTIFACTS if versions.key(release) >= versions.key("5.0.0") else ARTIFACTS[:-1]


Release = ReleaseJars
"""One release's resolved jars: the artifacts it has (``components``) and, for what it lacks, why."""


Unavailable = ReleaseUnavailable
"""The oracle cannot run on this machine (no Java, no Maven, the registry unreachable): one line."""


def _tool(name: str) -> str:
    path = shutil.which(name)
    if not path:
        raise Unavailable(f"{name} is not installed: the release oracle needs Java 17+ and Maven")
    return path


def resolve(release: str, offline: bool = False) -> Release:
    """The release's jars from the cache, else from Maven Central (``offline``: the cache only), resolved as the
    release target resolves its server (``adapters.release_jars.copy_artifacts``)."""
    folder = cache_root() / release
    if offline and not (folder / "complete.json").exists():
        raise Unavailable(f"the jars of RocketMQ {release} are not in {folder} (run `make oracle`)")
    artifacts, missing, built = copy_artifacts(folder, release, wanted(release))
    if "proxy" not in wanted(release):
        missing = {**missing, "proxy": "the proxy exists from 5.0.0"}
    return Release(release, folder / "lib", artifacts, missing, built)


def compiled() -> Path:
    """``ReleaseOracle.class``, compiled once per version of its source into the cache."""
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]
    classes = cache_root() / "classes" / digest
    if not (classes / "ReleaseOracle.class").exists():
        javac = _tool("javac")
        building = classes.with_name(f"{digest}.building.{os.getpid()}")
        shutil.rmtree(building, ignore_errors=True)
        building.mkdir(parents=True)
        run = subprocess.run([javac, "-nowarn", "-d", str(building), str(SOURCE)], capture_output=True, text=True,
                             timeout=180)
        if run.returncode != 0:
            raise Unavailable(f"javac failed on {SOURCE.name}: {run.stderr.strip()[:300]}")
        try:
            building.rename(classes)
        except OSError:  # a concurrent compile won: as good
            shutil.rmtree(building, ignore_errors=True)
    return classes


@dataclass(frozen=True)
class Answer:
    """What the real method did: returned ``value`` or threw ``thrown`` (a class name) with ``message``."""

    value: Any = None
    thrown: str | None = None
    message: str | None = None
    code: Any = None

    @property
    def simple_thrown(self) -> str | None:
        return None if self.thrown is None else self.thrown.rsplit(".", 1)[-1]


class OracleError(RuntimeError):
    """The call itself was malformed (no such class or method) or the JVM stopped answering."""


class Jvm:
    """One release's oracle JVM: a JSON line in, a JSON line out."""

    def __init__(self, release: Release) -> None:
        self.release = release
        java = _tool("java")
        self.proc = subprocess.Popen(
            [java, "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-Xss4m", "-Dfile.encoding=UTF-8",
             "-Drocketmq.client.logRoot=" + str(cache_root() / "logs"), "-Duser.home=" + str(cache_root() / "home"),
             "-cp", f"{compiled()}:{release.lib}/*", "ReleaseOracle"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, encoding="utf-8",
            bufsize=1)
        self._lock = threading.Lock()
        self._classes: dict[tuple[str, ...], str] = {}
        self.calls = 0

    def has(self, artifact: str) -> bool:
        return self.release.has(artifact)

    def require(self, artifact: str, what: str) -> None:
        """NotApplicable when the release lacks the artifact ``what`` lives in."""
        if not self.has(artifact):
            reason = self.release.missing.get(artifact, f"rocketmq-{artifact} is not resolved")
            raise NotApplicable(f"{what} at {self.release.release}: {reason}")

    def call(self, cls: str | tuple[str, ...], method: str, *args: Any, types: tuple[str, ...] = (),
             target: Any = None, read: tuple[str, ...] = (), of: int | None = None) -> Answer:
        """``cls.method(*args)`` on the release's classes; ``cls`` may name the places a class has lived in
        across releases (the first the release has is taken). ``read`` reads getters or fields of the result,
        or with ``of`` of that argument (the result then under ``return``)."""
        if isinstance(cls, tuple):
            return self.call(self.resolve_class(cls), method, *args, types=types, target=target, read=read, of=of)
        request: dict[str, Any] = {"class": cls, "method": method, "types": list(types), "args": list(args)}
        if target is not None:
            request["target"] = target
        if read:
            request["read"] = list(read)
        if of is not None:
            request["of"] = of
        with self._lock:
            assert self.proc.stdin is not None and self.proc.stdout is not None
            self.proc.stdin.write(json.dumps(request, ensure_ascii=True) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
            self.calls += 1
        if not line:
            raise OracleError(f"the oracle JVM of {self.release.release} stopped answering")
        answer = json.loads(line)
        if "error" in answer:
            raise OracleError(f"{self.release.release}: {cls}.{method}: {answer['error']}")
        if "thrown" in answer:
            return Answer(thrown=answer["thrown"], message=answer["message"], code=answer.get("code"))
        value = answer["value"]
        if read and value is not None:  # the members read, written as the pairs of a map
            value = {name: member for name, member in value}
        return Answer(value=value)

    def resolve_class(self, names: tuple[str, ...]) -> str:
        """The first of ``names`` the release has (OracleError when none)."""
        known = self._classes.get(names)
        if known is None:
            for name in names:
                answer = self.call("java.lang.Class", "forName", name, types=("java.lang.String",))
                if answer.thrown is None:
                    known = self._classes[names] = name
                    break
            else:
                raise OracleError(f"{self.release.release} has none of {', '.join(names)}")
        return known

    def close(self) -> None:
        if self.proc.poll() is None:
            if self.proc.stdin:
                self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


_JVMS: dict[str, Jvm | Exception] = {}
_START = threading.Lock()


def jvm(release: str) -> Jvm:
    """The release's oracle JVM, started on first use and kept for the process (closed at exit); raises
    NotApplicable naming why when it cannot run here. Set ``RMQC_ORACLE_OFFLINE=1`` to use the cache only."""
    with _START:
        known = _JVMS.get(release)
        if known is None:
            try:
                known = Jvm(resolve(release, offline=os.environ.get("RMQC_ORACLE_OFFLINE") == "1"))
                atexit.register(known.close)
            except (Unavailable, OSError, subprocess.SubprocessError) as e:
                known = e
            _JVMS[release] = known
    if isinstance(known, Exception):
        raise NotApplicable(f"no release oracle for RocketMQ {release}: {known}")
    return known


# ---- values as the oracle reads them ------------------------------------------------------------------------

def jint(n: int) -> dict[str, int]:
    return {"int": n}


def jlong(n: int) -> dict[str, int]:
    return {"long": n}


def jlist(items: list[Any]) -> dict[str, list[Any]]:
    return {"list": items}


def jbytes(data: bytes) -> dict[str, str]:
    return {"bytes": data.hex()}


def main() -> int:
    """``python -m suites.release_oracle``: resolve every covered release and compile the oracle (`make oracle`)."""
    for release in versions.COVERED:
        try:
            r = resolve(release)
            compiled()
            extra = "; ".join(f"{a}: {why}" for a, why in r.missing.items())
            print(f"oracle {release}: {', '.join(r.components)}" + (f" (not applicable: {extra})" if extra else ""))
        except Unavailable as e:
            print(f"oracle {release}: not applicable: {e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
