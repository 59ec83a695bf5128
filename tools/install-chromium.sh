#!/usr/bin/env bash
# Install Debian's chromium (and a font) for the dashboard's headless browser test.
# Idempotent and quiet: does nothing when chromium is already on PATH; prints apt's log only on failure.
set -euo pipefail

if command -v chromium >/dev/null 2>&1; then
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
export DEBIAN_FRONTEND=noninteractive
if ! { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core; } >"$log" 2>&1; then
    cat "$log" >&2
    echo "install-chromium.sh: apt-get could not install chromium" >&2
    exit 1
fi
command -v chromium >/dev/null 2>&1 || { echo "install-chromium.sh: chromium still not on PATH" >&2; exit 1; }
