#!/usr/bin/env bash
# Installs sinter into a temporary prefix and builds a separate project against it with find_package(sinter).
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$root/$build" --prefix "$tmp/prefix" > /dev/null
# The README's C++ blocks in order as one program: includes and using-directives at file scope, the rest in main.
awk '/^```cpp$/ {on = 1; next} /^```$/ {on = 0} on' "$root/README.md" > "$tmp/readme_blocks.txt"
{
  grep -E '^(#include|using namespace)' "$tmp/readme_blocks.txt"
  echo '#include <iostream>'
  echo 'int main() {'
  grep -vE '^(#include|using namespace)' "$tmp/readme_blocks.txt"
  echo '  return 0;'
  echo '}'
} > "$tmp/readme_example.cpp"
cmake -S "$root/tests/install/consumer" -B "$tmp/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" \
  -DREADME_EXAMPLE="$tmp/readme_example.cpp" > /dev/null
ninja -C "$tmp/consumer" > /dev/null
# A sanitizer build (make test SAN=1) of the library loads the ASan runtime as its dependency, not first in the
# plain consumer: allow that (no LD_PRELOAD, which would leak into the compilers the inductor spawns).
asan_options=${ASAN_OPTIONS:-}
if ldd "$tmp/prefix/lib/libsinter.so" 2>/dev/null | grep -q libasan; then
  asan_options="verify_asan_link_order=0${asan_options:+:$asan_options}"
fi
ASAN_OPTIONS="$asan_options" LD_LIBRARY_PATH="$tmp/prefix/lib:${LD_LIBRARY_PATH:-}" "$tmp/consumer/consumer"
SINTER_CACHE_DIR="$tmp/cache" ASAN_OPTIONS="$asan_options" LD_LIBRARY_PATH="$tmp/prefix/lib:${LD_LIBRARY_PATH:-}" \
  "$tmp/consumer/readme_example" > "$tmp/readme.txt" || { cat "$tmp/readme.txt"; echo "the README's example failed"; exit 1; }
echo "the README's example builds and runs as written ($(wc -l < "$tmp/readme.txt") lines of output)"
# The installed program starts from its prefix with no library path set (its RPATH names ../lib).
ASAN_OPTIONS="$asan_options" env -u LD_LIBRARY_PATH "$tmp/prefix/bin/sinter" --help > /dev/null
echo "installed sinter program starts"
