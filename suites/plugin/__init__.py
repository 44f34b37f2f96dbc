"""The rocketmq-conformance pytest plugin, one module per concern (the way pytest splits its own):

- ``options``: the ``--rmq-*`` options, the target parsed and reached once, the run's state;
- ``hypothesis_profiles``: the project's Hypothesis profiles, registered and loaded only when asked;
- ``markers``: ``spec(*ids)``, ``profile(name)``, ``reference_rule``; unknown IDs are a usage error;
  allure labels;
- ``fixtures``: ``target``, ``make_target``, ``reference_for``, ``rmq_spec``;
- ``verdicts``: each test's verdict on the behaviours it checks (pass, fail, inconclusive, not applicable);
- ``gate``: the run summary, the expectation-file gate, the run folder, the terminal summary.

Registered by the ``pytest11`` entry point ``rocketmq_conformance``: a user's own pytest run gets the
options, fixtures and markers once the package is installed. The outcomes a test may end in besides
pass and fail are typed exceptions in ``history.outcomes`` (``NotApplicable``, ``Inconclusive``).
"""
from __future__ import annotations

pytest_plugins = [
    "suites.plugin.options",
    "suites.plugin.markers",
    "suites.plugin.fixtures",
    "suites.plugin.verdicts",
    "suites.plugin.gate",
]
