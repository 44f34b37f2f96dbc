"""A real RocketMQ release running on 127.0.0.1: its name server and its broker (with the proxy in local mode
from 5.0.0), started from the release's jars (``adapters.release_jars``) with the configuration of a
``ReleasePlan``, readiness checked through the admin codes, logs kept in the cluster's folder, every process
stopped by PID at exit, on Ctrl-C and with ``rmqc broker stop``.

A process that exits before it is ready, or that is not ready within ``READY_TIMEOUT_S``, is a
``ReleaseStartError`` naming the component, the cause and the last lines of its log.
"""
from __future__ import annotations

import atexit
import ctypes
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .release_jars import MAIN_CLASSES, ReleaseJars
from .release_plan import BROKER_HEAP, NAMESRV_HEAP, Ports, ReleasePlan, properties_text
from .remoting_client import RemotingClient, RemotingClientError

READY_TIMEOUT_S = float(os.environ.get("RMQC_RELEASE_READY_TIMEOUT_S", "120"))
STOP_GRACE_S = 15.0
LOG_TAIL_LINES = 15
JAVA_OPENS = (
    "--add-opens=java.base/java.lang=ALL-UNNAMED", "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED", "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED", "--add-exports=java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
)
"""What Java 17 needs opened for a RocketMQ server built for Java 8 (its own ``runbroker.sh`` adds the same for
Java 9+): memory-mapped files and direct buffers are released through these internals."""
LOGBACK = """<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>{path}</file>
    <encoder><pattern>%d{{HH:mm:ss.SSS}} %-5level [%thread] %logger{{0}} - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
"""
"""The project's own logback file for releases that read ``$ROCKETMQ_HOME/conf/logback_<component>.xml`` (5.0.0
and 4.x); later releases configure their logging from their own jars, under ``user.home/logs``."""
PIDS_FILE = "pids.json"


class ReleaseStartError(Exception):
    """A component did not start: the component, the cause and its log's last lines."""


def free_port(avoid: set[int] = set()) -> int:
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port not in avoid:
            return port


def port_is_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def choose_ports(with_proxy: bool, proxy_remoting: bool, brokers: int = 1) -> Ports:
    """Free loopback ports; each broker's with its two neighbours (``listenPort - 2`` and ``+ 1``) free too."""
    taken: set[int] = set()
    namesrv = free_port(taken)
    taken.add(namesrv)
    listens: list[int] = []
    for _ in range(brokers):
        for _ in range(200):
            broker = free_port(taken)
            if broker > 1026 and all(port_is_free(p) for p in (broker - 2, broker + 1)) and \
                    not {broker - 2, broker + 1} & taken:
                break
        else:
            raise ReleaseStartError("no free loopback port with free neighbours for the broker after 200 tries")
        taken |= {broker - 2, broker, broker + 1}
        listens.append(broker)
    grpc = free_port(taken) if with_proxy else 0
    taken.add(grpc)
    remoting = free_port(taken) if with_proxy and proxy_remoting else 0
    return Ports(namesrv, listens[0], grpc, remoting, tuple(listens[1:]))


def log_tail(paths: list[Path], lines: int = LOG_TAIL_LINES) -> str:
    """The last ``lines`` lines of the newest of ``paths`` that has any, for an error message."""
    for path in sorted((p for p in paths if p.exists() and p.stat().st_size), key=lambda p: -p.stat().st_mtime):
        text = path.read_text(errors="replace").rstrip().splitlines()[-lines:]
        return f"last lines of {path}:\n  " + "\n  ".join(text)
    return "(no log was written)"


_LAUNCHER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rmqc-release-launcher")
"""The one thread every component is started from. ``PR_SET_PDEATHSIG`` fires when the *thread* that forked the
child ends, not its process: a broker a nemesis restarted from its fault's timer thread got SIGTERM (exit 143) the
moment that thread ended. This thread lives as long as the process."""


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """The JVM gets SIGTERM when the process that started it dies (Linux ``PR_SET_PDEATHSIG``), so a killed
    test run leaves no broker behind."""
    os.setsid()
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)
    except OSError:
        pass


def cause_in(paths: list[Path]) -> str | None:
    """The deepest Java exception the logs show (the last ``Caused by:``, else the first exception line): why a
    component stopped, which the last lines of a log (its shutdown hooks) often do not say."""
    for path in paths:
        if not path.exists():
            continue
        lines = path.read_text(errors="replace").splitlines()
        caused = [l.strip() for l in lines if l.startswith("Caused by: ")]
        if caused:
            return caused[-1].removeprefix("Caused by: ")
        thrown = [l.strip() for l in lines if re.match(r"^[\w.$]+(Exception|Error)(: |$)", l.strip())]
        if thrown:
            return thrown[0]
    return None


@dataclass
class Component:
    name: str
    process: subprocess.Popen[bytes]
    out: Path
    logs: list[Path] = field(default_factory=list)
    launch: tuple[str, list[str], str] = ("", [], "")
    """(main class, arguments, heap): what starts it again on the same configuration and store (a nemesis's
    restart, ``ReleaseCluster.restart``)."""
    ready: Callable[[], bool] | None = None
    """Whether it answers as it did when first started."""

    def exited(self) -> int | None:
        return self.process.poll()

    def tail(self) -> str:
        cause = cause_in([self.out, *self.logs])
        return (f"cause: {cause}; " if cause else "") + log_tail([self.out, *self.logs])


class ReleaseCluster:
    """The processes of one running release."""

    def __init__(self, plan: ReleasePlan, jars: ReleaseJars, progress: Callable[[str], None] = lambda l: None,
                 detached: bool = False) -> None:
        self.plan, self.jars, self.progress, self.detached = plan, jars, progress, detached
        self.components: list[Component] = []
        self.started_s: float | None = None

    @property
    def home(self) -> Path:
        return self.plan.home

    def _write_configuration(self) -> dict[str, Path]:
        conf = self.home / "conf"
        conf.mkdir(parents=True, exist_ok=True)
        (self.home / "logs").mkdir(exist_ok=True)
        files = {"namesrv": conf / "namesrv.properties", "broker": conf / "broker.conf", "proxy": conf / "rmq-proxy.json"}
        files["namesrv"].write_text(properties_text(self.plan.namesrv_properties()))
        files["broker"].write_text(properties_text(self.plan.broker_conf()))
        if not self.plan.topology.single:
            for node in self.plan.nodes():
                files[node.label] = conf / f"{node.label}.conf"
                files[node.label].write_text(properties_text(self.plan.broker_conf(node)))
        if self.plan.with_proxy:
            files["proxy"].write_text(json.dumps(self.plan.proxy_json(), indent=2))
        for component in ("namesrv", "broker", "proxy", *(n.label for n in self.plan.nodes())):
            (conf / f"logback_{component}.xml").write_text(LOGBACK.format(path=self.home / "logs" / f"{component}.log"))
        (self.home / "keys.json").write_text(json.dumps(self.plan.keys_set(), indent=2))
        return files

    def _java(self, component: str, main: str, args: list[str], heap: str) -> Component:
        out = self.home / "logs" / f"{component}.out"
        if out.exists():  # a restart: the earlier run's output is kept beside
            out.rename(out.with_name(f"{component}.{int(time.time() * 1000)}.out"))
        env = {**os.environ, "ROCKETMQ_HOME": str(self.home), "RMQ_PROXY_HOME": str(self.home)}
        command = ["java", *heap.split(), *JAVA_OPENS, f"-Duser.home={self.home}", "-Djava.net.preferIPv4Stack=true",
                   "-cp", self.jars.classpath, main, *args]
        with out.open("wb") as sink:
            def launch() -> subprocess.Popen[bytes]:
                return subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        env=env, cwd=self.home,
                                        preexec_fn=os.setsid if self.detached else _die_with_parent)

            process = launch() if self.detached else _LAUNCHER.submit(launch).result()
        logs_dir = self.home / "logs"
        c = Component(component, process, out, launch=(main, args, heap), logs=[logs_dir / f"{component}.log",
                                                logs_dir / "rocketmqlogs" / f"{'proxy' if component == 'proxy' else component}.log",
                                                logs_dir / "rocketmqlogs" / "namesrv.log",
                                                logs_dir / "rocketmqlogs" / "broker.log"])
        self.components.append(c)
        self._record_pids()
        return c

    def _record_pids(self) -> None:
        (self.home / PIDS_FILE).write_text(json.dumps({c.name: c.process.pid for c in self.components}))

    def start(self) -> "ReleaseCluster":
        """Start the name server, then the broker (with the proxy in local mode when the plan has one); return
        once each answers, or stop what started and raise ``ReleaseStartError``."""
        if not self.plan.topology.single:
            return self._start_topology()
        started = time.monotonic()
        files = self._write_configuration()
        what = "name server, broker with the proxy in local mode" if self.plan.with_proxy else "name server, broker"
        self.progress(f"starting RocketMQ {self.plan.release} ({what}) on 127.0.0.1, folder {self.home}")
        if not self.detached:
            atexit.register(self.stop)
        try:
            self._start_namesrv(files)
            if self.plan.with_proxy:
                broker = self._java("proxy", MAIN_CLASSES["proxy"], ["-pm", "local", "-bc", str(files["broker"]),
                                                                     "-pc", str(files["proxy"]),
                                                                     "-n", self.plan.namesrv_address], BROKER_HEAP)
            else:
                broker = self._java("broker", MAIN_CLASSES["broker"], ["-c", str(files["broker"]),
                                                                       "-n", self.plan.namesrv_address], BROKER_HEAP)
            broker.ready = (lambda: self._broker_registered() and self._proxy_answers()) if self.plan.with_proxy \
                else self._broker_registered
            self._wait(broker, self._broker_registered, f"register {self.plan.broker_address} with the name server")
            if self.plan.with_proxy:
                self._wait(broker, self._proxy_answers, f"answer gRPC on {self.plan.grpc_address}")
        except BaseException:
            self.stop()
            raise
        self.started_s = time.monotonic() - started
        self.progress(f"RocketMQ {self.plan.release} ready in {self.started_s:.1f} s: name server "
                      f"{self.plan.namesrv_address}, broker {self.plan.broker_address}"
                      + (f", proxy gRPC {self.plan.grpc_address}" if self.plan.with_proxy else ""))
        return self

    def _start_namesrv(self, files: dict[str, Path]) -> None:
        namesrv = self._java("namesrv", MAIN_CLASSES["namesrv"], ["-c", str(files["namesrv"])], NAMESRV_HEAP)
        namesrv.ready = self._namesrv_answers
        self._wait(namesrv, self._namesrv_answers, "answer GET_BROKER_CLUSTER_INFO")

    def _start_topology(self) -> "ReleaseCluster":
        """The name server, each broker node a process of its own (masters, then slaves), and for 5.x the proxy in
        cluster mode, routing through the name server (issue 50)."""
        started = time.monotonic()
        files = self._write_configuration()
        plan = self.plan
        self.progress(f"starting RocketMQ {plan.release} as {plan.topology.text} ("
                      f"{', '.join(n.label + ' ' + n.role for n in plan.nodes())}"
                      f"{', the proxy in cluster mode' if plan.with_proxy else ''}) on 127.0.0.1, folder {self.home}")
        if not self.detached:
            atexit.register(self.stop)
        try:
            self._start_namesrv(files)
            for node in plan.nodes():
                broker = self._java(node.label, MAIN_CLASSES["broker"], ["-c", str(files[node.label]),
                                                                         "-n", plan.namesrv_address], BROKER_HEAP)
                address = plan.node_address(node)
                broker.ready = lambda address=address: self._node_registered(address)
                self._wait(broker, broker.ready, f"register {address} with the name server")
            if plan.with_proxy:
                proxy = self._java("proxy", MAIN_CLASSES["proxy"], ["-pm", "cluster", "-pc", str(files["proxy"]),
                                                                    "-n", plan.namesrv_address], BROKER_HEAP)
                proxy.ready = self._proxy_answers
                self._wait(proxy, self._proxy_answers, f"answer gRPC on {plan.grpc_address}")
        except BaseException:
            self.stop()
            raise
        self.started_s = time.monotonic() - started
        self.progress(f"RocketMQ {plan.release} {plan.topology.text} ready in {self.started_s:.1f} s: name server "
                      f"{plan.namesrv_address}, brokers {', '.join(plan.node_address(n) for n in plan.nodes())}"
                      + (f", proxy gRPC {plan.grpc_address}" if plan.with_proxy else ""))
        return self

    def component(self, name: str) -> Component:
        found = next((c for c in self.components if c.name == name), None)
        if found is None:
            raise KeyError(f"no component {name!r} in RocketMQ {self.plan.release}: "
                           f"{', '.join(c.name for c in self.components)}")
        return found

    def restart(self, name: str, wait: bool = True) -> Component:
        """Start component ``name`` again with its configuration and store, once its process has exited (a
        nemesis killed it); wait until it answers as it did."""
        old = self.component(name)
        if old.exited() is None:
            raise RuntimeError(f"{name} is still running (pid {old.process.pid}); a restart follows its end")
        self.components.remove(old)
        main, args, heap = old.launch
        new = self._java(name, main, args, heap)
        new.ready = old.ready
        if wait and new.ready is not None:
            self._wait(new, new.ready, "answer again after its restart")
        return new

    def _node_registered(self, address: str) -> bool:
        try:
            with RemotingClient(self.plan.namesrv_address, 2.0) as ns:
                if address not in ns.every_broker_address():
                    return False
            with RemotingClient(address, 2.0) as broker:
                broker.runtime_info()
            return True
        except RemotingClientError:
            return False

    def _wait(self, component: Component, ready: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            code = component.exited()
            if code is not None:
                raise ReleaseStartError(f"RocketMQ {self.plan.release} {component.name} exited with code {code} "
                                        f"before it was ready; {component.tail()}")
            if ready():
                return
            if time.monotonic() >= deadline:
                raise ReleaseStartError(f"RocketMQ {self.plan.release} {component.name} did not {what} within "
                                        f"{READY_TIMEOUT_S:.0f} s; {component.tail()}")
            time.sleep(0.25)

    def _namesrv_answers(self) -> bool:
        try:
            with RemotingClient(self.plan.namesrv_address, 2.0) as ns:
                ns.broker_addresses()
            return True
        except RemotingClientError:
            return False

    def _broker_registered(self) -> bool:
        try:
            with RemotingClient(self.plan.namesrv_address, 2.0) as ns:
                if self.plan.broker_address not in ns.broker_addresses():
                    return False
            with RemotingClient(self.plan.broker_address, 2.0) as broker:
                broker.runtime_info()
            return True
        except RemotingClientError:
            return False

    def _proxy_answers(self) -> bool:
        import grpc

        from .grpc import admin_call

        try:
            admin_call(self.plan.grpc_address, "Info", {}, 2.0)
        except grpc.RpcError as exc:
            return exc.code() == grpc.StatusCode.UNIMPLEMENTED  # a RocketMQ proxy: it serves, without our side channel
        return False  # something that answers rmqc's own side channel is not the release

    def stop(self) -> None:
        """SIGTERM each process group (the release's shutdown hooks run), SIGKILL what is left after the grace."""
        for c in reversed(self.components):
            stop_pid(c.process.pid, c.process)
        self.components.clear()
        pids = self.home / PIDS_FILE
        if pids.exists():
            pids.unlink()


def stop_pid(pid: int, process: subprocess.Popen[bytes] | None = None, grace_s: float = STOP_GRACE_S) -> bool:
    """Stop one started process (and its group); True when something was running."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return False
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if process is not None:
            if process.poll() is not None:
                return True
        else:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return True
        time.sleep(0.1)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    if process is not None:
        process.wait(5)
    return True


def stop_recorded(home: Path) -> list[str]:
    """Stop the processes a detached start recorded in ``home`` (``rmqc broker stop``): their names."""
    pids = home / PIDS_FILE
    if not pids.exists():
        return []
    stopped = [name for name, pid in json.loads(pids.read_text()).items() if stop_pid(int(pid))]
    pids.unlink()
    return stopped


def progress_to_stderr(line: str) -> None:
    print(f"rmqc: {line}", file=sys.stderr, flush=True)


__all__ = ["ReleaseCluster", "ReleaseStartError", "choose_ports", "stop_recorded", "progress_to_stderr", "log_tail"]
