#!/usr/bin/env bash
# Set up a virtualenv with afkak and its test extras (once), Java and Maven for Apache Kafka
# (the suite's reference broker), then run the whole test suite.
# Usage: bash tools/test.sh [pytest args...]
# With -m "not brokers" (the Clock suite) only what it needs is set up: the test and codec
# extras, no Java, Maven, Kafka jars or PySpark (a venv made for the whole suite serves too).
set -euo pipefail
cd "$(dirname "$0")/.."
FULL='test,snappy,lz4,zstd,spark'
quick=false
previous=
for arg in "$@"; do
  if [ "$previous" = "-m" ] && [ "$arg" = "not brokers" ]; then quick=true; fi
  previous=$arg
done
extras=$FULL
if $quick; then
  [ -f "${AFKAK_VENV:-.venv}/.afkak-installed-${FULL//,/-}" ] || extras='test,snappy,lz4,zstd'
# Apache Kafka runs on Java 17 and comes from Maven Central through mvn: installed with
# apt-get when missing (as root); without them the Kafka tests skip (and fail on CI).
elif ! command -v java >/dev/null || ! command -v mvn >/dev/null; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jdk-headless maven >/dev/null
  else
    echo "java and mvn are needed for the Apache Kafka tests (apt-get install openjdk-17-jdk-headless maven)" >&2
  fi
fi
. tools/venv.sh "$extras"
# Resolve Kafka's jars once (cached in ~/.cache/afkak/kafka/<version>), before the
# test processes start: a failure shows here, with Maven's output.
if ! $quick && command -v java >/dev/null && command -v mvn >/dev/null; then
  # The newest 4.x, and 3.9.1: the oldest Kafka line the version-negotiation tests use.
  "$VENV/bin/python" -c 'from afkak.testing.apache_kafka import resolve_classpath as r; print("Apache Kafka jars:", r(), r("3.9.1"))'
fi
set +e
# The compiled record codec must have been built (test_records_compiled checks).
AFKAK_REQUIRE_EXTENSIONS=1 "$VENV/bin/python" -m pytest -q "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "pytest collected no tests: the suite must not be empty" >&2
  exit 1
fi
exit "$rc"
