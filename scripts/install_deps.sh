#!/usr/bin/env bash
# Installs the build's dependencies on Debian/Ubuntu when they are missing; quiet when everything is there.
set -euo pipefail
need=()
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
for pkg in cmake ninja-build g++ libfmt-dev libgtest-dev libbenchmark-dev libopenblas-dev ccache pkg-config; do
  have_pkg "$pkg" || need+=("$pkg")
done
if ((${#need[@]})); then
  if ! command -v apt-get >/dev/null; then
    echo "missing packages: ${need[*]} (no apt-get here: install them by hand)" >&2
    exit 1
  fi
  echo "installing: ${need[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
