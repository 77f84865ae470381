"""Hostile audit 94: the merge of hist89 (history leftovers, caller-program-first, unjudged-says-no-format),
attacked with a fuzzer of random Anthropic and Responses histories, and the gap it left.

Found and fixed:

1. ``fsm.messages`` sent back the client calls of a program that does not go back (a program whose
   fingerprint, item id, call id or code is empty or no text; said ``part-not-reassembled`` where
   it was read): each named as its ``caller`` a program the request lacks, so ``fsm.history`` read
   them ``unknown-caller`` and the API, without stored state, had nothing to resume. They are left
   out now, as a call that did not complete is, and ``messages.omitted(result, "openai-responses")``
   lists them (policy calls-stay-with-their-program, :func:`fsm.messages.responses.stranded_calls`):
   not to be run nor answered. A call naming in text a program the turn does not hold still goes
   back (an earlier turn's program may be it, which the history check tells).

2. ``fsm.history.check`` took a ``program_output`` item naming (by its ``call_id``) a program no
   ``program`` item before it has: it is ``unknown-caller`` now, as a call naming one is (policy
   caller-program-first), and repair keeps it and says so (``kept-unknown-caller``).

Judged fine (a fuzzer of random Anthropic histories, mostly sound programmatic loops mutated, and
random Responses histories with programs, callers, program outputs and item references; some
thousands each, both repair policies):

* check and repair raise nothing but fsm's errors (an Anthropic message both calling and answering
  is LocalProtocolError, as documented); neither mutates its input; a second repair changes nothing
  (kept-* said again only); ``check(repair(h))`` finds nothing rejected but what a kept-* change
  says; no block goes without a drop said; each change with an id names an input message holding it
  (``dropped-reasoning`` names the reasoning item, its id the call that followed, by design; a
  ``dropped-empty-message`` "repair left nothing in it" names a message repair emptied);
* check and repair of 2k and 32k messages take time in proportion;
* ``Report.format`` None: ``check(h, report.format)`` gives the same report and ``repair`` the same
  history under None, "auto" and the report's format; ``toolcall-fsm history check`` (and
  ``--json``: ``"format": null``) on empty, plain-text, system-only and request-object histories;
* under ``RepairPolicy(dangling="drop-call")`` a server call waiting past client calls repair drops
  all of is dropped too, even where it would end the history as a paused turn check accepts
  (``[user, assistant[tool_use t1], assistant[server_tool_use]]``): the documented rule of
  ``after_run.still_waits`` (nothing pauses it: the code waits on results that will never come), and
  as before hist89 (task 98 keeps it: with those calls gone it is a paused turn's,
  ``tests/test_ptc_leftovers98.py``);
* a call naming in text a program its turn does not hold goes back (see 1); a stream that gives a
  program's calls before the program itself would send them so, read ``unknown-caller``: no wire
  was seen doing so.
"""

from __future__ import annotations

from typing import Any

import pytest

import fsm
from fsm import history, messages
from fsm.history import Kind
from tests.test_programmatic_responses import ASK, CALLER, OUTPUT, PROGRAM, REASONING, _call, _events, _read

FAULTS = [("fingerprint", ""), ("fingerprint", None), ("id", None), ("code", ""), ("call_id", 5)]


def _turn(key: str, value: Any) -> tuple[dict[str, Any], fsm.Result]:
    program = {**PROGRAM, key: value}
    caller = {"type": "program", "caller_id": program["call_id"]}  # its calls name it as it came
    return program, _read(_events(1, [REASONING, program, _call(1, caller), _call(2, caller), _call(3, None)]))


@pytest.mark.parametrize(("key", "value"), FAULTS, ids=[f"{k}={v!r}" for k, v in FAULTS])
def test_the_calls_of_a_program_that_cannot_go_back_stay_with_it(key: str, value: Any) -> None:
    """Before: the program was left out and its calls went back naming it (``unknown-caller``)."""
    _, result = _turn(key, value)
    assert any(d.code == "part-not-reassembled" for d in result.diagnostics)  # the program: said where read
    items = messages.assistant_message(result, "openai-responses")
    assert [(item["type"], item["call_id"]) for item in items] == [("function_call", "call_3")]  # the model's own
    left = messages.omitted(result, "openai-responses")
    assert [call.id for call in left] == ["call_1", "call_2"]
    answers = [messages.tool_result(c, "r", "openai-responses") for c in result.complete_calls if c not in left]
    assert history.check([*ASK, *items, *answers]).findings == ()
    # Complete all the same: omitted() without the format, and other formats, are as before.
    assert messages.omitted(result) == () and messages.omitted(result, "anthropic") == ()
    assert len(messages.assistant_message(result, "anthropic")["content"]) == 3
    # Nor does incomplete="include" send them, nor incomplete_answers answer them.
    assert messages.assistant_message(result, "openai-responses", incomplete="include") == items
    assert messages.incomplete_answers(result, "openai-responses") == []


def test_a_call_naming_a_program_the_turn_does_not_hold_goes_back() -> None:
    """A program's calls in a later response (after its outputs resumed it) name a program of an
    earlier turn: they go back, and the history that holds that program checks clean."""
    result = _read(_events(2, [_call(4)]))
    assert messages.omitted(result, "openai-responses") == ()
    items = messages.assistant_message(result, "openai-responses")
    assert [item["caller"] for item in items] == [CALLER]
    answers = [messages.tool_result(call, "r", "openai-responses") for call in result.complete_calls]
    assert history.check([*ASK, PROGRAM, *items, *answers]).findings == ()


def test_a_sound_program_keeps_its_calls() -> None:
    result = _read(_events(1, [REASONING, PROGRAM, _call(1), _call(2)]))
    assert messages.omitted(result, "openai-responses") == ()
    kinds = [item["type"] for item in messages.assistant_message(result, "openai-responses")]
    assert kinds == ["reasoning", "program", "function_call", "function_call"]


def test_omitted_refuses_an_unknown_format() -> None:
    with pytest.raises(fsm.errors.LocalProtocolError):
        messages.omitted(_read(_events(1, [_call(1)])), "responses")  # type: ignore[arg-type]


def test_a_program_output_naming_a_program_the_history_lacks() -> None:
    """Before: nothing was said of it."""
    answer = {"type": "function_call_output", "call_id": "call_1", "output": "r"}
    turn = [_call(1), answer, OUTPUT]
    report = history.check([*ASK, *turn])
    assert [(f.kind, f.id, f.message) for f in report.findings] == [
        (Kind.UNKNOWN_CALLER, "call_1", 2),
        (Kind.UNKNOWN_CALLER, "call_prog", 4),
    ]
    assert "program_output" in report.findings[1].detail
    fixed, changes = history.repair([*ASK, *turn])
    assert fixed == [*ASK, *turn]
    assert [(c.kind, c.message) for c in changes] == [("kept-unknown-caller", 2), ("kept-unknown-caller", 4)]
    assert history.check([*ASK, PROGRAM, *turn]).findings == ()
    reference = {"type": "item_reference", "id": "prog_1"}  # it may be the program
    assert history.check([*ASK, reference, *turn]).findings == ()
