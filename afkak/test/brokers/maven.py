"""Jars from Maven Central for test-side Java programs, copied once into the cache.

``mvn dependency:copy-dependencies`` of a POM into
``$XDG_CACHE_HOME/afkak/<name>/<version>``, under a lock (test processes run
in parallel), through a staging folder renamed when complete.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Mapping

from afkak.testing.apache_kafka import ApacheKafkaUnavailable, cache_root

_DONE = ".complete"
_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies"


def cached_jars(
    name: str,
    version: str,
    pom: str,
    properties: Mapping[str, str],
    complete: Callable[[str], bool],
) -> str:
    """The folder of *pom*'s runtime jars (``-Dkey=value`` for each of *properties*),
    resolved once; *complete* checks a staging folder.  Raises
    :exc:`ApacheKafkaUnavailable` when mvn is missing or fails."""
    root = os.path.join(os.path.dirname(cache_root()), name)
    directory = os.path.join(root, version)
    if os.path.exists(os.path.join(directory, _DONE)):
        return directory
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ApacheKafkaUnavailable("mvn is not installed")
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, f".{version}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(os.path.join(directory, _DONE)):
            return directory
        staging = tempfile.mkdtemp(prefix=f".{version}-", dir=root)
        argv = [
            mvn, "-B", "-q", "-f", pom, _PLUGIN, "-DincludeScope=runtime",
            f"-DoutputDirectory={staging}", *(f"-D{k}={v}" for k, v in properties.items()),
        ]  # fmt: skip
        result = subprocess.run(argv, capture_output=True, stdin=subprocess.DEVNULL)
        if result.returncode != 0 or not complete(staging):
            shutil.rmtree(staging, ignore_errors=True)
            output = (result.stdout + result.stderr).decode("utf-8", "replace")
            raise ApacheKafkaUnavailable(f"mvn failed ({result.returncode}): {output[-1000:]}")
        open(os.path.join(staging, _DONE), "w").close()
        shutil.rmtree(directory, ignore_errors=True)
        os.rename(staging, directory)
    return directory
