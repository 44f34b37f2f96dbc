"""The release target (``release:V``): the keys a release is started with, its jars' resolution and what the
registry does not serve, its start-up errors, and the ``--target`` / ``--namesrv`` forms. The runs of the suites
against a real release are in ``tests/test_real_release.py``."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from adapters import release_jars
from adapters.base import TargetError
from adapters.release_cluster import ReleaseCluster, ReleaseStartError, choose_ports, log_tail, port_is_free
from adapters.release_plan import Ports, ReleasePlan, seconds_text, wire_ladder_ms
from adapters.targets import RELEASE, namesrv_option, parse_target
from reference_impl.rules import retry5x
from reference_impl.rules import transaction as tx_rules
from reference_impl.rules.delay import parse_delay_levels

ROOT = Path(__file__).resolve().parent.parent
PORTS = Ports(19876, 20911, 28081, 28080)


def plan(release: str = "5.3.3", scale: float = 0.2, **kw: object) -> ReleasePlan:
    return ReleasePlan(release, PORTS, scale, Path("/tmp/rmqc-plan"), **kw)  # type: ignore[arg-type]


def test_timing_is_compressed_through_the_releases_own_keys():
    p = plan("5.3.3", 0.2)
    broker = p.broker_conf()
    assert broker["transactionCheckInterval"] == tx_rules.check_interval_ms("5.3.3") // 5 == 6000  # TX-03: 30 s
    assert plan("5.0.0").broker_conf()["transactionCheckInterval"] == 12_000  # 60 s at 5.0.0
    # commit records written in 3 s batches from 5.1.0: compressed with the timeout, or a check doubles a commit
    assert broker["transactionOpBatchInterval"] == 600 < broker["transactionTimeOut"]
    assert "transactionOpBatchInterval" not in plan("5.0.0").broker_conf()
    assert broker["transactionTimeOut"] == 1200 and broker["reviveInterval"] == 200
    assert broker["timerPrecisionMs"] == 200 and broker["timerMaxDelaySec"] == 3 * 86_400 // 5
    # the broker parses whole seconds: levels 1 and 2 (1 s, 5 s) become 1 s, i.e. 5 s of spec time
    assert parse_delay_levels(broker["messageDelayLevel"]).ok
    assert p.effective_delay_levels_ms()[:4] == [5000, 5000, 10_000, 30_000]
    assert p.effective_delay_levels_ms()[-1] == 7_200_000
    proxy = p.proxy_json()
    assert proxy["minInvisibleTimeMillsForRecv"] == 2000 and proxy["maxDelayTimeMills"] == 86_400_000 // 5
    assert proxy["maxInvisibleTimeMills"] == 12 * 3_600_000 // 5  # RETRY-5X-09's upper bound, in the run's time
    assert proxy["grpcClientConsumerMaxLongPollingTimeoutMillis"] == 4000
    assert "grpcClientConsumerLongPollingTimeoutMillis" in plan("5.0.0").proxy_json()  # the 5.0.0 key
    assert "grpcClientConsumerMinLongPollingTimeoutMillis" not in plan("5.0.0").proxy_json()


def test_everything_binds_loopback_and_mixed_topics_are_allowed_where_a_key_guards_them():
    p = plan("5.3.3")
    assert p.namesrv_properties() == {"listenPort": 19876, "bindAddress": "127.0.0.1"}
    broker = p.broker_conf()
    assert broker["bindAddress"] == broker["brokerIP1"] == "127.0.0.1"
    assert broker["namesrvAddr"] == "127.0.0.1:19876" and broker["listenPort"] == 20911
    assert broker["enableMixedMessageType"] == "true"  # TOPIC-05: refused at creation from 5.1.4 without it
    assert "enableMixedMessageType" not in plan("5.0.0").broker_conf()
    assert "remotingListenPort" not in plan("5.0.0").proxy_json()


def test_the_5_0_proxy_serves_plaintext_through_its_own_tls_keys():
    """5.0.x serves gRPC over TLS only unless its test mode is off and no key is found (the SDKs connect in
    plaintext); later releases take both on one port and get no TLS key."""
    proxy = plan("5.0.0").proxy_json()
    assert proxy["grpcTlsTestModeEnable"] is False
    assert not Path(proxy["grpcTlsKeyPath"]).exists() and not Path(proxy["grpcTlsCertPath"]).exists()
    assert not any("Tls" in key for key in plan("5.1.4").proxy_json())


def test_a_users_broker_key_is_set_but_the_suites_still_expect_what_they_set():
    p = plan("5.3.3", broker_overrides=(("messageDelayLevel", "9s 9s 9s"),))
    assert p.broker_conf()["messageDelayLevel"] == "9s 9s 9s"
    assert p.keys_set()["broker"]["messageDelayLevel"] == "9s 9s 9s"  # the run summary records it
    assert p.effective_delay_levels_ms()[:3] == [5000, 5000, 10_000]  # what the harness set, not the override


def test_the_default_ladder_is_whole_protocol_seconds_and_an_explicit_one_must_be():
    ladder = wire_ladder_ms(0.2)
    assert ladder is not None and all(ms % 1000 == 0 and ms >= 1000 for ms in ladder)
    assert ladder[:4] == [1000, 1000, 2000, 6000] and len(ladder) == len(retry5x.DEFAULT_CUSTOMIZED_NEXT_MS)
    assert plan("5.3.3", 0.2).effective_ladder_ms()[:4] == [5000, 5000, 10_000, 30_000]
    assert wire_ladder_ms(0.2, [5000, 10_000]) == [1000, 2000]
    assert wire_ladder_ms(0.2, [1000]) is None  # 200 ms: the Python SDK reads whole seconds only
    timing = plan("5.3.3", 0.2).broker_timing()
    assert timing.revive_lag_ms == 10_000  # RETRY-5X-11's 2 wall seconds, in spec time
    assert plan("5.3.3", 1.0).broker_timing().revive_lag_ms == 2000


def test_seconds_text_writes_what_the_broker_parses():
    assert [seconds_text(ms) for ms in (1000, 60_000, 90_000, 3_600_000, 7_200_000)] == ["1s", "1m", "90s", "1h", "2h"]


def test_the_generated_pom_names_the_release_server_artifacts():
    pom = release_jars.pom_text("5.3.3", release_jars.wanted_components("5.3.3"))
    for artifact in ("rocketmq-namesrv", "rocketmq-broker", "rocketmq-proxy"):
        assert f"<artifactId>{artifact}</artifactId><version>5.3.3</version>" in pom
    assert release_jars.wanted_components("4.9.8") == ("namesrv", "broker")


def test_what_the_registry_does_not_serve_is_read_from_mavens_error():
    line = ("[ERROR] Failed to execute goal ... Could not find artifact org.apache.rocketmq:rocketmq-proxy:jar:5.1.4 "
            "in central (https://repo.maven.apache.org/maven2)")
    assert release_jars.missing_component(line) == "proxy"
    assert release_jars.missing_component("[ERROR] Could not transfer artifact ...: Connection refused") is None


def test_a_server_the_registry_serves_no_jar_of_is_built_from_the_releases_source_release():
    """4.9.8's name server and broker are not jars on Maven Central; its source release is, and is built
    unchanged: the broker's class is then on the release's class path, and the record says where it came from."""
    try:
        jars = release_jars.resolve("4.9.8")
    except release_jars.ReleaseUnavailable as exc:
        pytest.skip(f"not applicable: {exc}")
    assert jars.components == ("namesrv", "broker") and not jars.missing
    assert jars.built == {"namesrv": "rocketmq-all-4.9.8-source-release.zip",
                          "broker": "rocketmq-all-4.9.8-source-release.zip"}
    with zipfile.ZipFile(jars.lib / "rocketmq-broker-4.9.8.jar") as jar:
        assert "org/apache/rocketmq/broker/BrokerStartup.class" in jar.namelist()
    assert (jars.lib / "rocketmq-namesrv-4.9.8.jar").exists()


def test_no_maven_is_one_line_naming_it(monkeypatch, tmp_path):
    monkeypatch.setenv(release_jars.CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(release_jars.shutil, "which", lambda name: None if name == "mvn" else "/usr/bin/" + name)
    with pytest.raises(release_jars.ReleaseUnavailable, match="mvn is not installed"):
        release_jars.resolve("5.3.3")


def test_target_forms():
    assert parse_target("release:5.3.3").kind is RELEASE
    with pytest.raises(TargetError, match="a release such as 5.3.3"):
        parse_target("release:five")
    with pytest.raises(TargetError, match="expected release:V"):
        parse_target("release:")


def test_namesrv_given_twice_is_one_line_or_nothing():
    """``remoting://A --namesrv A`` runs; ``--namesrv B`` beside it is one line before any test (it used to be
    a TypeError in every test)."""
    remoting = parse_target("remoting://127.0.0.1:9876")
    assert namesrv_option(remoting, "127.0.0.1:9876") == {}
    with pytest.raises(TargetError, match="already names its name server"):
        namesrv_option(remoting, "127.0.0.1:9877")
    assert namesrv_option(parse_target("grpc://127.0.0.1:8081"), "127.0.0.1:9876") == {"namesrv": "127.0.0.1:9876"}
    with pytest.raises(TargetError, match="has its own name server"):
        namesrv_option(parse_target("release:5.3.3"), "127.0.0.1:9876")


def test_rmqc_run_with_the_namesrv_twice_says_so_in_one_line():
    run = subprocess.run([sys.executable, "-m", "rmqc.cli", "run", "--target", "remoting://127.0.0.1:1",
                          "--namesrv", "127.0.0.1:2"], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [
        "rmqc run: error: --namesrv 127.0.0.1:2: remoting://127.0.0.1:1 already names its name server "
        "(127.0.0.1:1); give one or the other"]


def test_ports_are_free_and_the_brokers_neighbours_too():
    """Each chosen port binds the way the release's servers bind it (``port_is_free``: with ``SO_REUSEADDR``, which
    Netty's server bootstrap sets, remoting/src/main/java/org/apache/rocketmq/remoting/netty/NettyRemotingServer.java
    ``#NettyRemotingServer.start@rocketmq-all-5.3.3``). Without it a port left in TIME_WAIT by a closed client
    connection of a run beside this one does not bind, though every server could listen on it."""
    ports = choose_ports(True, True)
    assert len(set(ports.all())) == 6
    assert [port for port in ports.all() if not port_is_free(port)] == []


def test_log_tail_names_the_newest_log(tmp_path):
    old, new = tmp_path / "a.log", tmp_path / "b.log"
    old.write_text("old\n")
    time.sleep(0.01)
    new.write_text("\n".join(f"line {i}" for i in range(30)) + "\n")
    tail = log_tail([old, new, tmp_path / "missing.log"], lines=3)
    assert tail.startswith(f"last lines of {new}") and tail.endswith("line 29") and "line 26" not in tail
    assert log_tail([tmp_path / "none.log"]) == "(no log was written)"


def real_jars(release: str) -> release_jars.ReleaseJars:
    """The release's jars, or not applicable with the reason (no Java or Maven, the registry unreachable)."""
    try:
        return release_jars.resolve(release)
    except release_jars.ReleaseUnavailable as exc:
        pytest.skip(f"not applicable: {exc}")


def test_a_taken_port_fails_within_the_timeout_naming_the_cause_and_the_log(tmp_path):
    """A name server that cannot bind its port exits: the error names the component, the exit and the log's
    last lines (Java's BindException), well within the readiness timeout, and nothing is left running."""
    jars = real_jars("5.3.3")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        ports = choose_ports(True, True)
        ports = Ports(taken.getsockname()[1], ports.broker, ports.grpc, ports.remoting_proxy)
        cluster = ReleaseCluster(ReleasePlan("5.3.3", ports, 0.2, tmp_path), jars)
        started = time.monotonic()
        with pytest.raises(ReleaseStartError) as failed:
            cluster.start()
    assert time.monotonic() - started < 60
    message = str(failed.value)
    assert "RocketMQ 5.3.3 namesrv exited with code" in message and "last lines of" in message
    assert "cause: java.net.BindException: Address already in use" in message
    assert cluster.components == []


def test_rmqc_broker_start_and_stop(tmp_path):
    """``rmqc broker start`` leaves a release running on loopback and says where; ``stop`` stops it."""
    real_jars("5.3.3")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = subprocess.run([sys.executable, "-m", "rmqc.cli", "broker", "start", "--release", "5.3.3", "--home",
                            str(tmp_path), "--time-scale", "0.2"], capture_output=True, text=True, cwd=ROOT,
                           timeout=240, env=env)
    try:
        assert start.returncode == 0, start.stderr[-2000:]
        assert "RocketMQ 5.3.3 ready in" in start.stderr and (tmp_path / "cluster.json").exists()
        import json

        from adapters.remoting_client import RemotingAdmin

        record = json.loads((tmp_path / "cluster.json").read_text())
        assert RemotingAdmin(record["namesrv"]).brokers() == [record["broker"]]
        keys = json.loads((tmp_path / "keys.json").read_text())
        assert keys["broker"]["transactionCheckInterval"] == 6000
    finally:
        stop = subprocess.run([sys.executable, "-m", "rmqc.cli", "broker", "stop", "--release", "5.3.3", "--home",
                               str(tmp_path)], capture_output=True, text=True, cwd=ROOT, timeout=60, env=env)
    assert stop.returncode == 0 and "stopped namesrv, proxy" in stop.stdout
    with pytest.raises(ConnectionRefusedError):  # nothing answers on the name server's port any more
        socket.create_connection(("127.0.0.1", int(record["namesrv"].rpartition(":")[2])), timeout=5).close()


def test_a_child_process_drives_the_cluster_its_parent_started(monkeypatch, tmp_path):
    """``rmqc soak``'s consumers run in processes of their own: ``RMQC_RELEASE_ATTACH`` hands them the running
    cluster's plan, so a ``release:V`` target there drives it instead of starting another; another release, or
    a malformed value, is not taken for it."""
    from adapters import release

    started = ReleaseCluster(ReleasePlan("5.3.3", PORTS, 0.2, tmp_path, True, (("reviveInterval", "20000"),)),
                             release_jars.ReleaseJars("5.3.3", tmp_path, ("namesrv", "broker", "proxy"), {}))
    monkeypatch.setattr(release, "jars_of", lambda r: started.jars)
    monkeypatch.setenv(release.ATTACH_ENV, release.attach_environment(started)[release.ATTACH_ENV])
    attached = release._attached("5.3.3")
    assert attached is not None and attached.plan == started.plan and not attached.components
    assert release._attached("5.5.0") is None
    monkeypatch.setenv(release.ATTACH_ENV, "{not json")
    with pytest.raises(TargetError, match="RMQC_RELEASE_ATTACH"):
        release._attached("5.3.3")


def test_the_release_record_of_a_source_built_release_is_a_valid_run_summary_part(tmp_path):
    """What ``_as_release`` records of a release built from its source release (4.9.8) is what the run summary's
    schema takes: a key it did not know failed the whole 4.9.8 run at its end."""
    import json
    from types import SimpleNamespace

    import jsonschema

    from adapters import release
    from reports.summary import SCHEMA, schema

    jars = release_jars.ReleaseJars("4.9.8", tmp_path, ("namesrv", "broker"), {},
                                    {"namesrv": "rocketmq-all-4.9.8-source-release.zip",
                                     "broker": "rocketmq-all-4.9.8-source-release.zip"})
    cluster = ReleaseCluster(ReleasePlan("4.9.8", PORTS, 0.2, tmp_path, False), jars)
    record = json.loads(json.dumps(release._as_release(SimpleNamespace(), cluster).release_record))
    assert record["built_from_source_release"] == jars.built
    part = schema(SCHEMA)["properties"]["timing"]["properties"]["release"]
    jsonschema.Draft202012Validator(part).validate(record)


def test_a_port_taken_before_the_release_bound_it_is_chosen_again(monkeypatch, tmp_path, capsys):
    """A port found free can be bound by another process before the release binds it (make test's other jobs start
    servers too: a CI run saw the 5.5.0 proxy exit with java.net.BindException). The release is started again on
    freshly chosen ports, at most PORT_TRIES times; any other start-up error is reported at once."""
    from adapters import release

    class Jars:
        def has(self, component: str) -> bool:
            return True

    tried: list[Ports] = []

    def start(self: ReleaseCluster) -> ReleaseCluster:
        tried.append(self.plan.ports)
        if len(tried) < 3:
            raise ReleaseStartError("RocketMQ 5.5.0 proxy exited with code 1 before it was ready; cause: "
                                    "java.net.BindException: Address already in use")
        return self

    monkeypatch.setattr(release, "jars_of", lambda version: Jars())
    monkeypatch.setattr(ReleaseCluster, "start", start)
    started = release.start_cluster("5.5.0", tmp_path, 0.2)
    assert len(tried) == 3 and len(set(tried)) == 3 and started.plan.ports == tried[-1]
    assert capsys.readouterr().err.count("taken meanwhile") == 2

    tried.clear()
    with pytest.raises(TargetError, match="Address already in use"):  # PORT_TRIES, then the cause
        monkeypatch.setattr(release, "PORT_TRIES", 2)
        release.start_cluster("5.5.0", tmp_path, 0.2)
    assert len(tried) == 2

    def refused(self: ReleaseCluster) -> ReleaseCluster:
        tried.append(self.plan.ports)
        raise ReleaseStartError("RocketMQ 5.5.0 broker exited with code 1; cause: java.lang.OutOfMemoryError")

    tried.clear()
    monkeypatch.setattr(ReleaseCluster, "start", refused)
    with pytest.raises(TargetError, match="OutOfMemoryError"):
        release.start_cluster("5.5.0", tmp_path, 0.2)
    assert len(tried) == 1
