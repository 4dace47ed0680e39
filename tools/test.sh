#!/usr/bin/env bash
# Set up a virtualenv with afkak and its test extras (once), Java and Maven for Apache Kafka
# (the suite's reference broker), then run the whole test suite.
# Usage: bash tools/test.sh [pytest args...]
# With -m "not brokers" (the Clock suite) only what it needs is set up: the test and codec
# extras, no Java, Maven, Kafka jars or PySpark (a venv made for the whole suite serves too).
set -euo pipefail
cd "$(dirname "$0")/.."
FULL='test,gssapi,snappy,lz4,zstd,spark'
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
# MIT Kerberos: its headers build the gssapi package (afkak[gssapi]); its KDC, kadmin.local
# and kinit make the realm of the GSSAPI tests (afkak/test/brokers/kdc.py).
if ! $quick && { ! command -v krb5-config >/dev/null || [ ! -x /usr/sbin/krb5kdc ] || ! command -v kinit >/dev/null; }; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libkrb5-dev krb5-kdc krb5-admin-server krb5-user >/dev/null
  else
    echo "MIT Kerberos is needed for the GSSAPI tests (apt-get install libkrb5-dev krb5-kdc krb5-admin-server krb5-user)" >&2
  fi
fi
. tools/venv.sh "$extras"
# Resolve Kafka's jars once (cached in ~/.cache/afkak/kafka/<version>), before the
# test processes start: a failure shows here, with Maven's output.
if ! $quick && command -v java >/dev/null && command -v mvn >/dev/null; then
  # The newest 4.x, 3.9.1 (the last 3.x line), and 2.1.1: the oldest release afkak
  # supports, run in ZooKeeper mode (afkak/testing/kafka/pom-legacy.xml).
  "$VENV/bin/python" -c 'from afkak.testing.apache_kafka import resolve_classpath as r; print("Apache Kafka jars:", r(), r("3.9.1"), r("2.1.1"))'
  # The OAuth tests' identity provider (mock-oauth2-server), from Maven Central too.
  "$VENV/bin/python" -c 'from afkak.test.brokers.oauth_kafka import mock_oauth2_server_jars as m; print("mock-oauth2-server jars:", m())'
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
