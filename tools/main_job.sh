#!/usr/bin/env bash
# README's first command: set up a virtualenv with afkak and the embedded broker, then run the
# main job (tools/main_job.py). Pass host:port (or set AFKAK_BOOTSTRAP) to use your own cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
VENV=${AFKAK_VENV:-.venv}
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install -q -e '.[embedded,snappy,lz4,zstd]'
exec "$VENV/bin/python" tools/main_job.py "$@"
