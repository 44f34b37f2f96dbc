"""A user's own pytest run, outside this repository, gets the plugin from the package's pytest11 entry
point: the --rmq-* options, the target fixture, the spec markers and the gate."""
from __future__ import annotations

import pytest

USER_TEST = '''
import pytest
from history.values import ListenerOutcome


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("RETRY-CONC-07")
def test_my_broker_redelivers_after_ten_seconds(target):
    target.create_topic("T")
    target.push_consumer_4x("G", "T", lambda v: ListenerOutcome.RECONSUME_LATER if v.delivery_attempt == 1
                            else ListenerOutcome.SUCCESS)
    target.producer().send("T", b"x", key="m")
    target.settle()
    times = [e.ts_ms for e in target.events() if e.kind == "DELIVER"]
    assert times[1] - times[0] == 10_000
'''


def test_a_users_pytest_run_has_the_plugin(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user=USER_TEST)
    pytester.makefile(".yaml", stale="target: mine\nexpectations:\n  - {id: RETRY-CONC-07, status: fail, reason: old}\n")
    help_text = pytester.runpytest_subprocess("--help").stdout.str()
    assert "--rmq-target" in help_text and "--rmq-expectations" in help_text and "--rmq-profile" in help_text
    passed = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--rmq-target", "reference",
                                           "--rmq-profile", "remoting-4.x")
    passed.assert_outcomes(passed=1)
    assert "RETRY-CONC: pass 07" in passed.stdout.str()
    gated = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--rmq-target", "reference",
                                          "--rmq-expectations", "stale.yaml")
    assert gated.ret == 1 and "unexpected pass RETRY-CONC-07" in gated.stdout.str()


UNRELATED_TEST = '''
from hypothesis import given, settings, strategies as st


@given(st.integers())
def test_unrelated(n):
    # Hypothesis's own profile ("default", or its own "ci" when the CI variable is set); none of the
    # project's profiles is loaded, nor even registered
    assert settings.get_current_profile_name() in ("default", "ci")
    assert not [name for name in settings._profiles if name.startswith("rmqc-")]
'''

LOADED_TEST = '''
from hypothesis import settings


def test_loaded():
    assert settings.get_current_profile_name() == "rmqc-ci"
    assert settings.default.deadline is None and settings.default.derandomize
    assert settings.default.max_examples == 100
'''


def test_an_unrelated_pytest_run_keeps_hypothesis_defaults(pytester: pytest.Pytester,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Installing the package registers the plugin in every pytest run of the environment; it loads
    none of the project's Hypothesis profiles unless the run asks for one."""
    monkeypatch.delenv("RMQC_HYPOTHESIS_PROFILE", raising=False)
    pytester.makepyfile(test_unrelated=UNRELATED_TEST)
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
    pytester.makepyfile(test_unrelated=LOADED_TEST)
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "--rmq-hypothesis-profile", "ci").assert_outcomes(passed=1)
    monkeypatch.setenv("RMQC_HYPOTHESIS_PROFILE", "ci")
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
