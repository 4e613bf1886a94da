#!/usr/bin/env bash
# The model zoo of `sinter bench --suite models`: installs PyTorch (CPU wheel), torchvision, onnx, ONNX Runtime and
# OpenVINO into a private venv (idempotent; quiet when already there) and exports bench/models/zoo.py's models and
# ONNX's light models into DIR (default .cache/models). Not part of `make test`; the exported files are not
# committed. SINTER_MODELS_VENV overrides the venv's place.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${SINTER_MODELS_VENV:-$ROOT/.cache/venv-models}"
OUT="${1:-$ROOT/.cache/models}"
PACKAGES=(torch torchvision onnx onnxruntime openvino)

if ! "$VENV/bin/python" -c "import torch, torchvision, onnx, onnxruntime, openvino" 2>/dev/null; then
  if ! python3 -c "import venv, ensurepip" 2>/dev/null; then
    echo "installing python3-venv" >&2
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-venv >/dev/null
  fi
  echo "installing ${PACKAGES[*]} into $VENV" >&2
  python3 -m venv "$VENV"
  # The CPU wheel of torch where its index is reachable (a tenth of the size), else PyPI's.
  "$VENV/bin/pip" install -q --disable-pip-version-check --timeout 10 --retries 0 --index-url https://download.pytorch.org/whl/cpu torch torchvision >&2 2>/dev/null \
    || "$VENV/bin/pip" install -q --disable-pip-version-check torch torchvision >&2
  "$VENV/bin/pip" install -q --disable-pip-version-check onnx onnxruntime openvino >&2
fi
[ -f "$OUT/models.json" ] && [ "$OUT/models.json" -nt "$ROOT/bench/models/zoo.py" ] \
  && [ "$OUT/models.json" -nt "$ROOT/bench/models/export.py" ] && { echo "$OUT"; exit 0; }
"$VENV/bin/python" "$ROOT/bench/models/export.py" "$OUT" >&2
echo "$OUT"
