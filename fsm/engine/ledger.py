"""What one stream's engine reports: output events, diagnostics, and which spec parts it used.

The ledger knows the current wire event number, so every diagnostic and limit error names the
event that caused it. In strict mode a diagnostic the spec marks as a violation raises at once.
"""

from __future__ import annotations

from collections import Counter

from fsm.errors import LimitExceeded, RemoteProtocolError
from fsm.options import Policies
from fsm.results import Diagnostic, Output, Severity
from fsm.spec import identity_spec


class Ledger:
    def __init__(self, policies: Policies, *, strict: bool) -> None:
        self.policies = policies
        self.strict = strict
        self.event: int | None = None
        self.outputs: list[Output] = []
        self.diagnostics: list[Diagnostic] = []
        self.transitions: Counter[str] = Counter()
        self._spec = identity_spec()
        # Pre-filled, so counting a rule is one dict update and an undeclared rule is a KeyError.
        self.rules: dict[str, int] = dict.fromkeys(sorted(self._spec.rule_names), 0)
        self.withhold = False
        """Set for a wire whose final arguments may replace the streamed text (OpenAI Responses
        ``.done``): no call's text is output as append-safe before the call finishes."""
        self.work = 0
        """Characters scanned and compared, and routing candidates visited: the fuzzer checks that
        this stays linear in the input."""

    def emit(self, output: Output) -> None:
        self.outputs.append(output)

    def drain(self) -> list[Output]:
        out, self.outputs = self.outputs, []
        return out

    def diagnose(self, code: str, message: str) -> None:
        spec = self._spec.diagnostic_by_code.get(code)
        if spec is None:
            raise KeyError(f"diagnostic {code!r} is not declared in specs/identity.toml")
        self.diagnostics.append(Diagnostic(self.event, code, message, Severity(spec.severity)))
        self.rules[spec.rule] += 1
        if self.strict and spec.violation:
            raise RemoteProtocolError(f"{code}: {message}", event=self.event, rule=spec.rule)

    def apply(self, rule: str) -> None:
        """Record that the registry decided by ``rule`` (for rule coverage)."""
        self.rules[rule] += 1  # KeyError: the rule is not declared in specs/identity.toml

    def limit(self, message: str) -> None:
        raise LimitExceeded(message, event=self.event, rule="limits")
