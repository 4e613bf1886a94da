#!/usr/bin/env bash
# Installs sinter into a temporary prefix and builds a separate project against it with find_package(sinter).
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$root/$build" --prefix "$tmp/prefix" > /dev/null
cmake -S "$root/tests/install/consumer" -B "$tmp/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" > /dev/null
ninja -C "$tmp/consumer" > /dev/null
LD_LIBRARY_PATH="$tmp/prefix/lib:${LD_LIBRARY_PATH:-}" "$tmp/consumer/consumer"
