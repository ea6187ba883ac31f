#!/usr/bin/env bash
# Installs everything alphaloop needs on a fresh machine: a virtualenv, the CPU build of torch
# (pinned first, so no other requirement pulls a multi-GB CUDA build), the package with its dev
# extras at the exact versions of requirements.lock (a new upstream release cannot break a
# fresh clone), and chromium for PNG chart export and iproute2 for the Ray cluster tests when
# they are missing and we are root.
set -euo pipefail
PY=${PY:-python3}
VENV=${VENV:-.venv}

# Installs Debian package $1 ($2: what needs it) when we are root on Debian/Ubuntu; fails
# otherwise (or when apt-get does).
apt_install() {
  [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1 || return 1
  echo "installing $1 ($2)"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$1" >/dev/null
}

if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1 \
   && ! command -v google-chrome >/dev/null 2>&1; then
  if ! apt_install chromium "needed for PNG chart export"; then
    echo "warning: chromium not found and not installed (not root, or apt-get failed); PNG chart export will fail (HTML still works)." >&2
    echo "         install it with: sudo apt-get install chromium" >&2
  fi
fi

# The Ray cluster tests start real nodes in a network namespace that has only loopback
# (`ip netns`, from iproute2); without it they are skipped.
if ! command -v ip >/dev/null 2>&1; then
  if ! apt_install iproute2 "the Ray cluster tests' network namespace"; then
    echo "warning: ip (iproute2) not found and not installed (not root, or apt-get failed); the Ray cluster tests will be skipped." >&2
  fi
fi

[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install -q "torch==2.13.0"
"$VENV/bin/python" -m pip install -q -c requirements.lock -e ".[dev,dpo,alpaca,ray,docs]"
