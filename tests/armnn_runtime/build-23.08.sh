# Arm NN 23.08 harness; sourced by build.sh (which has set OUT, APT_EDITS, PLAN_*, FLATC, CXX,
# START, taken the lock and loaded lib.sh). Two ways, chosen by plan.py:
#   source    (Debian 12) libarmnn + CpuRef built with CMake from Debian 13's armnn_23.08.orig.tar.xz,
#             installed into $OUT/install; ~12-25 min once, then cached (keyed on the CMake
#             options, the source version, the compiler and flatbuffers, not on these scripts).
#   packages  (Debian 13) Debian's libarmnn-dev / libarmnn-cpuref-backend33.
# Both then compile the same way: the deserializer (which Debian does not package) from the 23.08
# source and runner.cpp, against that libarmnn. So the Debian 13 recipe runs here on Debian 12
# too, against the library built from source. Then anchor-23.08.sh builds armnn-tflite-anchor
# (23.08's TfLite parser + serializer) on its own cache key.

# ---------------------------------------------------------------------------- 1. packages
# shellcheck disable=SC2086
install_missing "$OUT/apt.log" $PLAN_PACKAGES
[ -x "$FLATC" ] || die "$FLATC not found (flatbuffers-compiler)"
FLATBUFFERS_VERSION="$(dpkg-query -W -f='${Version}' libflatbuffers-dev)"

# ---------------------------------------------------------------------------- 2. source
SRC_PARENT="$OUT/src"
SRC="$SRC_PARENT/armnn-23.08"
cached_src=""
[ -f "$SRC/.harness-source-version" ] && [ -f "$SRC/src/armnnDeserializer/Deserializer.cpp" ] \
    && cached_src="$(cat "$SRC/.harness-source-version")"
if [ "$PLAN_METHOD" = packages ]; then
    ARMNN_VERSION="$(dpkg-query -W -f='${Version}' libarmnn-dev)"
    case "$ARMNN_VERSION" in 23.08-*) ;; *) die "libarmnn-dev is $ARMNN_VERSION, expected 23.08-*" ;; esac
    want_src="$ARMNN_VERSION"
else
    want_src="${cached_src:-}"
    case "$want_src" in 23.08-*) ;; *) want_src="" ;; esac
fi
if [ -z "$want_src" ] || [ "$cached_src" != "$want_src" ]; then
    if [ -z "$want_src" ]; then
        want_src="$(src_versions 23.08 | head -1)"
        if [ -z "$want_src" ]; then
            has_deb_src "$PLAN_SOURCE_SUITE" || [ "$APT_EDITS" = 1 ] \
                || die "the Arm NN 23.08 source needs a deb-src entry for $PLAN_SOURCE_SUITE: run 'bash scripts/test.sh' once (or tests/armnn_runtime/build.sh --apt-sources 23.08)"
            ensure_deb_src_entry "$PLAN_SOURCE_SUITE"
            log "apt-get update (for deb-src $PLAN_SOURCE_SUITE)"
            as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >>"$OUT/apt.log" 2>&1 \
                || { tail -20 "$OUT/apt.log" >&2; die "apt-get update failed"; }
            want_src="$(src_versions 23.08 | head -1)"
            [ -n "$want_src" ] || die "apt knows no armnn 23.08 source package (deb-src $PLAN_SOURCE_SUITE)"
        fi
    fi
    fetch_source "$want_src" "$SRC_PARENT" "$OUT/apt-source.log" "$APT_EDITS" "$PLAN_SOURCE_SUITE"
else
    log "source $want_src cached in $SRC"
fi
SRC_VERSION="$want_src"

# ---------------------------------------------------------------------------- 3. libarmnn
if [ "$PLAN_METHOD" = source ]; then
    LIBROOT="$OUT/install"
    FLATBUFFERS_SO="$(dpkg -L libflatbuffers-dev)"
    FLATBUFFERS_SO="$(grep '/libflatbuffers\.so$' <<<"$FLATBUFFERS_SO" | head -1)"
    [ -n "$FLATBUFFERS_SO" ] || die "libflatbuffers-dev ships no libflatbuffers.so"
    # RelWithDebInfo without -g: Arm NN's CMake drops -DNDEBUG there, so ARMNN_ASSERT stays on
    # as in Debian's own build (CMAKE_BUILD_TYPE=None); Release would add -DNDEBUG -O3.
    # -Wno-error lands after the -Werror of Arm NN's CMAKE_CXX_FLAGS.
    CMAKE_ARGS=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -Wno-error"
        "-DCMAKE_INSTALL_PREFIX=$LIBROOT"
        -DARMNNREF=1 -DARMCOMPUTENEON=0 -DARMCOMPUTECL=0
        -DBUILD_UNIT_TESTS=0 -DBUILD_TESTS=0
        # Arm NN's serializer and deserializer libraries are not used (step 4 compiles the
        # deserializer itself), nor is the dynamic CpuRef backend module (a second compile of
        # the whole reference backend): ~12 min instead of ~17 on 2 cores.
        -DBUILD_ARMNN_SERIALIZER=0 -DBUILD_ARMNN_DESERIALIZER=0
        -DDISABLE_DYNAMIC_BACKENDS=1 -DCMAKE_CXX_FLAGS=-DARMNN_DISABLE_DYNAMIC_BACKENDS
        -DBUILD_TF_LITE_PARSER=0 -DBUILD_ONNX_PARSER=0 -DBUILD_CLASSIC_DELEGATE=0 -DBUILD_OPAQUE_DELEGATE=0
        -DBUILD_PYTHON_WHL=0 -DBUILD_PYTHON_SRC=0 -DBUILD_GATORD_MOCK=0 -DBUILD_TIMELINE_DECODER=0
        -DBUILD_BASE_PIPE_SERVER=0 -DARMNN_SAMPLE_APPS_ENABLED=0 -DUSE_CCACHE=0
        "-DFLATC=$FLATC" -DFLATBUFFERS_INCLUDE_PATH=/usr/include
        # Debian's libflatbuffers.a is not built with -fPIC: link the shared library.
        "-DFLATBUFFERS_LIBRARY=$FLATBUFFERS_SO")
    LIB_STAMP="$(printf '%s\n' "${CMAKE_ARGS[@]}" "src=$SRC_VERSION" "flatbuffers=$FLATBUFFERS_VERSION" \
                 "$("$CXX" --version | head -1)" | sha256sum | cut -d' ' -f1)"
    if [ -f "$LIBROOT/lib/libarmnn.so" ] && [ "$(cat "$LIBROOT/.harness-lib-stamp" 2>/dev/null)" = "$LIB_STAMP" ]; then
        log "libarmnn 23.08 cached in $LIBROOT"
    else
        t0=$(date +%s)
        log "building libarmnn $SRC_VERSION with CpuRef from source: ~12-25 min on 2 cores (log: $OUT/cmake-build.log)"
        rm -f "$LIBROOT/.harness-lib-stamp"
        mkdir -p "$OUT/build"
        (cd "$OUT/build" && cmake "$SRC" "${CMAKE_ARGS[@]}" && make -j"$(nproc)" && make install) \
            >"$OUT/cmake-build.log" 2>&1 || { tail -30 "$OUT/cmake-build.log" >&2; die "the Arm NN 23.08 build failed (see $OUT/cmake-build.log)"; }
        [ -f "$LIBROOT/lib/libarmnn.so" ] || die "make install did not produce $LIBROOT/lib/libarmnn.so"
        echo "$LIB_STAMP" > "$LIBROOT/.harness-lib-stamp"
        log "libarmnn 23.08 built in $(( $(date +%s) - t0 )) s"
    fi
    LIB_ID="source:$LIB_STAMP"
else
    LIBROOT=/usr
    LIB_ID="packages:$ARMNN_VERSION"
fi

# ---------------------------------------------------------------------------- cache check
HASH="$({ cat "$HERE/build.sh" "$HERE/build-23.08.sh" "$HERE/lib.sh" "$HERE/runner.cpp"
          echo "lib=$LIB_ID src=$SRC_VERSION flatbuffers=$FLATBUFFERS_VERSION"
          "$CXX" --version | head -1; } | sha256sum | cut -d' ' -f1)"
RUNNER="$OUT/armnn-run"
if [ -x "$RUNNER" ] && [ "$(cat "$OUT/build.hash" 2>/dev/null)" = "$HASH" ]; then
    log "up to date (cached in $OUT)"
    source "$HERE/anchor-23.08.sh"     # the anchor has its own cache key: never rebuilds the runner
    echo "$RUNNER"
    exit 0
fi

# ---------------------------------------------------------------------------- 4. deserializer + runner
BUILD="$OUT/runner-build"
rm -rf "$BUILD"
mkdir -p "$BUILD/gen"
LOG="$OUT/build.log"
: > "$LOG"
"$FLATC" -c -o "$BUILD/gen" "$SRC/src/armnnSerializer/ArmnnSchema.fbs" >"$OUT/flatc.log" 2>&1 \
    || die "flatc failed (see $OUT/flatc.log)"
[ -f "$BUILD/gen/ArmnnSchema_generated.h" ] || die "flatc did not produce ArmnnSchema_generated.h"

# Arm NN's public headers from LIBROOT (matching the library); the source's own include/ only
# after them, for internal headers a package may not ship. No -DNDEBUG: asserts stay on, so an
# out-of-range read aborts (the runner reports it as one line) instead of reading garbage.
CXXFLAGS=(-O2 -std=c++17 -fPIC -w -DFMT_HEADER_ONLY '-DARMNN_HARNESS_RELEASE="23.08"')
INCLUDES=(-I "$BUILD/gen" -I "$SRC/src/armnnDeserializer" -I "$SRC/src/armnnUtils" -I "$SRC/src/armnn"
          -I "$LIBROOT/include" -idirafter "$SRC/include" -idirafter "$SRC/third-party")
compile() { # src obj
    local rc=0
    "$CXX" "${CXXFLAGS[@]}" "${INCLUDES[@]}" -c "$1" -o "$2" >"$LOG.$(basename "$2")" 2>&1 || rc=$?
    cat "$LOG.$(basename "$2")" >>"$LOG"
    return $rc
}
log "compiling (Arm NN $SRC_VERSION deserializer, runner) ..."
pids=()
compile "$SRC/src/armnnDeserializer/Deserializer.cpp" "$BUILD/Deserializer.o" & pids+=($!)
(   # libarmnn does not export these armnnUtils helpers the deserializer calls
    compile "$SRC/src/armnnUtils/VerificationHelpers.cpp" "$BUILD/VerificationHelpers.o" &&
    compile "$SRC/src/armnnUtils/ParserHelper.cpp" "$BUILD/ParserHelper.o" &&
    compile "$HERE/runner.cpp" "$BUILD/runner.o"
) & pids+=($!)
fail=0
for p in "${pids[@]}"; do wait "$p" || fail=1; done
[ $fail = 0 ] || { tail -30 "$LOG" >&2; die "compilation failed (see $LOG)"; }

LDFLAGS=()
[ "$LIBROOT" = /usr ] || LDFLAGS=(-L "$LIBROOT/lib" "-Wl,-rpath,$LIBROOT/lib")
"$CXX" -o "$BUILD/armnn-run" "$BUILD/runner.o" "$BUILD/Deserializer.o" "$BUILD/VerificationHelpers.o" \
    "$BUILD/ParserHelper.o" "${LDFLAGS[@]}" -larmnn >>"$LOG" 2>&1 \
    || { tail -30 "$LOG" >&2; die "linking armnn-run failed (see $LOG)"; }

# Smoke test: the runner must start, say its release, and reject a missing model with exit code 2.
version="$("$BUILD/armnn-run" --version 2>&1 || true)"
case "$version" in "armnn-run 23.08 "*) ;; *) die "smoke test of armnn-run failed: --version says: $version" ;; esac
set +e
"$BUILD/armnn-run" "$BUILD/does-not-exist.armnn" "$BUILD" >/dev/null 2>&1
rc=$?
set -e
[ $rc = 2 ] || die "smoke test of armnn-run failed (exit $rc, expected 2)"

mv -f "$BUILD/armnn-run" "$RUNNER"
echo "$HASH" > "$OUT/build.hash"
rm -f "$LOG".*.o

END=$(date +%s.%N)
log "built in $(awk -v a="$START" -v b="$END" 'BEGIN{printf "%.1f", b-a}') s: $RUNNER"
# ---------------------------------------------------------------------------- 5. anchor
source "$HERE/anchor-23.08.sh"
echo "$RUNNER"
