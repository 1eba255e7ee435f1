# Helpers shared by build.sh and build-23.08.sh (sourced, not run).
# ARMNN_HARNESS_APT_ETC (default /etc/apt) lets test_harness.py check the deb-src logic on a copy.

APT_ETC="${ARMNN_HARNESS_APT_ETC:-/etc/apt}"

log() { echo "[armnn-harness] $*" >&2; }
die() { echo "armnn-harness: error: $*" >&2; exit 1; }

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"
    elif command -v sudo >/dev/null 2>&1; then sudo -n "$@"
    else die "need root to run: $*"
    fi
}

is_installed() { [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]; }

# install_missing LOG PACKAGE...: apt-get install the packages that are not installed yet.
install_missing() {
    local logf="$1" p missing=()
    shift
    for p in "$@"; do is_installed "$p" || missing+=("$p"); done
    [ ${#missing[@]} -eq 0 ] && return 0
    log "installing: ${missing[*]} (log: $logf)"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >>"$logf" 2>&1 \
        || { tail -20 "$logf" >&2; die "apt-get update failed"; }
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" \
        >>"$logf" 2>&1 || { tail -20 "$logf" >&2; die "apt-get install ${missing[*]} failed"; }
}

# The apt source files that exist (no glob left unexpanded, no error for a missing sources.list).
_apt_files() {
    local f
    for f in "$APT_ETC/sources.list" "$APT_ETC"/sources.list.d/*.list "$APT_ETC"/sources.list.d/*.sources; do
        [ -f "$f" ] && echo "$f"
    done
    return 0
}

# has_deb_src SUITE: is there an enabled deb-src entry for SUITE (one-line or deb822 format)?
has_deb_src() {
    local suite="$1" f
    while IFS= read -r f; do
        case "$f" in
            *.sources)
                awk -v s="$suite" 'BEGIN{RS=""; FS="\n"; found=0}
                    { types=0; suites=0; off=0
                      for (i=1;i<=NF;i++) {
                          if ($i ~ /^Types:/ && $i ~ /[ \t]deb-src([ \t]|$)/) types=1
                          if ($i ~ /^Suites:/ && (" " substr($i, 8) " ") ~ ("[ \t]" s "[ \t]")) suites=1
                          if ($i ~ /^Enabled:[ \t]*no/) off=1 }
                      if (types && suites && !off) found=1 }
                    END{exit !found}' "$f" && return 0 ;;
            *)
                grep -qE "^[[:space:]]*deb-src[[:space:]]+(\[[^]]*\][[:space:]]+)?[^[:space:]]+[[:space:]]+$suite([[:space:]]|$)" "$f" \
                    && return 0 ;;
        esac
    done < <(_apt_files)
    return 1
}

# host_codename: this machine's Debian codename (bookworm, trixie, ...).
host_codename() {
    local c=""
    [ -f /etc/os-release ] && c="$(. /etc/os-release && echo "${VERSION_CODENAME:-}")"
    echo "$c"
}

# ensure_deb_src_entry SUITE: add a deb-src entry for SUITE (a separate file under
# sources.list.d, derived from this machine's main Debian entry) unless one exists.
# Prints nothing and changes nothing when the entry is already there; idempotent.
ensure_deb_src_entry() {
    local suite="$1" host f main="" tmp name
    has_deb_src "$suite" && return 0
    host="$(host_codename)"
    [ -n "$host" ] || die "cannot tell this machine's Debian codename (/etc/os-release)"
    name="armnn-harness-$suite-src"
    [ "$suite" = bookworm ] && name="armnn-harness-src"   # the name older harness builds used
    tmp="$(mktemp)"
    for f in "$APT_ETC"/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        if awk -v s="$host" 'BEGIN{RS=""; FS="\n"; found=0}
                { t=0; u=0; for (i=1;i<=NF;i++) {
                      if ($i ~ /^Types:/ && $i ~ /[ \t]deb([ \t]|$)/) t=1
                      if ($i ~ /^Suites:/ && (" " substr($i, 8) " ") ~ ("[ \t]" s "[ \t]")) u=1 }
                  if (t && u) found=1 }
                END{exit !found}' "$f"; then main="$f"; break; fi
    done
    if [ -n "$main" ]; then
        # The first stanza whose Suites hold the host codename, as deb-src for SUITE.
        awk -v s="$host" -v want="$suite" 'BEGIN{RS=""; FS="\n"}
            { t=0; u=0; for (i=1;i<=NF;i++) {
                  if ($i ~ /^Types:/ && $i ~ /[ \t]deb([ \t]|$)/) t=1
                  if ($i ~ /^Suites:/ && (" " substr($i, 8) " ") ~ ("[ \t]" s "[ \t]")) u=1 }
              if (!(t && u)) next
              for (i=1;i<=NF;i++) {
                  if ($i ~ /^Types:/)       print "Types: deb-src"
                  else if ($i ~ /^Suites:/) print "Suites: " want
                  else if ($i !~ /^#/)      print $i }
              exit }' "$main" > "$tmp"
        grep -q '^URIs:' "$tmp" || { rm -f "$tmp"; die "could not derive a deb-src entry from $main"; }
        name="$name.sources"
    else
        local line
        line="$(cat $(_apt_files | grep -v '\.sources$') /dev/null \
                | grep -E "^deb[[:space:]].*[[:space:]]$host[[:space:]].*main" | head -1 || true)"
        [ -n "$line" ] || { rm -f "$tmp"; die "no Debian $host apt entry found to derive a deb-src entry from"; }
        # deb [opts] URI host main ... -> deb-src [opts] URI SUITE main
        echo "deb-src${line#deb}" | sed -E "s/[[:space:]]$host([[:space:]])/ $suite\\1/" > "$tmp"
        name="$name.list"
    fi
    if [ -w "$APT_ETC/sources.list.d" ]; then cp "$tmp" "$APT_ETC/sources.list.d/$name"
    else as_root cp "$tmp" "$APT_ETC/sources.list.d/$name"; fi
    chmod 644 "$APT_ETC/sources.list.d/$name" 2>/dev/null || true
    rm -f "$tmp"
    log "added $APT_ETC/sources.list.d/$name"
}

# The source stanzas of armnn apt knows. Read whole, never piped into `grep -q`: under pipefail
# an early-exiting grep makes the pipeline fail (SIGPIPE) even when it matched.
_showsrc() { apt-cache showsrc armnn 2>/dev/null || true; }

# src_versions RELEASE: the source package versions of armnn apt knows for RELEASE, highest first.
src_versions() {
    local text
    text="$(_showsrc)"
    sed -n "s/^Version: \($1-.*\)/\1/p" <<<"$text" | sort -Vr -u
}

# has_src_version VERSION: does apt know the source package armnn=VERSION?
has_src_version() {
    local text
    text="$(_showsrc)"
    grep -qx "Version: $1" <<<"$text"
}

# fetch_source VERSION DEST LOG APT_EDITS SUITE: the source package armnn=VERSION unpacked
# into DEST/armnn-<upstream>/ (Debian patches applied when the .dsc can be had; else the
# checksummed orig tarball alone). Adds the deb-src entry for SUITE only when APT_EDITS=1.
fetch_source() {
    local ver="$1" dest="$2" logf="$3" edits="$4" suite="$5" up="${1%%-*}" tmp="$2.tmp"
    if ! has_src_version "$ver"; then
        if ! has_deb_src "$suite"; then
            [ "$edits" = 1 ] || die "the armnn $ver source needs a deb-src entry for $suite: run 'bash scripts/test.sh' once (or tests/armnn_runtime/build.sh --apt-sources $up)"
            ensure_deb_src_entry "$suite"
        fi
        log "apt-get update (for deb-src $suite)"
        as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >>"$logf" 2>&1 \
            || { tail -20 "$logf" >&2; die "apt-get update failed"; }
        has_src_version "$ver" || die "apt knows no source package armnn=$ver (deb-src $suite)"
    fi
    log "fetching source armnn=$ver"
    rm -rf "$tmp"; mkdir -p "$tmp"
    if ! (cd "$tmp" && apt-get source -q "armnn=$ver" >>"$logf" 2>&1); then
        # Some mirrors serve the orig tarball but not the .dsc: check it against the index instead.
        log "apt-get source failed; trying the orig tarball alone (see $logf)"
        rm -rf "$tmp"; mkdir -p "$tmp"
        (cd "$tmp" && apt-get source -q --download-only "armnn=$ver" >>"$logf" 2>&1) || true
        local orig="$tmp/armnn_$up.orig.tar.xz" want
        [ -f "$orig" ] || die "apt-get source armnn=$ver failed (see $logf)"
        want="$(_showsrc | awk -v v="$ver" -v f="armnn_$up.orig.tar.xz" 'BEGIN{RS=""; FS="\n"}
                $0 ~ ("(^|\n)Version: " v "(\n|$)") { for (i=1;i<=NF;i++) {
                    if ($i ~ /^Checksums-Sha256:/) c=1; else if ($i ~ /^[^ ]/) c=0
                    else if (c) { split($i, w, " "); if (w[3]==f) { print w[1]; exit } } } }')"
        [ -n "$want" ] && [ "$(sha256sum "$orig" | cut -d' ' -f1)" = "$want" ] \
            || die "armnn_$up.orig.tar.xz does not match the sha256 of the apt index"
        tar -xf "$orig" -C "$tmp" || die "cannot unpack $orig"
    fi
    [ -d "$tmp/armnn-$up/src/armnnDeserializer" ] || die "unexpected source layout in $tmp"
    rm -f "$tmp"/*.tar.* "$tmp"/*.dsc
    echo "$ver" > "$tmp/armnn-$up/.harness-source-version"
    rm -rf "$dest"; mv "$tmp" "$dest"
}
