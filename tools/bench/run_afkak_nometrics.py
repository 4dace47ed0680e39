"""afkak with its metrics recording switched off: the side-by-side "metrics off" rows.

Every sensor's ``record``/``record_at`` becomes a no-op in this worker process
(a fresh interpreter per run), so the difference from the ``afkak`` rows is
what recording the Java client's metrics costs (issue 25: within 5 %).
"""

from __future__ import annotations

from afkak.metrics import Sensor
from bench import run_afkak
from bench.common import Job, Result

VARIANTS = run_afkak.VARIANTS


def _off(self: Sensor, *args: object) -> None:
    return None


def run(job: Job) -> Result:
    Sensor.record = _off  # type: ignore[method-assign]
    Sensor.record_at = _off  # type: ignore[method-assign]
    return run_afkak.run(job)
