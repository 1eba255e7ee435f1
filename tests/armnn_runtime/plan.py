"""How the runtime harness gets Arm NN <release> on this Debian release: the decision only.

    python3 tests/armnn_runtime/plan.py RELEASE [DEBIAN_VERSION]   # shell assignments (build.sh evals them)

DEBIAN_VERSION is the text of /etc/debian_version ("12.11", "13.0", "trixie/sid"); without it the
file is read. Standard library only: build.sh runs this with the system python3, before the
project is installed. tests/armnn_runtime/test_harness.py checks every path, with no Debian 13
machine needed; the apt calls themselves are build.sh's.

Methods:
  packages  the packaged libarmnn and CpuRef backend, plus the deserializer (which Debian does not
            package) compiled from the same release's Debian source package
  source    libarmnn, CpuRef and the deserializer built from a Debian source package with CMake
  none      not available here: the release's tests skip with `reason`
"""
from __future__ import annotations

import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

RELEASES = ("20.08", "23.08")
CODENAMES = {"bookworm": 12, "trixie": 13}

_COMMON = ("flatbuffers-compiler", "libflatbuffers-dev", "g++", "dpkg-dev", "xz-utils")


@dataclass(frozen=True)
class Plan:
    release: str
    debian: int | None          # major Debian version, None when unknown
    method: str                 # "packages", "source" or "none"
    key: str                    # cache directory name, e.g. "23.08-deb12"
    source_suite: str = ""      # the suite whose deb-src entry has the release's source package
    packages: tuple[str, ...] = ()
    reason: str = ""            # why (for "none": the one-line skip reason)

    def shell(self) -> str:
        fields = {"PLAN_RELEASE": self.release, "PLAN_DEBIAN": str(self.debian or ""),
                  "PLAN_METHOD": self.method, "PLAN_KEY": self.key,
                  "PLAN_SOURCE_SUITE": self.source_suite, "PLAN_PACKAGES": " ".join(self.packages),
                  "PLAN_REASON": self.reason}
        return "".join(f"{k}={shlex.quote(v)}\n" for k, v in fields.items())


def debian_major(text: str | None) -> int | None:
    """12 for "12.11", 13 for "13.1" or "trixie/sid"; None for anything else."""
    text = (text or "").strip().lower()
    m = re.match(r"(\d+)(\.\d+)*$", text)
    if m:
        return int(m.group(1))
    return CODENAMES.get(text.split("/")[0])


def read_debian_version(path: str = "/etc/debian_version") -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def plan(release: str, debian_version: str | None) -> Plan:
    """The way to get Arm NN `release` on the Debian whose /etc/debian_version is `debian_version`."""
    if release not in RELEASES:
        raise ValueError(f"unknown Arm NN release {release!r} (known: {', '.join(RELEASES)})")
    major = debian_major(debian_version)
    key = f"{release}-deb{major}" if major else f"{release}-unknown"
    if release == "20.08" and major == 12:
        return Plan(release, major, "packages", key, "bookworm",
                    ("libarmnn-dev", "libarmnn-cpuref-backend22", "libarmnntfliteparser-dev",
                     "libboost-dev") + _COMMON,
                    "Debian 12 packages Arm NN 20.08 (libarmnn22) but not its deserializer")
    if release == "23.08" and major == 12:
        return Plan(release, major, "source", key, "trixie", ("cmake", "make") + _COMMON,
                    "Debian 12 has no Arm NN 23.08: built from Debian 13's armnn_23.08.orig.tar.xz")
    if release == "23.08" and major == 13:
        return Plan(release, major, "packages", key, "trixie",
                    ("libarmnn-dev", "libarmnn-cpuref-backend33") + _COMMON,
                    "Debian 13 packages Arm NN 23.08 (libarmnn33) but not its deserializer")
    if release == "20.08" and major == 13:
        return Plan(release, major, "source", key, "bookworm",
                    ("cmake", "make", "patch", "libboost-dev", "libboost-filesystem-dev", "libboost-system-dev",
                     "libboost-program-options-dev", "libboost-test-dev") + _COMMON,
                    "Debian 13 has no Arm NN 20.08: libarmnn, CpuRef, the TfLite parser and the serializer built "
                    "from Debian 12's armnn 20.08 source package (build-20.08-source.sh)")
    where = f"Debian {major}" if major else f"this system (/etc/debian_version: {debian_version or 'missing'})"
    return Plan(release, major, "none", key,
                reason=f"no known way to get Arm NN {release} on {where}; the harness knows Debian 12 and 13")


def main(argv: list[str]) -> int:
    if not 1 <= len(argv) <= 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    version = argv[1] if len(argv) == 2 else read_debian_version()
    try:
        sys.stdout.write(plan(argv[0], version).shell())
    except ValueError as e:
        print(f"plan.py: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
