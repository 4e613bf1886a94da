#!/usr/bin/env bash
# Installs the pinned onnx package in a private venv (idempotent, quiet when already there) and lays out ONNX's
# conformance data for sinter's runner under DATA_DIR (default .cache/onnx-data): one folder per suite
# (node, pytorch-converted, pytorch-operator, simple: links to the package's data; light: written here with the
# runner's deterministic inputs). Prints the data folder.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/python_venv.sh"
ONNX_VERSION=1.17.0   # pinned: new upstream cases must not turn CI red by themselves
VENV="${SINTER_ONNX_VENV:-$ROOT/.cache/venv-onnx}"
DATA="${1:-$ROOT/.cache/onnx-data}"

if ! "$VENV/bin/python" -c "import onnx, sys; sys.exit(onnx.__version__ != '$ONNX_VERSION')" 2>/dev/null; then
  echo "installing onnx==$ONNX_VERSION into $VENV" >&2
  ensure_venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check "onnx==$ONNX_VERSION" >&2
fi
"$VENV/bin/python" "$ROOT/scripts/conformance_data.py" "$DATA" "$ONNX_VERSION"
echo "$DATA"
