#!/usr/bin/env bash
# Set up a virtualenv with afkak and its test extras (once), then run the whole test suite.
# Usage: bash tools/test.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/venv.sh 'test,snappy,lz4,zstd,spark'
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
