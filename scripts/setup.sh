#!/usr/bin/env bash
# Installs armnn-import and everything it needs on a fresh Debian machine, then converts a model
# shipped in test_models/ and inspects the result.
# Usage: bash scripts/setup.sh [EXTRAS]      e.g. bash scripts/setup.sh verify
#   EXTRAS are pyproject extras, comma-separated (verify: onnxruntime and LiteRT; test: the test tools).
# The converted model goes to ${SETUP_OUT:-build/setup}/.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/python_env.sh

extras="${1:-}"
use_python
target="."
[ -n "$extras" ] && target=".[$extras]"
log "installing armnn-import ($target) into $("$PY" -c 'import sys; print(sys.prefix)')"
pip_install -e "$target"

model=test_models/onnx/resnet_small.onnx
if [ ! -f "$model" ]; then
    model="$(find test_models -name '*.onnx' -type f 2>/dev/null | LC_ALL=C sort | head -1)"
fi
[ -n "$model" ] || die "no ONNX model under test_models/ to convert"

out_dir="${SETUP_OUT:-build/setup}"
mkdir -p "$out_dir"
out="$out_dir/$(basename "${model%.*}").armnn"
log "converting $model"
armnn-import "$model" -o "$out"
armnn-import inspect "$out"
log "done: $out (activate this Python's environment to use armnn-import: $PY)"
