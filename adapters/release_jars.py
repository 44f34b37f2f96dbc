"""A RocketMQ release's server jars, resolved from Maven Central into a cache outside the repository.

One generated POM per release names the release's server artifacts (``rocketmq-namesrv``, ``rocketmq-broker``
and, from 5.0.0, ``rocketmq-proxy``); Maven copies them with their runtime dependencies into
``<cache>/<release>/lib``. The cache is ``$RMQC_RELEASE_CACHE`` or ``~/.cache/rocketmq-conformance/releases``;
nothing of RocketMQ's is ever written into the project. A resolved release is marked complete, so a second
run does not ask the registry again.

What the registry does not serve is a fact about the release, not an error of the run: an artifact that is
missing (``rocketmq-proxy`` 5.1.4, the 4.9.8 name server and broker) is recorded with that reason, and the
parts that need it are not applicable. A registry that cannot be reached, or no Maven or Java, is a
``ReleaseUnavailable`` naming the cause in one line.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from spec import versions

GROUP = "org.apache.rocketmq"
CACHE_ENV = "RMQC_RELEASE_CACHE"
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1"
RESOLVE_TIMEOUT_S = 900.0
MAIN_CLASSES = {
    "namesrv": "org.apache.rocketmq.namesrv.NamesrvStartup",
    "broker": "org.apache.rocketmq.broker.BrokerStartup",
    "proxy": "org.apache.rocketmq.proxy.ProxyStartup",
}
"""The entry point of each component (``bin/mqnamesrv``, ``bin/mqbroker``, ``bin/mqbroker --enable-proxy``
start these classes)."""


class ReleaseUnavailable(Exception):
    """The release cannot be had on this machine (no Maven, no Java, the registry unreachable): one line."""


@dataclass(frozen=True)
class ReleaseJars:
    """A resolved release: its jar folder and the components it can start."""

    release: str
    lib: Path
    components: tuple[str, ...]
    missing: dict[str, str] = field(default_factory=dict)
    """Component -> why it cannot start (the registry does not serve its artifact)."""

    @property
    def classpath(self) -> str:
        return str(self.lib / "*")

    def has(self, component: str) -> bool:
        return component in self.components


def cache_root() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "rocketmq-conformance" / "releases")


def wanted_components(release: str) -> tuple[str, ...]:
    """The components a release runs: a name server and a broker; from 5.0.0 the proxy too (local mode)."""
    return ("namesrv", "broker", "proxy") if versions.key(release) >= versions.key("5.0.0") else ("namesrv", "broker")


def artifact(component: str) -> str:
    return f"rocketmq-{component}"


def pom_text(release: str, components: tuple[str, ...]) -> str:
    """The generated POM: the release's server artifacts as dependencies (nothing built)."""
    deps = "".join(f"<dependency><groupId>{GROUP}</groupId><artifactId>{artifact(c)}</artifactId>"
                   f"<version>{release}</version></dependency>" for c in components)
    return ("<project xmlns=\"http://maven.apache.org/POM/4.0.0\"><modelVersion>4.0.0</modelVersion>"
            f"<groupId>rmqc.release</groupId><artifactId>rocketmq-{release}</artifactId><version>1</version>"
            f"<packaging>pom</packaging><dependencies>{deps}</dependencies></project>\n")


_NOT_FOUND = re.compile(r"(?:(?:Could not find artifact|Failure to find) org\.apache\.rocketmq:rocketmq-(\w+):(?:pom|jar):"
                        r"|org\.apache\.rocketmq:rocketmq-(\w+):(?:pom|jar):\S+ was not found in)")
_UNREACHABLE = re.compile(r"(Could not transfer artifact[^\n]*|Unknown host[^\n]*|Connection refused[^\n]*|"
                          r"Network is unreachable[^\n]*|connect timed out[^\n]*)")


def missing_component(maven_output: str) -> str | None:
    """The component whose artifact the registry said it does not have, if that is why Maven failed."""
    m = _NOT_FOUND.search(maven_output)
    return (m.group(1) or m.group(2)) if m else None


def _tool(name: str) -> str:
    path = shutil.which(name)
    if not path:
        raise ReleaseUnavailable(f"{name} is not installed: real RocketMQ releases need Java 17+ and Maven "
                                 "(apt-get install openjdk-17-jdk-headless maven)")
    return path


def copy_artifacts(folder: Path, release: str, wanted: Sequence[str], required: Sequence[str] = (),
                   progress: Callable[[str], None] = lambda line: None) -> tuple[tuple[str, ...], dict[str, str]]:
    """Maven copies ``rocketmq-<name>`` for each of ``wanted`` at ``release``, with their runtime dependencies,
    into ``folder/lib`` (a generated POM in ``folder``), once: a finished copy is recorded in
    ``folder/complete.json``. An artifact the registry does not serve is dropped with that reason, unless it is
    ``required`` (then ``ReleaseUnavailable``); so is anything else Maven cannot do, in one line. Returns what
    was copied and what is missing, with why."""
    done = folder / "complete.json"
    if done.exists():
        record = json.loads(done.read_text())
        return tuple(record.get("components") or record.get("artifacts") or ()), dict(record["missing"])
    _tool("java")
    mvn = _tool("mvn")
    components, missing = list(wanted), {}
    while components:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "pom.xml").write_text(pom_text(release, tuple(components)))
        lib = folder / "lib"
        shutil.rmtree(lib, ignore_errors=True)
        progress(f"resolving RocketMQ {release} ({', '.join(map(artifact, components))}) from Maven Central "
                 f"into {folder}")
        try:
            run = subprocess.run([mvn, "-B", "-q", "-f", str(folder / "pom.xml"),
                                  f"{DEPENDENCY_PLUGIN}:copy-dependencies", f"-DoutputDirectory={lib}",
                                  "-DincludeScope=runtime"], capture_output=True, text=True,
                                 timeout=RESOLVE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise ReleaseUnavailable(f"RocketMQ {release}: Maven did not resolve the jars within "
                                     f"{RESOLVE_TIMEOUT_S:.0f} s (is the registry reachable?)") from None
        output = run.stdout + run.stderr
        if run.returncode == 0:
            break
        gone = missing_component(output)
        if gone in required:
            raise ReleaseUnavailable(f"RocketMQ {release} cannot run here: Maven Central does not serve "
                                     f"{GROUP}:{artifact(str(gone))}:{release}")
        if gone and gone in components:
            missing[gone] = f"Maven Central does not serve {GROUP}:{artifact(gone)}:{release}"
            components.remove(gone)
            continue
        reason = _UNREACHABLE.search(output)
        last = reason.group(1) if reason else (output.strip().splitlines() or ["(no output)"])[-1]
        raise ReleaseUnavailable(f"RocketMQ {release}: Maven could not resolve the jars: {last.strip()[:300]}")
    done.write_text(json.dumps({"components": components, "missing": missing}, indent=2))
    return tuple(components), missing


def resolve(release: str, progress: Callable[[str], None] = lambda line: None) -> ReleaseJars:
    """The release's server jars, from the cache or from Maven Central (``progress`` gets a line while it
    downloads); the name server and the broker are required, the proxy is not."""
    versions.key(release)  # a malformed version is a ValueError before anything is asked of Maven
    folder = cache_root() / release
    components, missing = copy_artifacts(folder, release, wanted_components(release), ("namesrv", "broker"), progress)
    return ReleaseJars(release, folder / "lib", components, missing)


__all__ = ["ReleaseJars", "ReleaseUnavailable", "resolve", "cache_root", "wanted_components", "pom_text",
           "missing_component", "copy_artifacts", "MAIN_CLASSES"]
