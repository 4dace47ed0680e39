#!/usr/bin/env bash
# README's first command: set up a virtualenv with afkak and the embedded broker (once), then run the
# main job (tools/main_job.py). Pass host:port (or set AFKAK_BOOTSTRAP) to use your own cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/venv.sh 'embedded,snappy,lz4,zstd'
exec "$VENV/bin/python" tools/main_job.py "$@"
