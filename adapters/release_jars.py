"""A RocketMQ release's server jars, resolved from Maven Central into a cache outside the repository.

One generated POM per release names the release's server artifacts (``rocketmq-namesrv``, ``rocketmq-broker``
and, from 5.0.0, ``rocketmq-proxy``); Maven copies them with their runtime dependencies into
``<cache>/<release>/lib``. The cache is ``$RMQC_RELEASE_CACHE`` or ``~/.cache/rocketmq-conformance/releases``;
nothing of RocketMQ's is ever written into the project. A resolved release is marked complete, so a second
run does not ask the registry again.

Where the registry serves no jar of a wanted artifact (the 4.9.8 name server and broker, the 5.1.4 proxy), the
release's own Apache source release, which Maven Central does serve (``rocketmq-all-<V>-source-release.zip``),
is fetched and built unchanged with Maven: the wanted modules and what they need, tests skipped, one compiler
setting given on the command line (``maven.compiler.source/target=1.8``: 4.9.x's client module asks for 1.6,
which Java 17 no longer compiles). ``ReleaseJars.built`` says which components came from it. Only where the source
release is not served either, or does not build, is the artifact recorded as missing with that reason, and the
parts that need it are not applicable. A registry that cannot be reached, or no Maven or Java, is a
``ReleaseUnavailable`` naming the cause in one line.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import zipfile
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
    built: dict[str, str] = field(default_factory=dict)
    """Component -> the source release it was built from, where the registry serves no jar of it."""

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


def _maven(mvn: str, args: list[str], cwd: Path | None = None) -> tuple[int, str]:
    try:
        run = subprocess.run([mvn, "-B", "-q", *args], capture_output=True, text=True, timeout=RESOLVE_TIMEOUT_S,
                             cwd=cwd)
    except subprocess.TimeoutExpired:
        raise ReleaseUnavailable(f"Maven did not finish within {RESOLVE_TIMEOUT_S:.0f} s "
                                 f"(is the registry reachable?): mvn {' '.join(args[:2])}") from None
    return run.returncode, run.stdout + run.stderr


def _cause_line(output: str) -> str:
    """Why Maven failed, in one line: an unreachable registry, else its first error, else its last line."""
    reason = _UNREACHABLE.search(output)
    errors = [line for line in output.splitlines() if line.startswith("[ERROR]") and line.strip() != "[ERROR]"]
    cause = reason.group(1) if reason else errors[0] if errors else (output.strip().splitlines() or ["(no output)"])[-1]
    return cause.strip()[:300]


SOURCE_RELEASE = "rocketmq-all-{release}-source-release.zip"
BUILD_SETTINGS = ("-DskipTests", "-Dmaven.test.skip=true", "-Drat.skip=true", "-Dcheckstyle.skip=true",
                  "-Dspotbugs.skip=true", "-Djacoco.skip=true", "-Dmaven.javadoc.skip=true",
                  "-Dmaven.source.skip=true", "-Dmaven.compiler.source=1.8", "-Dmaven.compiler.target=1.8")
"""The build of a source release: no tests, no checks, and the one compiler level Java 17 still compiles."""


def build_from_source(folder: Path, release: str, modules: Sequence[str], mvn: str, unserved: str,
                      progress: Callable[[str], None] = lambda line: None) -> str | None:
    """Builds ``modules`` of the release's Apache source release from Maven Central into ``folder/lib`` with
    their runtime dependencies (``unserved``: the artifact whose jar the registry lacks, for the progress line);
    None when done, else why not, in one line."""
    name = SOURCE_RELEASE.format(release=release)
    source = folder / "source"
    shutil.rmtree(source, ignore_errors=True)
    source.mkdir(parents=True)
    progress(f"RocketMQ {release}: Maven Central serves no jar of {artifact(unserved)}; building "
             f"{', '.join(map(artifact, modules))} from its source release {name}")
    code, output = _maven(mvn, ["-f", str(folder / "pom.xml"), f"{DEPENDENCY_PLUGIN}:copy",
                                f"-Dartifact={GROUP}:rocketmq-all:{release}:zip:source-release",
                                f"-DoutputDirectory={source}"])
    if code != 0:
        return f"Maven Central serves neither the jar nor the source release of {release}: {_cause_line(output)}"
    with zipfile.ZipFile(source / name) as archive:
        archive.extractall(source)
    roots = [p for p in source.iterdir() if p.is_dir() and (p / "pom.xml").exists()]
    if len(roots) != 1:
        return f"the source release {name} has no single project folder"
    lib = folder / "lib"
    code, output = _maven(mvn, [*BUILD_SETTINGS, "-pl", ",".join(modules), "-am", "package",
                                f"{DEPENDENCY_PLUGIN}:copy-dependencies", "-DincludeScope=runtime",
                                f"-DoutputDirectory={lib}"], cwd=roots[0])
    if code != 0:
        return f"the source release {name} did not build: {_cause_line(output)}"
    for module in modules:
        jar = roots[0] / module / "target" / f"{artifact(module)}-{release}.jar"
        if not jar.exists():
            return f"the source release {name} built no {jar.name}"
        shutil.copy2(jar, lib / jar.name)
    return None


def copy_artifacts(folder: Path, release: str, wanted: Sequence[str], required: Sequence[str] = (),
                   progress: Callable[[str], None] = lambda line: None
                   ) -> tuple[tuple[str, ...], dict[str, str], dict[str, str]]:
    """Maven copies ``rocketmq-<name>`` for each of ``wanted`` at ``release``, with their runtime dependencies,
    into ``folder/lib`` (a generated POM in ``folder``), once: a finished copy is recorded in
    ``folder/complete.json``. Where the registry serves no jar of one of them, all of ``wanted`` are built from
    the release's source release instead (one build, so no two copies of a class meet on the class path).
    What neither gives is dropped with that reason, unless it is ``required`` (then ``ReleaseUnavailable``); so
    is anything else Maven cannot do, in one line. Returns what was copied, what is missing with why, and what
    was built from the source release."""
    done = folder / "complete.json"
    record = json.loads(done.read_text()) if done.exists() else None
    # a record written before source releases were built ("built" absent) is tried again where it lacks parts
    if record is not None and ("built" in record or not record["missing"]):
        return (tuple(record.get("components") or record.get("artifacts") or ()), dict(record["missing"]),
                dict(record.get("built", {})))
    _tool("java")
    mvn = _tool("mvn")
    components, missing, built = list(wanted), {}, {}
    source_failure: str | None = None
    lib = folder / "lib"
    while components:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "pom.xml").write_text(pom_text(release, tuple(components)))
        shutil.rmtree(lib, ignore_errors=True)
        progress(f"resolving RocketMQ {release} ({', '.join(map(artifact, components))}) from Maven Central "
                 f"into {folder}")
        code, output = _maven(mvn, ["-f", str(folder / "pom.xml"), f"{DEPENDENCY_PLUGIN}:copy-dependencies",
                                    f"-DoutputDirectory={lib}", "-DincludeScope=runtime"])
        if code == 0:
            break
        gone = missing_component(output)
        if not gone or gone not in components:
            raise ReleaseUnavailable(f"RocketMQ {release}: Maven could not resolve the jars: {_cause_line(output)}")
        if source_failure is None:
            (folder / "pom.xml").write_text(pom_text(release, ()))
            shutil.rmtree(lib, ignore_errors=True)
            source_failure = build_from_source(folder, release, components, mvn, gone, progress) or ""
            if not source_failure:
                built = {c: SOURCE_RELEASE.format(release=release) for c in components}
                break
        reason = f"Maven Central does not serve {GROUP}:{artifact(gone)}:{release}, and {source_failure}"
        if gone in required:
            raise ReleaseUnavailable(f"RocketMQ {release} cannot run here: {reason}")
        missing[gone] = reason
        components.remove(gone)
    done.write_text(json.dumps({"components": components, "missing": missing, "built": built}, indent=2))
    return tuple(components), missing, built


def resolve(release: str, progress: Callable[[str], None] = lambda line: None) -> ReleaseJars:
    """The release's server jars, from the cache or from Maven Central (``progress`` gets a line while it
    downloads); the name server and the broker are required, the proxy is not."""
    versions.key(release)  # a malformed version is a ValueError before anything is asked of Maven
    folder = cache_root() / release
    components, missing, built = copy_artifacts(folder, release, wanted_components(release), ("namesrv", "broker"),
                                                progress)
    return ReleaseJars(release, folder / "lib", components, missing, built)


__all__ = ["ReleaseJars", "ReleaseUnavailable", "resolve", "cache_root", "wanted_components", "pom_text",
           "missing_component", "copy_artifacts", "build_from_source", "MAIN_CLASSES"]
