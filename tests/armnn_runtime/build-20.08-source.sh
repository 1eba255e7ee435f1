# libarmnn 20.08 + CpuRef + TfLite parser + serializer built from Debian 12's source package
# (plan.py method "source": Debian 13, which packages no 20.08). Sourced by build.sh after the
# source is fetched (it has set OUT, SRC, ARMNN_VERSION, FLATC, CXX and loaded lib.sh); sets
# LIBROOT (the install prefix) and LIB_ID (for build.sh's cache hash).
#
# The source is Debian's own (apt-get source armnn=20.08-12, Debian's patches applied), so the
# result is what Debian 12's libarmnn22 + libarmnn-cpuref-backend22 + libarmnntfliteparser22 are:
# CpuRef is a dynamic backend (Arm_CpuRef_backend.so, loaded from DYNAMIC_BACKEND_PATHS, as
# Debian's split-out-backends patch makes it), the TfLite parser takes Debian's schema.fbs.
# Built with Debian's CMake options less the tests and Python; what Debian 13's gcc 14 needs is
# one flag (-include cstdint, below), no source patch (README.md: "Debian 13"); a patch that a later
# toolchain needs goes into build-20.08-trixie.patch (applied and stamped when it exists).
# 33 min once on 2 busy cores (load average 10), then cached (stamped with the options, the
# source version, the compiler, flatbuffers and boost; not with these scripts).

LIBROOT="$OUT/install"
LIBSRC="$OUT/lib-src"          # a copy (the TfLite header is generated in it); $SRC stays as fetched
FLATBUFFERS_VERSION="$(dpkg-query -W -f='${Version}' libflatbuffers-dev)"
BOOST_VERSION="$(dpkg-query -W -f='${Version}' libboost-dev 2>/dev/null || true)"
PATCH20="$HERE/build-20.08-trixie.patch"
# -include cstdint: gcc 13 and later no longer include <cstdint> through other standard headers,
# which 20.08's sources relied on (uint32_t undeclared in VerificationHelpers.hpp and others).
CMAKE_ARGS=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -Wno-error -include cstdint"
    "-DCMAKE_INSTALL_PREFIX=$LIBROOT" -DCMAKE_INSTALL_LIBDIR=lib
    # Debian 12's options (debian/rules) ...
    -DSHARED_BOOST=ON -DARMNNREF=0 -DBUILD_ARMNN_SERIALIZER=1 -DBUILD_TF_LITE_PARSER=1
    "-DTF_LITE_GENERATED_PATH=$LIBSRC/third-party/tensorflow" -DBUILD_GATORD_MOCK=0
    "-DDYNAMIC_BACKEND_PATHS=$LIBROOT/lib/armnn22"
    # ... less its unit tests and Python (pyarmnn)
    -DBUILD_UNIT_TESTS=0 -DBUILD_TESTS=0 -DBUILD_PYTHON_SRC=0 -DBUILD_PYTHON_WHL=0 -DUSE_CCACHE=0
    "-DFLATC_DIR=$(dirname "$FLATC")")
LIB_STAMP="$(printf '%s\n' "${CMAKE_ARGS[@]}" "src=$ARMNN_VERSION" "flatbuffers=$FLATBUFFERS_VERSION" \
             "boost=$BOOST_VERSION" "$(cat "$PATCH20" 2>/dev/null | sha256sum)" "$("$CXX" --version | head -1)" \
             | sha256sum | cut -d' ' -f1)"
LIB_ID="source:$LIB_STAMP"
if [ -f "$LIBROOT/lib/libarmnn.so" ] && [ "$(cat "$LIBROOT/.harness-lib-stamp" 2>/dev/null)" = "$LIB_STAMP" ]; then
    log "libarmnn 20.08 cached in $LIBROOT"
    return 0
fi
t0=$(date +%s)
log "building libarmnn $ARMNN_VERSION with CpuRef from source: ~20-35 min on 2 cores (log: $OUT/cmake-build.log)"
rm -rf "$LIBSRC" "$OUT/lib-build" "$LIBROOT"
cp -a "$SRC" "$LIBSRC"
: >"$OUT/cmake-build.log"
if [ -s "$PATCH20" ]; then
    patch -d "$LIBSRC" -p1 --forward <"$PATCH20" >>"$OUT/cmake-build.log" 2>&1 \
        || { tail -20 "$OUT/cmake-build.log" >&2; die "build-20.08-trixie.patch does not apply (see $OUT/cmake-build.log)"; }
fi
# What debian/rules does before configuring: the TfLite schema header from Debian's schema.fbs.
"$FLATC" -c --gen-object-api --reflect-types --reflect-names -o "$LIBSRC/third-party/tensorflow/" \
    "$LIBSRC/third-party/tensorflow/schema.fbs" >>"$OUT/cmake-build.log" 2>&1 \
    || die "flatc failed on the TfLite schema (see $OUT/cmake-build.log)"
mkdir -p "$OUT/lib-build"
(cd "$OUT/lib-build" && cmake "$LIBSRC" "${CMAKE_ARGS[@]}" && make -j"$(nproc)" && make install) \
    >>"$OUT/cmake-build.log" 2>&1 \
    || { grep -m3 -B2 -A6 "error" "$OUT/cmake-build.log" >&2 || tail -30 "$OUT/cmake-build.log" >&2
         die "the Arm NN 20.08 build failed (see $OUT/cmake-build.log)"; }
[ -f "$LIBROOT/lib/libarmnn.so" ] && [ -f "$LIBROOT/lib/armnn22/Arm_CpuRef_backend.so" ] \
    || die "make install did not produce libarmnn.so and armnn22/Arm_CpuRef_backend.so in $LIBROOT/lib"
echo "$LIB_STAMP" > "$LIBROOT/.harness-lib-stamp"
rm -rf "$OUT/lib-build" "$LIBSRC"
log "libarmnn 20.08 built in $(( $(date +%s) - t0 )) s"
