"""Audit 129 of task 124 (policy stray-after-the-calls-answer): hostile inputs for the strays moved
into the answer of the model's calls they came after."""

from __future__ import annotations

import builtins

import pytest

from fsm import history
from fsm.history import chains
from tests.test_will_continue104 import ASK, model, resp, user
from tests.test_will_continue104 import call as gemini_call

GONE = history.RepairPolicy().placeholder


def test_a_stray_goes_into_the_calls_answer_past_a_content_of_a_role_gemini_lacks() -> None:
    """The calls' placeholders written after a ``tool`` content kept between (unknown-role-between):
    the stray went nowhere, an ``AssertionError`` escaped repair (fuzz129 seed 592)."""
    g = {"functionCall": {"name": "g", "args": {}}}
    conversation = [
        model(gemini_call("a")),
        {"role": "function", "parts": [resp(1, True)]},
        user(g),  # a call in the user's content: moved into a model content of its own
        {"role": "tool", "parts": []},
        model(resp(2), resp(3, True)),  # 2 goes on with 1 (a stray); 3 is a second result to a
    ]
    fixed, changes = history.repair(conversation, format="gemini")
    found = {f.kind.value for f in history.check(fixed, "gemini").findings if f.kind in history.REJECTED}
    assert found == {"unknown-role"}  # the tool content, kept as it came
    assert fixed == [
        model(gemini_call("a")),
        user(resp(1, True)),
        model(g),
        {"role": "tool", "parts": []},
        user(resp(2), {"functionResponse": {"name": "g", "response": {"error": GONE}}}),
    ]
    assert ("moved-misplaced-result", 5, "a") in [(c.kind, c.message, c.id) for c in changes]


class _Slot(int):
    """A part's index that counts each comparison made with it (the work of scanning a list for it)."""

    compared = 0

    def __eq__(self, other: object) -> bool:
        _Slot.compared += 1
        return int(self) == other

    __hash__ = int.__hash__


def _compared(monkeypatch: pytest.MonkeyPatch, calls: int) -> int:
    """Comparisons of parts' indexes ``chains`` makes repairing one model content of ``calls`` calls
    and a stray after them."""
    monkeypatch.setattr(chains, "range", lambda n: map(_Slot, builtins.range(n)), raising=False)
    monkeypatch.setattr(
        chains, "enumerate", lambda xs: ((_Slot(k), x) for k, x in builtins.enumerate(xs)), raising=False
    )
    conversation = [ASK, model(gemini_call("a")), user(resp(1, True))]
    conversation += [model(*(gemini_call(f"z{k}") for k in builtins.range(calls)), resp(2))]
    _Slot.compared = 0
    fixed, _ = history.repair(conversation, format="gemini")
    assert fixed[-1]["parts"][0] == resp(2)  # first in the calls' answer
    return _Slot.compared


def test_the_parts_kept_beside_the_calls_are_counted_not_scanned_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each part's index was looked for in the list of the content's calls: 40,000 calls in one model
    content took 23 s to repair (1.2 s now, as before task 124)."""
    small, large = _compared(monkeypatch, 500), _compared(monkeypatch, 1000)
    assert large <= 2 * small + 10


def test_a_stray_goes_first_into_a_content_of_a_role_gemini_lacks_answering_the_calls() -> None:
    """A ``tool`` content holding the calls' responses is their answer, kept as it came: the stray
    was written after it, past its chain's last response (``duplicate-result`` after repair), or an
    ``AssertionError`` escaped (fuzz129 seed 24130)."""
    d = {"functionCall": {"id": "d", "name": "g", "args": {}}}
    conversation = [
        model(gemini_call("a")),
        user(resp(1, True)),
        model(d, resp(2, True)),
        {"role": "tool", "parts": [resp(3, None, "d"), resp(4, False)]},
    ]
    fixed, _ = history.repair(conversation, format="gemini")
    found = {f.kind.value for f in history.check(fixed, "gemini").findings if f.kind in history.REJECTED}
    assert found == {"unknown-role"}
    assert fixed[2:] == [model(d), {"role": "tool", "parts": [resp(2, True), resp(3, None, "d"), resp(4, False)]}]
