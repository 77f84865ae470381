"""Messages that come empty (``empty-message``, policy no-content-is-empty in fsm/history/empty.py).

Models return empty turns and agents store them; sent back, the request is refused: Anthropic "all
messages must have non-empty content except for the optional final assistant message"
(anthropics/claude-code#6774, corespeed-io/zypher-agent#122), Gemini "contents.parts must not be
empty" (google-gemini/gemini-cli#317, #554), Converse "The content field in the Message object ... is
empty" (theopenco/llmgateway#3127, langchain-ai/langchainjs#11113), OpenAI chat a null content
without ``tool_calls`` (vercel/ai#14950, which found ``""`` accepted). check reports such a message,
the rest read as if it were gone; repair drops it (``dropped-empty-message``) and merges the
neighbours of one role it brings together where the format wants that. Anthropic's final assistant
message may be empty (a prefill). Hand-made cases per format, then seeded random histories with
empty messages sprinkled in: repaired, they pass check, repair is idempotent, every result is kept.
"""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest

from fsm import history
from fsm.errors import LocalProtocolError
from fsm.history.empty import DROPPED, NO_LONGER_LAST

EMPTY = "empty-message"


def _found(messages: list[dict[str, Any]], fmt: Any) -> list[tuple[str, int]]:
    return [(f.kind.value, f.message) for f in history.check(messages, fmt).findings]


def _clean(fixed: list[dict[str, Any]], fmt: Any) -> None:
    assert history.check(fixed, fmt).findings == ()
    assert history.repair(fixed, None, fmt) == (fixed, [])


def _changes(changes: list[history.Change]) -> list[tuple[str, int]]:
    return [(c.kind, c.message) for c in changes]


# Anthropic


def _a_call(key: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "tool_use", "id": key, "name": "f", "input": {}}]}


def _a_result(key: str, tag: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": key, "content": tag}]}


def test_anthropic_empty_end_turn_stored_in_history_is_reported_dropped_and_its_neighbours_merged() -> None:
    """zypher-agent#122: an end_turn with no content block, stored, then the user's next message."""
    messages = [
        {"role": "user", "content": "list the files"},
        _a_call("toolu_1"),
        _a_result("toolu_1", "a.txt"),
        {"role": "assistant", "content": []},
        {"role": "user", "content": "and now?"},
    ]
    report = history.check(messages, "anthropic")
    assert [(f.kind.value, f.id, f.message) for f in report.findings] == [(EMPTY, "", 4)]
    assert report.rejected
    fixed, changes = history.repair(messages, None, "anthropic")
    assert fixed == [
        messages[0],
        messages[1],
        {"role": "user", "content": [*messages[2]["content"], {"type": "text", "text": "and now?"}]},
    ]
    assert _changes(changes) == [("dropped-empty-message", 4), ("merged-messages", 5)]
    assert changes[0].detail == DROPPED
    _clean(fixed, "anthropic")


@pytest.mark.parametrize("empty", [{"role": "assistant", "content": ""}, {"role": "assistant"}])
def test_anthropic_empty_string_or_missing_content_mid_history(empty: dict[str, Any]) -> None:
    messages = [
        {"role": "user", "content": "a"},
        empty,
        {"role": "user", "content": "b"},
        {"role": "assistant", "content": "c"},
    ]
    assert _found(messages, "anthropic") == [(EMPTY, 2)]
    fixed, changes = history.repair(messages, None, "anthropic")
    assert fixed == [
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        messages[3],
    ]
    assert _changes(changes) == [("dropped-empty-message", 2), ("merged-messages", 3)]
    _clean(fixed, "anthropic")


@pytest.mark.parametrize("content", [[], ""])
def test_anthropic_final_assistant_may_be_empty_but_a_final_user_message_may_not(content: Any) -> None:
    prefill = [{"role": "user", "content": "a"}, {"role": "assistant", "content": content}]
    assert _found(prefill, "anthropic") == []
    assert history.repair(prefill, None, "anthropic") == (prefill, [])
    last_user = [*prefill[:1], {"role": "assistant", "content": "b"}, {"role": "user", "content": content}]
    assert _found(last_user, "anthropic") == [(EMPTY, 3)]
    fixed, changes = history.repair(last_user, None, "anthropic")
    assert fixed == last_user[:2] and _changes(changes) == [("dropped-empty-message", 3)]


def test_anthropic_empty_final_assistant_goes_once_repair_writes_a_message_after_it() -> None:
    """A dangling call's placeholder follows the assistant run: the empty prefill is then mid-history."""
    messages = [{"role": "user", "content": "a"}, _a_call("toolu_1"), {"role": "assistant", "content": []}]
    assert [kind for kind, _ in _found(messages, "anthropic")] == ["dangling"]
    fixed, changes = history.repair(messages, None, "anthropic")
    assert _changes(changes) == [("placeholder-result", 2), ("dropped-empty-message", 3)]
    assert changes[1].detail == NO_LONGER_LAST
    assert [m["role"] for m in fixed] == ["user", "assistant", "user"]
    _clean(fixed, "anthropic")


def test_anthropic_only_no_content_is_empty_and_only_in_a_known_role() -> None:
    """Policy no-content-is-empty: a block, even an empty text block, is content; a role the format
    lacks is unknown-role, kept for the caller."""
    blank_text = {"role": "assistant", "content": [{"type": "text", "text": ""}]}
    messages = [{"role": "user", "content": "a"}, blank_text, {"role": "user", "content": "b"}]
    assert _found(messages, "anthropic") == []
    odd = [{"role": "user", "content": "a"}, {"role": "system", "content": ""}, {"role": "assistant", "content": "b"}]
    assert _found(odd, "anthropic") == [("unknown-role", 2)]
    assert _changes(history.repair(odd, None, "anthropic")[1]) == [("kept-unknown-role", 2)]


# Gemini


def _g_call(key: str) -> dict[str, Any]:
    return {"role": "model", "parts": [{"functionCall": {"id": key, "name": "f", "args": {}}}]}


def _g_result(key: str, tag: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"functionResponse": {"id": key, "name": "f", "response": {"tag": tag}}}]}


def _g_text(role: str, words: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"text": words}]}


def test_gemini_empty_model_content_after_a_function_response() -> None:
    """gemini-cli#317/#554: the model answers a function response with a content of no parts."""
    messages = [
        _g_text("user", "go"),
        _g_call("a"),
        _g_result("a", "r"),
        {"role": "model", "parts": []},
        _g_text("user", "thanks"),
    ]
    assert _found(messages, "gemini") == [(EMPTY, 4), ("user-after-user", 5)]
    fixed, changes = history.repair(messages, None, "gemini")
    between = {"role": "model", "parts": [{"text": history.RepairPolicy().between}]}
    assert fixed == [*messages[:3], between, messages[4]]  # the responses keep a content of their own
    assert _changes(changes) == [("dropped-empty-message", 4), ("placeholder-model-turn", 5)]
    _clean(fixed, "gemini")


@pytest.mark.parametrize("empty", [{"role": "model", "parts": []}, {"role": "model"}, {"parts": []}, {"role": "user"}])
def test_gemini_empty_content_of_any_role_is_dropped_and_the_users_around_it_merged(empty: dict[str, Any]) -> None:
    messages = [_g_text("user", "a"), _g_text("model", "b"), _g_text("user", "c"), empty, _g_text("user", "d")]
    assert _found(messages, "gemini") == [(EMPTY, 4), ("user-after-user", 5)]
    fixed, changes = history.repair(messages, None, "gemini")
    assert fixed == [*messages[:2], {"role": "user", "parts": [{"text": "c"}, {"text": "d"}]}]
    assert _changes(changes) == [("dropped-empty-message", 4), ("merged-messages", 5)]
    _clean(fixed, "gemini")


def test_gemini_final_empty_model_content_is_reported_too() -> None:
    messages = [_g_text("user", "a"), {"role": "model", "parts": []}]
    assert _found(messages, "gemini") == [(EMPTY, 2)]
    assert history.repair(messages, None, "gemini")[0] == messages[:1]


def test_gemini_model_contents_an_empty_user_content_parted_are_one_turn() -> None:
    messages = [_g_text("user", "a"), _g_text("model", "let me look"), {"role": "user", "parts": []}]
    messages += [_g_call("a"), _g_result("a", "r")]
    assert _found(messages, "gemini") == [(EMPTY, 3), ("assistant-after-assistant", 4)]
    fixed, _ = history.repair(messages, None, "gemini")
    assert fixed == [
        messages[0],
        {"role": "model", "parts": [*messages[1]["parts"], *messages[3]["parts"]]},
        messages[4],
    ]
    _clean(fixed, "gemini")


# Bedrock Converse


def _b_call(key: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"toolUse": {"toolUseId": key, "name": "f", "input": {}}}]}


def _b_result(key: str, tag: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"toolResult": {"toolUseId": key, "content": [{"text": tag}]}}]}


def _b_text(role: str, words: str) -> dict[str, Any]:
    return {"role": role, "content": [{"text": words}]}


def test_converse_empty_assistant_message_is_dropped_and_the_user_messages_merged() -> None:
    messages = [_b_text("user", "go"), _b_call("t1"), _b_result("t1", "r"), {"role": "assistant", "content": []}]
    messages.append(_b_text("user", "next"))
    assert _found(messages, "bedrock") == [(EMPTY, 4), ("user-after-user", 5)]
    fixed, changes = history.repair(messages, None, "bedrock")
    assert fixed == [*messages[:2], {"role": "user", "content": [*messages[2]["content"], {"text": "next"}]}]
    assert _changes(changes) == [("dropped-empty-message", 4), ("merged-messages", 5)]
    _clean(fixed, "bedrock")


def test_converse_empty_user_message_between_calls_and_results_leaves_them_paired() -> None:
    """Read as if gone: before, it was the user's text between the call and its result."""
    messages = [_b_text("user", "go"), _b_call("t1"), {"role": "user", "content": []}, _b_result("t1", "r")]
    assert _found(messages, "bedrock") == [(EMPTY, 3)]
    fixed, changes = history.repair(messages, None, "bedrock")
    assert fixed == [messages[0], messages[1], messages[3]]
    assert _changes(changes) == [("dropped-empty-message", 3)]
    _clean(fixed, "bedrock")


# OpenAI chat, and the formats not judged


def _o_call(key: str) -> dict[str, Any]:
    call = {"id": key, "type": "function", "function": {"name": "f", "arguments": "{}"}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


@pytest.mark.parametrize("empty", [{"role": "assistant", "content": None}, {"role": "assistant"}])
def test_openai_assistant_without_content_or_calls(empty: dict[str, Any]) -> None:
    messages = [
        {"role": "user", "content": "a"},
        _o_call("c1"),
        empty,
        {"role": "tool", "tool_call_id": "c1", "content": "r"},
    ]
    assert _found(messages, "openai") == [(EMPTY, 3)]  # the call still pairs with its result
    fixed, changes = history.repair(messages, None, "openai")
    assert fixed == [messages[0], messages[1], messages[3]]
    assert _changes(changes) == [("dropped-empty-message", 3)]
    _clean(fixed, "openai")


@pytest.mark.parametrize(
    ("fmt", "message"),
    [
        ("openai", {"role": "assistant", "content": ""}),  # accepted (vercel/ai#14950)
        ("openai", {"role": "user", "content": None}),  # only the assistant's is judged
        ("ollama", {"role": "assistant", "content": ""}),
        ("responses", {"type": "message", "role": "assistant", "content": []}),
    ],
)
def test_not_reported_where_not_judged(fmt: Any, message: dict[str, Any]) -> None:
    messages = [{"role": "user", "content": "a"}, message, {"role": "user", "content": "b"}]
    assert EMPTY not in [kind for kind, _ in _found(messages, fmt)]
    assert "dropped-empty-message" not in [c.kind for c in history.repair(messages, None, fmt)[1]]


# Random histories: valid ones with empty messages sprinkled in


def _valid(fmt: str, rng: random.Random) -> tuple[list[dict[str, Any]], set[str]]:
    """A history its format accepts (the roles alternate), and the tags of its results."""
    user_text = {
        "anthropic": lambda w: {"role": "user", "content": w},
        "gemini": lambda w: _g_text("user", w),
        "bedrock": lambda w: _b_text("user", w),
        "openai": lambda w: {"role": "user", "content": w},
    }[fmt]
    model = "model" if fmt == "gemini" else "assistant"
    model_text = {"gemini": lambda w: _g_text("model", w), "bedrock": lambda w: _b_text("assistant", w)}.get(
        fmt, lambda w: {"role": "assistant", "content": w}
    )
    messages, tags, n = [user_text("q0")], set(), 0
    turns = rng.randint(1, 4)
    for turn in range(turns):
        if rng.random() < 0.6:
            keys = [f"k{turn}_{j}" for j in range(rng.randint(1, 3))]
            answers = []
            for key in keys:
                n += 1
                tags.add(f"r{n}")
                answers.append((key, f"r{n}"))
            if fmt == "openai":
                calls = [_o_call(k)["tool_calls"][0] for k in keys]
                messages.append({"role": "assistant", "content": None, "tool_calls": calls})
                messages += [{"role": "tool", "tool_call_id": k, "content": t} for k, t in answers]
            else:
                maker, answer = {"anthropic": (_a_call, _a_result), "gemini": (_g_call, _g_result)}.get(
                    fmt, (_b_call, _b_result)
                )
                field = "parts" if fmt == "gemini" else "content"
                messages.append({"role": model, field: [b for k in keys for b in maker(k)[field]]})
                messages.append({"role": "user", field: [b for k, t in answers for b in answer(k, t)[field]]})
        messages.append(model_text(f"a{turn}"))
        if turn < turns - 1 or rng.random() < 0.5:  # the roles alternate; the history may end with the model
            messages.append(user_text(f"q{turn + 1}"))
    return messages, tags


def _empty(fmt: str, rng: random.Random) -> dict[str, Any]:
    if fmt == "openai":
        return rng.choice([{"role": "assistant", "content": None}, {"role": "assistant"}])
    role = rng.choice(["user", "model", None] if fmt == "gemini" else ["user", "assistant"])
    field = "parts" if fmt == "gemini" else "content"
    shapes = [{field: []}, {}] + ([{field: ""}] if fmt == "anthropic" else [])
    return {**({} if role is None else {"role": role}), **rng.choice(shapes)}


def _result_tags(fmt: str, messages: list[dict[str, Any]]) -> list[str]:
    if fmt == "openai":
        return [m["content"] for m in messages if m["role"] == "tool"]
    tags = []
    for m in messages:
        for block in m.get("parts" if fmt == "gemini" else "content") or ():
            if isinstance(block, dict) and block.get("type") == "tool_result":
                tags.append(block["content"])
            elif isinstance(block, dict) and "functionResponse" in block:
                tags.append(block["functionResponse"]["response"]["tag"])
            elif isinstance(block, dict) and "toolResult" in block:
                tags.append(block["toolResult"]["content"][0]["text"])
    return tags


@pytest.mark.parametrize("fmt", ["anthropic", "gemini", "bedrock", "openai"])
def test_random_histories_with_empty_messages_sprinkled_in(fmt: str) -> None:
    rng = random.Random(41)
    for _ in range(300):
        base, tags = _valid(fmt, rng)
        assert history.check(base, fmt).findings == ()
        messages = list(base)
        spots = []
        for _ in range(rng.randint(1, 3)):
            at = rng.randint(0, len(messages))
            messages.insert(at, _empty(fmt, rng))
            spots = [s + (s >= at) for s in spots] + [at]
        exempt = {len(messages) - 1} if fmt == "anthropic" and messages[-1].get("role") == "assistant" else set()
        reported = sorted(s + 1 for s in spots if s not in exempt)
        assert [f.message for f in history.check(messages, fmt).of(history.Kind.EMPTY_MESSAGE)] == reported
        fixed, changes = history.repair(messages, None, fmt)
        assert [c.message for c in changes if c.kind == "dropped-empty-message"] == reported
        assert not any(c.kind in ("dropped-orphan", "dropped-duplicate-result", "placeholder-result") for c in changes)
        _clean(fixed, fmt)
        assert sorted(_result_tags(fmt, fixed)) == sorted(tags)  # every result kept, once
        roles = [m.get("role") or "user" for m in fixed if not (fmt == "anthropic" and m is messages[-1] and exempt)]
        if fmt != "openai":
            assert all(a != b for a, b in itertools.pairwise(roles)), roles  # the roles alternate


def test_gemini_parts_of_an_empty_string_stay_malformed() -> None:
    """Not a list: a LocalProtocolError naming the message, as before, not an empty content."""
    with pytest.raises(LocalProtocolError, match="message 2: parts must be a list"):
        history.check([_g_text("user", "a"), {"role": "model", "parts": ""}], "gemini")


def test_fsms_own_openai_chat_next_turn_of_a_turn_that_said_nothing_is_not_empty() -> None:
    # A turn with no text and no call to send back (the model said nothing; or every call was cut
    # and omitted) goes back with content "", which OpenAI takes, not null, which it refuses
    # without tool_calls (vercel/ai#14950): check finds nothing in it, as the API refuses nothing.
    import fsm
    from fsm import messages

    r = fsm.Reassembler("openai-chat")
    finish = {"index": 0, "delta": {}, "finish_reason": "stop"}
    r.feed({"id": "x", "object": "chat.completion.chunk", "choices": [finish]})
    message = messages.assistant_message(r.close(), "openai-chat")
    assert message == {"role": "assistant", "content": ""}
    turns = [{"role": "user", "content": "hi"}, message, {"role": "user", "content": "?"}]
    assert history.check(turns, "openai").findings == ()
