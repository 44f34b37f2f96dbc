"""A copy of the packaged behaviour files with one text replaced, for tests of how the loader and the
commands treat a changed spec."""
from __future__ import annotations

import shutil
from pathlib import Path

from spec.loader import BEHAVIOURS_DIR


def spec_copy(tmp_path: Path, file: str, old: str, new: str) -> Path:
    """``spec/behaviours`` copied under ``tmp_path``, with the first ``old`` in ``file`` replaced by ``new``."""
    spec_dir = tmp_path / "behaviours"
    shutil.copytree(BEHAVIOURS_DIR, spec_dir)
    text = (spec_dir / file).read_text()
    assert old in text, f"{file} has no {old!r}"
    (spec_dir / file).write_text(text.replace(old, new, 1))
    return spec_dir
