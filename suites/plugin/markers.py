"""The markers: ``spec(*ids)`` names the behaviours a test checks, ``profile(name)`` the profile it runs
under, ``reference_rule`` a test of the reference's own pure rules. A test citing an unknown ID is a
usage error before anything runs; cited IDs, areas and profiles become allure labels."""
from __future__ import annotations

import pytest

from spec.loader import SpecError, default_spec


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "spec(*ids): spec behaviour IDs this test checks")
    config.addinivalue_line("markers", "profile(name): the profile this test runs under")
    config.addinivalue_line("markers", "reference_rule: checks the reference's own pure rules")


def spec_ids(item: pytest.Item) -> list[str]:
    """The behaviours a test checks: its ``spec`` markers; a parametrized case that names its own
    (``pytest.param(..., marks=pytest.mark.spec(...))``) checks only those, so when it fails it blames
    only them, not every behaviour the function cites."""
    callspec = getattr(item, "callspec", None)
    own = [m for m in getattr(callspec, "marks", ()) if m.name == "spec"]
    marks = own or list(item.iter_markers("spec"))
    ids: list[str] = []
    for mark in marks:
        ids.extend(str(a) for a in mark.args)
    return list(dict.fromkeys(ids))


def profile_of(item: pytest.Item) -> str | None:
    """The profile a test runs under: its ``profile`` parameter, else its ``profile`` marker."""
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "profile" in callspec.params:
        return str(callspec.params["profile"])
    marker = item.get_closest_marker("profile")
    return str(marker.args[0]) if marker is not None else None


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    try:
        spec = default_spec()
    except SpecError as exc:
        raise pytest.UsageError(str(exc)) from None
    unknown = [(item.nodeid, i) for item in items for i in spec_ids(item) if i not in spec.behaviours]
    if unknown:
        listing = "; ".join(f"{node} cites {i}" for node, i in unknown[:5])
        raise pytest.UsageError(f"tests cite unknown spec IDs: {listing}")
    try:
        import allure
    except ImportError:  # pragma: no cover - allure-pytest is a dependency
        return
    for item in items:
        ids = spec_ids(item)
        if not ids:
            continue
        item.add_marker(allure.label("spec_id", *ids))
        item.add_marker(allure.label("area", *sorted({spec.behaviours[i].area for i in ids})))
        profile = profile_of(item)
        if profile is not None:
            item.add_marker(allure.label("profile", profile))
