# Sourced by the scripts that keep a private Python venv (conformance_data.sh, models.sh).
# ensure_venv VENV: makes VENV with python3 -m venv, installing Debian's python3-venv first where it is missing.
ensure_venv() {
  if ! python3 -c "import venv, ensurepip" 2>/dev/null; then
    echo "installing python3-venv" >&2
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-venv >/dev/null
  fi
  python3 -m venv "$1"
}
