"""Node cases of listed operators that cannot pass, each with its reason.
test_conformance.py fails when one of them starts passing (keep this current)."""

EXPECTED_FAILURES: dict[str, str] = {
}
