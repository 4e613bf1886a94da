#!/usr/bin/env bash
# Checks the include order of docs/ARCHITECTURE.md section 2: a folder under src/ includes public headers and
# headers of folders below it only. Prints every upward include and exits 1 if there is one.
# Usage: scripts/check_layers.sh [repository root]
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root/src"
# Lowest first; codegen/cpp and runtime share a rank (neither may include the other).
rank() {
  case "$1" in
    support) echo 0 ;; symbolic) echo 1 ;; tensor) echo 2 ;; ops) echo 3 ;; autograd) echo 4 ;; nn) echo 5 ;;
    graph) echo 6 ;; passes) echo 7 ;; inductor) echo 8 ;; codegen) echo 9 ;; runtime) echo 9 ;; backends) echo 10 ;;
    capture) echo 11 ;; frontends) echo 12 ;; aot) echo 13 ;; *) echo 99 ;;
  esac
}
bad=0
while IFS= read -r line; do
  file=${line%%:*}
  inc=$(sed -E 's/.*#include "([^"]+)".*/\1/' <<<"$line")
  from=${file%%/*}
  to=${inc%%/*}
  [[ "$from" == "$to" || "$to" == "sinter" || ! -d "$to" ]] && continue
  if (( $(rank "$to") >= $(rank "$from") )); then
    echo "upward include: src/$file includes $inc"
    bad=1
  fi
done < <(grep -rn '#include "' --include='*.h' --include='*.cpp' . | sed 's|^\./||')
# The umbrella header is for users: nothing under src/tensor includes it.
if grep -rln 'sinter/sinter.h' tensor >/dev/null; then
  echo "src/tensor includes the umbrella header sinter/sinter.h"
  bad=1
fi
if (( bad == 0 )); then echo "layers: no upward include"; fi
exit $bad
