# Sourced by tools/main_job.sh and tools/test.sh: make "$VENV" (default .venv) hold afkak
# installed (editable) with the extras in "$1", installing only when that has not been done
# since the build files last changed.  Later runs reuse it and start at once.
# Usage: . tools/venv.sh 'embedded,snappy'   (sets VENV; run from the checkout's root)
afkak_venv() {
  local extras=$1 py=${PYTHON:-python3} stamp state
  VENV=${AFKAK_VENV:-.venv}
  stamp="$VENV/.afkak-installed-${extras//,/-}"
  state=$({ cat pyproject.toml setup.py setup.cfg; cat afkak/records/*.pyx 2>/dev/null || true; } | cksum)
  if [ -x "$VENV/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$state" ]; then
    return 0
  fi
  echo "afkak: installing afkak[$extras] into $VENV (once: later runs reuse it; about a minute)..." >&2
  [ -x "$VENV/bin/python" ] || "$py" -m venv "$VENV"
  # pip's and setuptools' output goes to a log, shown only if the install fails.
  if ! { "$VENV/bin/python" -m pip install -q --upgrade pip &&
         "$VENV/bin/python" -m pip install -q -e ".[$extras]"; } >"$VENV/install.log" 2>&1; then
    cat "$VENV/install.log" >&2
    echo "afkak: the install failed (log above, and in $VENV/install.log)" >&2
    return 1
  fi
  echo "$state" >"$stamp"
  echo "afkak: installed" >&2
}
afkak_venv "$1"
