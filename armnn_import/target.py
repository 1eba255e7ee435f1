"""Arm NN releases as capabilities: which format a file is written in.

A target is the release whose serialized format the output follows. "19.02",
the default, is the seed schema (schema/ArmnnSchema.fbs) that every later
release still reads; "20.08" and "23.08" are the richer formats described in
schema/releases/. Nothing else in the converter names a release: a converter
asks `target.has(LayerType.X)` or `target.at_least("20.08")`, and the writer
and reader pick the bindings with `target.bindings`.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass

from .errors import ConversionError

RELEASES = ("19.02", "20.08", "23.08")
DEFAULT = "19.02"

# What a reader of each release runs, for the report and --help.
RUNS_ON = {
    "19.02": "every Arm NN release from 19.02 on (20.08 and 23.08 tested)",
    "20.08": "Arm NN 20.08 and later (20.08 and 23.08 tested)",
    "23.08": "Arm NN 23.08 and later (23.08 tested)",
}


# From this release on, every CpuRef (and CpuAcc) workload builds its profiling event's name, the
# layer's name + "_" + a label, on every inference (RefWorkloadUtils.hpp,
# ARMNN_SCOPED_PROFILING_EVENT_REF_NAME_GUID; 20.08 passes a fixed label): a long name costs time
# per layer per inference, so layers get short names by default (passes/names.py).
NAMES_COST_FROM = "23.08"


def _key(release: str) -> tuple[int, int]:
    major, minor = release.split(".")
    return int(major), int(minor)


# Answers per (release, ...): verify() and the writer ask them for every layer.
_AT_LEAST: dict[tuple[str, str], bool] = {}
_HAS: dict[tuple, bool] = {}


@dataclass(frozen=True)
class Target:
    release: str

    def at_least(self, release: str) -> bool:
        got = _AT_LEAST.get((self.release, release))
        if got is None:
            got = _AT_LEAST[(self.release, release)] = _key(self.release) >= _key(release)
        return got

    def has(self, thing) -> bool:
        """Whether this release's format has a layer type (or anything with a `since`)."""
        key = (self.release, type(thing), thing)  # (the type too: equal IntEnums of two enums)
        got = _HAS.get(key)
        if got is None:
            from .ir.kinds import since
            got = _HAS[key] = self.at_least(since(thing))
        return got

    @property
    def bindings(self):
        """The generated FlatBuffers bindings of this release's format."""
        name = "armnn_schema_generated" if self.release == "19.02" else \
            f"armnn_schema_{self.release.replace('.', '_')}_generated"
        return importlib.import_module(f"armnn_import.serialize.{name}")

    def __str__(self) -> str:
        return self.release


def get(release: str | Target | None) -> Target:
    """The Target for a release name ("19.02", "20.08", "23.08"); None is the default."""
    if isinstance(release, Target):
        return release
    release = DEFAULT if release is None else str(release).strip()
    if release not in RELEASES:
        raise ConversionError(f"unknown target {release!r}: the targets are {', '.join(RELEASES)} "
                              "(the Arm NN release whose format to write)")
    return Target(release)
