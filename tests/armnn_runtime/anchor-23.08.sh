# armnn-tflite-anchor for Arm NN 23.08: .tflite -> .armnn with 23.08's own TfLite parser and
# serializer. Sourced by build-23.08.sh after the runner (it has set OUT, SRC, SRC_VERSION,
# LIBROOT, LIB_ID, FLATC, FLATBUFFERS_VERSION, CXX). Cached on its own key in $OUT/anchor-build,
# so it never rebuilds libarmnn or the runner; cold: ~3-5 min on 2 cores (TfLiteParser.cpp),
# cached: a hash check.
#
# The parser is compiled against a schema_generated.h that flatc (the Debian one, matching the
# libflatbuffers-dev headers) makes from TensorFlow Lite's schema. Arm NN takes schema.fbs from
# TensorFlow 2.12's source; here it is written by tflite_schema.py from the generated Python
# modules of the `tflite` PyPI package (a dependency of armnn-import) and checked by a flatc
# round trip: same tables, slots, types, defaults and enum values, so the same wire format.
# Serializer.cpp and the armnnUtils helpers come from the 23.08 source too (the library build
# leaves them out), so the same recipe works on Debian 13's packaged libarmnn.
#
# Without a Python that imports `tflite` the anchor is skipped: the reason goes to
# $OUT/armnn-tflite-anchor.unavailable and its tests skip with it. A failed build never fails the
# runner's: the reason goes to $OUT/armnn-tflite-anchor.failed and its tests fail with it.

anchor_python() { # the first Python that imports the tflite package: "PYTHON PKG_DIR VERSION"
    local py
    for py in "${ARMNN_HARNESS_PYTHON:-}" python3 /usr/bin/python3; do
        [ -n "$py" ] && command -v "$py" >/dev/null 2>&1 || continue
        "$py" -c 'import os, sys, tflite
from importlib import metadata
print(sys.executable, os.path.dirname(tflite.__file__), metadata.version("tflite"))' 2>/dev/null && return 0
    done
    return 1
}

ANCHOR="$OUT/armnn-tflite-anchor"
ANCHOR_BUILD="$OUT/anchor-build"
ANCHOR_NA="$OUT/armnn-tflite-anchor.unavailable"
ANCHOR_FAILED="$OUT/armnn-tflite-anchor.failed"
anchor_fail() { # REASON: log it and leave it for the tests (the caller then returns)
    log "warning: armnn-tflite-anchor 23.08 not built: $1"
    echo "$1" > "$ANCHOR_FAILED"
}
if ! found="$(anchor_python)"; then
    log "armnn-tflite-anchor 23.08 skipped: no Python here imports the tflite package (pip install tflite)"
    rm -f "$ANCHOR_FAILED"
    echo "no Python that imports the tflite package, whose modules give the TfLite schema (pip install tflite)" > "$ANCHOR_NA"
    return 0
fi
read -r A_PY A_PKG A_TFLITE <<<"$found"
ANCHOR_HASH="$({ cat "$HERE/anchor-23.08.sh" "$HERE/tflite_schema.py" "$HERE/tflite_anchor.cpp"
                 echo "lib=$LIB_ID src=$SRC_VERSION flatbuffers=$FLATBUFFERS_VERSION tflite=$A_TFLITE"
                 cat "$A_PKG"/*.py | sha256sum
                 "$CXX" --version | head -1; } | sha256sum | cut -d' ' -f1)"
if [ -x "$ANCHOR" ] && [ "$(cat "$ANCHOR_BUILD/anchor.hash" 2>/dev/null)" = "$ANCHOR_HASH" ]; then
    log "armnn-tflite-anchor 23.08 up to date"
    return 0
fi

t0=$(date +%s)
rm -rf "$ANCHOR_BUILD" "$ANCHOR_NA" "$ANCHOR_FAILED" "$ANCHOR"
mkdir -p "$ANCHOR_BUILD/gen"
ALOG="$ANCHOR_BUILD/build.log"
: > "$ALOG"
log "building armnn-tflite-anchor 23.08 (TfLite parser + serializer, schema from tflite $A_TFLITE): ~3-5 min (log: $ALOG)"
"$A_PY" "$HERE/tflite_schema.py" --check "$FLATC" "$A_PKG" "$ANCHOR_BUILD/gen/schema.fbs" >>"$ALOG" 2>&1 \
    || { tail -5 "$ALOG" >&2; anchor_fail "could not write the TfLite schema (see $ALOG)"; return 0; }
# The options Debian's armnn packaging gives flatc for this header.
"$FLATC" -c --gen-object-api --reflect-types --reflect-names -o "$ANCHOR_BUILD/gen" "$ANCHOR_BUILD/gen/schema.fbs" \
    >>"$ALOG" 2>&1 || { anchor_fail "flatc failed on the TfLite schema (see $ALOG)"; return 0; }
# TfLiteParser.hpp reads TensorFlow's version.h only to tell TF > 2.3 (the 2.4 operator-code
# scheme): the TensorFlow Arm NN 23.08 is released against (scripts/get_tensorflow.sh: r2.12).
mkdir -p "$ANCHOR_BUILD/gen/tensorflow/lite"
printf '#pragma once\n#define TF_MAJOR_VERSION 2\n#define TF_MINOR_VERSION 12\n#define TF_PATCH_VERSION 0\n' \
    > "$ANCHOR_BUILD/gen/tensorflow/lite/version.h"
"$FLATC" -c -o "$ANCHOR_BUILD/gen" "$SRC/src/armnnSerializer/ArmnnSchema.fbs" >>"$ALOG" 2>&1 \
    || { anchor_fail "flatc failed on ArmnnSchema.fbs (see $ALOG)"; return 0; }

A_CXXFLAGS=(-O2 -std=c++17 -fPIC -w -DFMT_HEADER_ONLY '-DARMNN_HARNESS_RELEASE="23.08"')
A_INCLUDES=(-I "$ANCHOR_BUILD/gen" -I "$SRC/src/armnnTfLiteParser" -I "$SRC/src/armnnSerializer"
            -I "$SRC/src/armnnUtils" -I "$SRC/src/armnn" -I "$SRC/profiling"
            -I "$LIBROOT/include" -idirafter "$SRC/include" -idirafter "$SRC/third-party")
acompile() { # src obj
    local rc=0
    "$CXX" "${A_CXXFLAGS[@]}" "${A_INCLUDES[@]}" -c "$1" -o "$2" >"$ALOG.$(basename "$2")" 2>&1 || rc=$?
    cat "$ALOG.$(basename "$2")" >>"$ALOG"
    rm -f "$ALOG.$(basename "$2")"
    return $rc
}
pids=()
acompile "$SRC/src/armnnTfLiteParser/TfLiteParser.cpp" "$ANCHOR_BUILD/TfLiteParser.o" & pids+=($!)
(   # the serializer, and the armnnUtils helpers libarmnn does not export
    acompile "$SRC/src/armnnSerializer/Serializer.cpp" "$ANCHOR_BUILD/Serializer.o" &&
    acompile "$SRC/src/armnnSerializer/SerializerUtils.cpp" "$ANCHOR_BUILD/SerializerUtils.o" &&
    acompile "$SRC/src/armnnUtils/ParserHelper.cpp" "$ANCHOR_BUILD/ParserHelper.o" &&
    acompile "$SRC/src/armnnUtils/VerificationHelpers.cpp" "$ANCHOR_BUILD/VerificationHelpers.o" &&
    acompile "$HERE/tflite_anchor.cpp" "$ANCHOR_BUILD/tflite_anchor.o"
) & pids+=($!)
fail=0
for p in "${pids[@]}"; do wait "$p" || fail=1; done
[ $fail = 0 ] || { grep -m5 "error" "$ALOG" >&2; anchor_fail "armnn-tflite-anchor 23.08: compilation failed (see $ALOG)"; return 0; }

A_LDFLAGS=()
[ "$LIBROOT" = /usr ] || A_LDFLAGS=(-L "$LIBROOT/lib" "-Wl,-rpath,$LIBROOT/lib")
"$CXX" -o "$ANCHOR_BUILD/armnn-tflite-anchor" "$ANCHOR_BUILD"/*.o "${A_LDFLAGS[@]}" -larmnn -lflatbuffers \
    >>"$ALOG" 2>&1 || { grep -m5 "undefined\|error" "$ALOG" >&2; anchor_fail "armnn-tflite-anchor 23.08: linking failed (see $ALOG)"; return 0; }

# Smoke test: a missing input is a usage error (exit 2).
set +e
"$ANCHOR_BUILD/armnn-tflite-anchor" "$ANCHOR_BUILD/does-not-exist.tflite" "$ANCHOR_BUILD/x.armnn" >/dev/null 2>&1
rc=$?
set -e
[ $rc = 2 ] || { anchor_fail "smoke test of armnn-tflite-anchor 23.08 failed (exit $rc, expected 2)"; return 0; }
mv -f "$ANCHOR_BUILD/armnn-tflite-anchor" "$ANCHOR"
rm -f "$ANCHOR_BUILD"/*.o
echo "$ANCHOR_HASH" > "$ANCHOR_BUILD/anchor.hash"
log "armnn-tflite-anchor 23.08 built in $(( $(date +%s) - t0 )) s: $ANCHOR"
