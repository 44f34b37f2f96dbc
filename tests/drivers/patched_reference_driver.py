"""The reference driver over a deliberately broken copy of the reference: ``python
tests/drivers/patched_reference_driver.py NAME`` runs ``tests/drivers/breaks/NAME.py`` first (it patches the
reference's rules or model in this process only), then serves the driver protocol as the reference driver
does. The harness and the suites, in their own process, keep the unbroken reference: they judge the broken
target as they would any vendor's (tests/test_broken_targets.py)."""
from __future__ import annotations

import runpy
import sys
from pathlib import Path

BREAKS = Path(__file__).resolve().parent / "breaks"


def main(argv: list[str]) -> int:
    if len(argv) != 2 or not (BREAKS / f"{argv[1]}.py").is_file():
        known = ", ".join(sorted(p.stem for p in BREAKS.glob("*.py")))
        sys.stderr.write(f"usage: patched_reference_driver.py NAME, one of: {known}\n")
        return 2
    runpy.run_path(str(BREAKS / f"{argv[1]}.py"))
    from drivers.reference_driver import main as serve

    return serve()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
