"""The timing model the retry-interval and delay checks judge by, read from ``spec/timing_model.yaml``
(every broker figure from the behaviour it names, at the log's release). Pure: no Spark here.

A wait is judged against ``[earliest, latest]``: inside is a pass; outside by no more than the noise band
is inconclusive; farther is a fail (issue 23)."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

from spec import versions
from spec.loader import SPEC_DIR, default_spec, load_yaml_validated

MODEL_FILE = SPEC_DIR / "timing_model.yaml"


@dataclass(frozen=True)
class Term:
    spec: str
    key: str
    ms: int
    why: str


@dataclass(frozen=True)
class WaitModel:
    """One kind of wait: what is added to its nominal value for the window's two edges."""

    name: str
    applies_to: str
    lateness: tuple[Term, ...]
    granularity: tuple[Term, ...]
    allowance_ms: int
    band_relative: float
    band_absolute_ms: int

    @property
    def late_ms(self) -> int:
        return sum(t.ms for t in self.lateness)

    @property
    def slack_ms(self) -> int:
        """From the earliest to the latest edge: the granularities and the processing allowance."""
        return sum(t.ms for t in self.granularity) + self.allowance_ms

    def window(self, nominal_ms: float) -> tuple[float, float]:
        earliest = nominal_ms + self.late_ms
        return earliest, earliest + self.slack_ms

    def band(self, nominal_ms: float) -> float:
        return nominal_ms * self.band_relative + self.band_absolute_ms

    def judge(self, observed_ms: float, nominal_ms: float) -> str:
        """``pass`` inside the window, ``noise`` within the band of it, else ``fail``."""
        low, high = self.window(nominal_ms)
        if low <= observed_ms <= high:
            return "pass"
        band = self.band(nominal_ms)
        return "noise" if low - band <= observed_ms <= high + band else "fail"

    def stated(self) -> dict[str, Any]:
        """The model as the check result states it."""
        return {"name": self.name, "applies_to": self.applies_to,
                "earliest": "nominal" + "".join(f" {'+' if t.ms >= 0 else '-'} {abs(t.ms)} ms ({t.spec} {t.key})"
                                                for t in self.lateness),
                "latest": "earliest" + "".join(f" + {t.ms} ms ({t.spec} {t.key})" for t in self.granularity)
                + f" + {self.allowance_ms} ms (processing allowance)",
                "noise_band": f"{self.band_relative:g} x nominal + {self.band_absolute_ms} ms",
                "terms": {"lateness": [asdict(t) for t in self.lateness],
                          "granularity": [asdict(t) for t in self.granularity]}}


@lru_cache(maxsize=None)
def _file() -> dict[str, Any]:
    data, _ = load_yaml_validated(MODEL_FILE, "timing-model.schema.json", id_key="name")
    return data


def _terms(entries: list[dict[str, Any]], release: str, time_scale: float = 1.0,
           wall_fixed: tuple[tuple[str, int], ...] = ()) -> tuple[Term, ...]:
    """The terms at ``release``; a key in ``wall_fixed`` (a real release's duration no configuration key
    compresses, in wall ms) counts its wall length, in the log's milliseconds at ``time_scale``."""
    spec = default_spec()
    fixed = dict(wall_fixed)
    out = []
    for e in entries:
        value = spec.get(e["spec"]).defaults_at(release).get(e["key"])
        if e["key"] in fixed:
            value = int(round(fixed[e["key"]] / max(time_scale, 1e-9)))
        if value is None:
            raise KeyError(f"{MODEL_FILE.name}: {e['spec']} has no default {e['key']!r} at {release}")
        out.append(Term(e["spec"], e["key"], int(e.get("sign", 1)) * int(value), e["why"]))
    return tuple(out)


def noise_band() -> tuple[float, int]:
    """The model's noise band: (relative part, absolute ms)."""
    band = _file()["noise_band"]
    return float(band["relative"]), int(band["absolute_ms"])


def processing_allowance_ms() -> int:
    """The model's processing allowance in wall milliseconds."""
    return int(_file()["processing_allowance_ms"])


@lru_cache(maxsize=None)
def wait_model(name: str, release: str = versions.LATEST, time_scale: float = 1.0,
               wall_fixed: tuple[tuple[str, int], ...] = ()) -> WaitModel:
    """The model of the wait ``name`` (``retry-5x``, ``retry-5x-fifo``, ``retry-4x``, ``delay-level``,
    ``timer``) at ``release``. The processing allowance is wall time: divided by ``time_scale`` it is in
    the server's milliseconds, which the log is written in; so are the ``wall_fixed`` terms (a real release's
    revive lag, RETRY-5X-11, is wall seconds at any scale: the soak's manifest says which)."""
    data = _file()
    entry = next((w for w in data["waits"] if w["name"] == name), None)
    if entry is None:
        raise KeyError(f"{MODEL_FILE.name} has no wait {name!r}; it has "
                       f"{', '.join(w['name'] for w in data['waits'])}")
    relative, absolute_ms = noise_band()
    return WaitModel(name, entry["applies_to"], _terms(entry["lateness"], release, time_scale, wall_fixed),
                     _terms(entry["granularity"], release, time_scale, wall_fixed),
                     int(round(processing_allowance_ms() / max(time_scale, 1e-9))), relative, absolute_ms)
