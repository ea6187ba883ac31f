#!/usr/bin/env bash
# Refreshes requirements.lock: the exact versions of everything alphaloop installs, resolved
# today from the ranges in pyproject.toml. It builds a throwaway virtualenv the way
# scripts/install.sh does (CPU torch first), but without the old lock, and freezes it.
# Run `make test` afterwards: the lock is only worth committing once the tests pass on it.
set -euo pipefail
PY=${PY:-python3}
LOCK_VENV=${LOCK_VENV:-.venv-lock}
OUT=${OUT:-requirements.lock}

rm -rf "$LOCK_VENV"
"$PY" -m venv "$LOCK_VENV"
trap 'rm -rf "$LOCK_VENV"' EXIT
"$LOCK_VENV/bin/python" -m pip install -q --upgrade pip
"$LOCK_VENV/bin/python" -m pip install -q "torch==2.13.0"
"$LOCK_VENV/bin/python" -m pip install -q -e ".[dev,dpo,alpaca,ray,docs]"
{
  echo "# Exact versions alphaloop's tests passed with; make install applies them as constraints."
  echo "# Refresh with 'make lock' (after changing dependencies in pyproject.toml), then 'make test'."
  echo "# Generated $(date -u +%Y-%m-%d) on Python $("$LOCK_VENV/bin/python" -c 'import platform; print(platform.python_version())')."
  # Local version labels (torch's "+cpu") are dropped: "==2.13.0" matches the CPU build and
  # the plain one alike, so the lock works wherever torch==2.13.0 can be installed.
  "$LOCK_VENV/bin/python" -m pip freeze --exclude-editable --all \
    | grep -v -E '^(-e |alphaloop( |=|@))' | sed -E 's/^([^=]+==[^+]+)\+[^ ;]*/\1/' | sort -f
} > "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
echo "wrote $OUT ($(grep -c '==' "$OUT") pinned packages)"
