#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages Tumble needs, only those missing; does nothing when all are there.
# Usage: scripts/ensure-system-packages.sh PACKAGE...
set -euo pipefail

missing=()
for pkg in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$pkg")
    fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
    echo "Tumble needs these system packages: ${missing[*]}" >&2
    echo "This is not a Debian/Ubuntu system (no apt-get): install them with your package manager." >&2
    exit 1
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        sudo=(sudo)
    else
        echo "Installing ${missing[*]} needs root, and sudo is not available: run as root." >&2
        exit 1
    fi
fi

echo "Installing missing system packages: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
