"""The scanner spec (``specs/scanner.toml``) stepped directly, one character at a time: the
reference the compiled scanner (fsm.engine.scanner) is tested against, and how the conformance
harness counts scanner transitions for coverage."""

from __future__ import annotations

from collections.abc import Iterator

from fsm.engine.scanner import ANY, OTHER
from fsm.spec import MachineSpec, scanner_spec


def spec_steps(text: str, spec: MachineSpec | None = None) -> Iterator[tuple[int, str, str]]:
    """Step the scanner spec's table directly, one character at a time, without the compiled
    stop patterns. Yields (offset, transition label, state after) per character consumed,
    and stops at the first character no transition takes (after the value, anything but
    whitespace)."""
    spec = spec or scanner_spec()
    classes = {ch: k for k, chars in reversed(list(spec.classes.items())) for ch in chars}
    state, depth = spec.machine.initial, 0
    for offset, ch in enumerate(text):
        klass = classes.get(ch, OTHER)
        for src, t in spec.edges():
            if src != state or t.trigger not in (klass, ANY):
                continue
            if "outermost" in t.guards and depth != 1:
                continue
            depth += {"push": 1, "pop": -1}.get(t.action or "", 0)
            state = t.destination(src)
            yield offset, t.label(src), state
            break
        else:
            return
