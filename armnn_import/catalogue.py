"""The operator catalogue: every operator the installed frontends convert,
with its version range and the Arm NN layers it becomes, read from the
frontends' registries (`armnn-import ops`; docs/operators.md is its
--markdown output)."""
from __future__ import annotations

from .errors import REASON_CODES, LoadError

def registries(formats=None) -> dict:
    """format name -> OpRegistry of the installed frontends (all, or `formats`)."""
    from .discovery import available_frontends

    eps = available_frontends()
    unknown = sorted(set(formats or ()) - set(eps))
    if unknown:
        raise LoadError(f"no frontend installed for format {unknown[0]!r} "
                        f"(installed: {', '.join(sorted(eps)) or 'none'})")
    out = {}
    for name in sorted(formats or eps):
        try:
            out[name] = eps[name].load().registry
        except Exception as e:  # noqa: BLE001 - an installation problem, named in one line
            raise LoadError(f"the '{name}' frontend cannot be loaded: {type(e).__name__}: {e}") from e
    return out


def rows(registry, target=None) -> list[tuple[str, str, str, str]]:
    """(operator, version range, layers, notes) for every registry entry; with a target
    (armnn_import.target.Target), only the entries its format can hold. Without one, an
    entry that needs a richer format says so in its notes."""
    out = []
    for e in registry.entries():
        if target is not None and not target.at_least(e.needs):
            continue
        needs = f"needs --target {e.needs} [needs-target]" if target is None and e.needs != "19.02" else ""
        notes = "; ".join(n for n in (needs, e.notes) if n)
        out.append((e.op, _versions(e), ", ".join(e.layers) or "-", notes))
    for e in getattr(registry, "quantized_entries", list)():
        out.append((f"{e.op} (quantized)", _versions(e), ", ".join(e.layers) or "-", e.notes))
    return out


def refusal_rows(registry) -> list[tuple[str, str, str]]:
    """(operator, reason code, reason) for every operator the registry refuses on purpose."""
    return [(op, r.code, r.reason) for op, r in getattr(registry, "refusals", dict)().items()]


def _entry_json(e) -> dict:
    """One registry entry, with what it refuses by itself: the targets older than the one it
    needs (needs-target); a check refuses some nodes too, each with its own code."""
    from .target import RELEASES, get
    d = {"op": e.op, "versions": _versions(e), "layers": list(e.layers), "notes": e.notes, "needs": e.needs,
         "checked": e.check is not None, "refusals": []}
    older = [r for r in RELEASES if not get(r).at_least(e.needs)]
    if older:
        reason, hint, code = e.target_problem(get(older[0]))
        d["refusals"].append({"code": code, "targets": older, "reason": reason, "hint": hint})
    return d


def to_json(regs: dict, target=None) -> dict:
    """`armnn-import ops --json`: the reason codes, and per format its entries (with their
    refusals), its quantized variants and the operators it refuses with their codes."""
    out = {"reason_codes": dict(REASON_CODES), "target": str(target) if target is not None else None}
    for name, reg in regs.items():
        entries = [e for e in reg.entries() if target is None or target.at_least(e.needs)]
        out[name] = {
            "entries": [_entry_json(e) for e in entries],
            "quantized": [_entry_json(e) for e in getattr(reg, "quantized_entries", list)()],
            "refused": [{"op": op, "code": code, "reason": reason} for op, code, reason in refusal_rows(reg)]}
    return out


def _versions(e) -> str:
    return str(e.since) if e.until == e.since else e.version_range


def _title(name: str) -> str:
    """How the frontend writes its format's name ("ONNX"), as its plugin declares it."""
    from .discovery import load_frontend
    return getattr(load_frontend(name), "title", name)


def _version_word(name: str) -> str:
    """What the frontend calls an operator's version ("opset"), as its plugin declares it."""
    from .discovery import load_frontend
    return getattr(load_frontend(name), "version_word", "version")


def format_text(regs: dict, target=None) -> str:
    out = [f"for the Arm NN {target} format (--target {target})", ""] if target is not None else []
    for name, reg in regs.items():
        table = rows(reg, target)
        header = ("operator", _version_word(name), "Arm NN layers", "notes")
        widths = [max(len(r[k]) for r in table + [header]) for k in range(3)]
        out.append(f"{_title(name)}: {len({r[0] for r in table})} operators ({len(table)} version ranges)")
        for r in [header] + table:
            out.append("  " + "  ".join(c.ljust(w) for c, w in zip(r[:3], widths)) + "  " + r[3])
        refused = refusal_rows(reg) if target is None else []  # (a target's view lists what it takes)
        if refused:
            out.append(f"  refused on purpose ({len(refused)}):")
            width = max(len(r[0]) for r in refused)
            out += [f"    {op.ljust(width)}  [{code}] {reason}" for op, code, reason in refused]
        out.append("")
    return "\n".join(line.rstrip() for line in out).rstrip() + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ") if text else ""


def format_markdown(regs: dict) -> str:
    out = ["# Supported operators", "",
           "Generated by `armnn-import ops --markdown > docs/operators.md` from the frontends' "
           "operator registries; do not edit by hand (`tests/test_catalogue.py` checks that it is "
           "current). A version range `7+` means version 7 and later, `1-5` versions 1 to 5, `1` version 1 only. "
           "Operators not listed are refused with a one-line reason per node; every refusal carries one of "
           "the reason codes below (the CLI's line ends with it, `--report` and `armnn-import ops --json` "
           "carry it).", "", "| reason code | meaning |", "|---|---|"]
    out += [f"| {code} | {_cell(text)} |" for code, text in REASON_CODES.items()]
    out.append("")
    for name, reg in regs.items():
        word = _version_word(name)
        out += [f"## {_title(name)}", "",
                f"{len(reg.ops())} operators.", "",
                f"| operator | {word} | Arm NN layers | notes |", "|---|---|---|---|"]
        out += [f"| {op} | {v} | {layers} | {_cell(notes)} |" for op, v, layers, notes in rows(reg)]
        out.append("")
    out += ["## Refused operators", "",
            "Operators without a converter that are refused with a reason of their own (any other "
            "unregistered operator is refused as `unsupported-op`).", ""]
    for name, reg in regs.items():
        out += [f"### {_title(name)}", "", "| operator | reason code | reason |", "|---|---|---|"]
        out += [f"| {op} | {code} | {_cell(reason)} |" for op, code, reason in refusal_rows(reg)]
        out.append("")
    return "\n".join(out)
