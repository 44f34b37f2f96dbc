"""The conformance matrix as JUnit XML for CI systems: one test suite per run, one test case per behaviour."""
from __future__ import annotations

import xml.etree.ElementTree as ET

from .expectations import first_failing
from .matrix import Matrix


def render_junit(matrix: Matrix) -> str:
    """fail -> <failure>; expected failure, inconclusive, not applicable, not tested -> <skipped> with why."""
    root = ET.Element("testsuites", name="rocketmq-conformance")
    for i, run in enumerate(matrix.runs):
        s = run.summary
        suite = ET.SubElement(root, "testsuite", name=f"{s.get('target')} {' '.join(s.get('profiles', []))}",
                              id=str(i), timestamp=str(s.get("run_id", "")), time=str(s.get("elapsed_s", 0)))
        counts = {"tests": 0, "failures": 0, "skipped": 0}
        for behaviour, cells in matrix.rows:
            cell = cells[i]
            counts["tests"] += 1
            case = ET.SubElement(suite, "testcase", classname=behaviour.area, name=f"{behaviour.id} {behaviour.title}")
            first = first_failing(cell.tests)
            if cell.state == "fail":
                counts["failures"] += 1
                failure = ET.SubElement(case, "failure", message=(first or {}).get("reason", "fails")[:500])
                failure.text = "\n\n".join(f"{t['test']}\n{t.get('detail') or t['reason']}"
                                           for t in cell.tests if t["verdict"] == "fail")
            elif cell.state != "pass":
                counts["skipped"] += 1
                why = (f"expected failure: {cell.expectation['reason']}" if cell.state == "expected failure"
                       and cell.expectation else next((t["reason"] for t in cell.tests if t.get("reason")), cell.state))
                ET.SubElement(case, "skipped", message=f"{cell.state}: {why}"[:500])
            if cell.stale:
                ET.SubElement(case, "system-out").text = "unexpected pass: the expectation file says this fails"
        for key, value in counts.items():
            suite.set(key, str(value))
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
