#!/usr/bin/env bash
# The model zoo of `sinter bench --suite models`: installs PyTorch (CPU wheel), torchvision, onnx, ONNX Runtime and
# OpenVINO into a private venv (idempotent; quiet when already there) and exports bench/models/zoo.py's models and
# ONNX's light models into DIR (default .cache/models). Not part of `make test`; the exported files are not
# committed. SINTER_MODELS_VENV overrides the venv's place.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/python_venv.sh"
VENV="${SINTER_MODELS_VENV:-$ROOT/.cache/venv-models}"
MODELS_DIR="${1:-$ROOT/.cache/models}"
PACKAGES=(torch torchvision onnx onnxruntime openvino)

if ! "$VENV/bin/python" -c "import torch, torchvision, onnx, onnxruntime, openvino" 2>/dev/null; then
  echo "installing ${PACKAGES[*]} into $VENV" >&2
  ensure_venv "$VENV"
  # The CPU wheel of torch where its index is reachable (a tenth of the size), else PyPI's.
  "$VENV/bin/pip" install -q --disable-pip-version-check --timeout 10 --retries 0 --index-url https://download.pytorch.org/whl/cpu torch torchvision >&2 2>/dev/null \
    || "$VENV/bin/pip" install -q --disable-pip-version-check torch torchvision >&2
  "$VENV/bin/pip" install -q --disable-pip-version-check onnx onnxruntime openvino >&2
fi
[ -f "$MODELS_DIR/models.json" ] && [ "$MODELS_DIR/models.json" -nt "$ROOT/bench/models/zoo.py" ] \
  && [ "$MODELS_DIR/models.json" -nt "$ROOT/bench/models/export.py" ] && { echo "$MODELS_DIR"; exit 0; }
"$VENV/bin/python" "$ROOT/bench/models/export.py" "$MODELS_DIR" >&2
echo "$MODELS_DIR"
