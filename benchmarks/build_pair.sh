#!/usr/bin/env bash
# Build armnn-pair (benchmarks/armnn_pair.cpp) against a built Arm NN harness:
#   bash benchmarks/build_pair.sh [RELEASE]          RELEASE: 20.08 (default) or 23.08
# Uses the harness's compiled deserializer objects and libarmnn (tests/armnn_runtime/build.sh
# must have built them; this never runs, edits or rebuilds the harness). Output:
#   <harness dir>/pair/<key>/armnn-pair, key = hash of this script, armnn_pair.cpp, runner.cpp (which
#   armnn_pair.cpp includes), the harness's build.hash and the compiler; cached, ~10 ms when built.
# The last line on stdout is the tool's path; errors: one line "armnn-pair-build: error: ..." and exit 1.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
RT="$HERE/../tests/armnn_runtime"
RELEASE="${1:-20.08}"
die() { echo "armnn-pair-build: error: $*" >&2; exit 1; }

H="$(cd "$HERE/.." && python3 -c "import sys; sys.path.insert(0, '.')
from armnn_import.testing.armnn_runtime import harness_dir; print(harness_dir(sys.argv[1]))" "$RELEASE")" \
    || die "cannot locate the $RELEASE harness"
[ -f "$H/build.hash" ] && [ -x "$H/armnn-run" ] || die "the $RELEASE harness is not built in $H (tests/armnn_runtime/build.sh $RELEASE)"
CXX="${CXX:-g++}"
KEY="$({ cat "$0" "$HERE/armnn_pair.cpp" "$RT/runner.cpp" "$H/build.hash"; "$CXX" --version | head -1; } \
       | sha256sum | cut -c1-16)"
OUT="$H/pair/$KEY"
if [ -x "$OUT/armnn-pair" ]; then
    echo "$OUT/armnn-pair"
    exit 0
fi

SRC="$H/src/armnn-$RELEASE"
case "$RELEASE" in
    20.08)
        OBJS=("$H/build/libarmnnDeserializer20.08.a")
        CXXFLAGS=(-O2 -std=c++14 -fPIC -w '-DARMNN_HARNESS_RELEASE="20.08"')
        INCLUDES=(-I "$H/build/gen" -I "$SRC/src/armnnDeserializer" -I "$SRC/src/armnnUtils")
        LIBROOT=/usr
        if [ -f "$H/install/lib/libarmnn.so" ]; then   # the source build (Debian 13), as build.sh links it
            LIBROOT="$H/install"
            INCLUDES+=(-I "$LIBROOT/include")
            CXXFLAGS+=(-include cstdint)
        fi ;;
    23.08)
        B="$H/runner-build"
        OBJS=("$B/Deserializer.o" "$B/VerificationHelpers.o" "$B/ParserHelper.o")
        CXXFLAGS=(-O2 -std=c++17 -fPIC -w -DFMT_HEADER_ONLY '-DARMNN_HARNESS_RELEASE="23.08"')
        LIBROOT=/usr
        [ -f "$H/install/lib/libarmnn.so" ] && LIBROOT="$H/install"
        INCLUDES=(-I "$B/gen" -I "$SRC/src/armnnDeserializer" -I "$SRC/src/armnnUtils" -I "$SRC/src/armnn"
                  -I "$LIBROOT/include" -idirafter "$SRC/include" -idirafter "$SRC/third-party") ;;
    *) die "unknown release $RELEASE (20.08 or 23.08)" ;;
esac
for o in "${OBJS[@]}"; do [ -f "$o" ] || die "missing harness object $o (rebuild the harness: tests/armnn_runtime/build.sh $RELEASE)"; done
LDFLAGS=()
[ "$LIBROOT" = /usr ] || LDFLAGS=(-L "$LIBROOT/lib" "-Wl,-rpath,$LIBROOT/lib")

TMP="$H/pair/.build-$$"
rm -rf "$TMP"
mkdir -p "$TMP"
trap 'rm -rf "$TMP"' EXIT
"$CXX" "${CXXFLAGS[@]}" "${INCLUDES[@]}" -I "$RT" -c "$HERE/armnn_pair.cpp" -o "$TMP/armnn_pair.o" >"$TMP/log" 2>&1 \
    && "$CXX" -o "$TMP/armnn-pair" "$TMP/armnn_pair.o" "${OBJS[@]}" "${LDFLAGS[@]}" -larmnn >>"$TMP/log" 2>&1 \
    || { tail -20 "$TMP/log" >&2; die "compiling armnn-pair for $RELEASE failed"; }
version="$("$TMP/armnn-pair" --version 2>&1 || true)"
case "$version" in "armnn-pair $RELEASE "*) ;; *) die "smoke test failed: --version says: $version" ;; esac
mkdir -p "$OUT"
mv -f "$TMP/armnn-pair" "$OUT/armnn-pair"
echo "$OUT/armnn-pair"
