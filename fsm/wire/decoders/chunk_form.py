"""The form of a stream's commonest fragment events, learned from one of them, so that the next
ones are read from their text without parsing them.

An OpenAI chat stream sends a call's arguments in chunks that differ from each other only in the
argument text (and, since 2025, in OpenAI's ``obfuscation`` padding, a random string a chunk); an
Anthropic stream sends a tool's input in ``input_json_delta`` events that differ only in their
``partial_json``: the envelope, the index and every key are the same bytes each time. json.loads of
such an event costs several times what reading its one string costs. So once an event was parsed
and its shortcut reader took it (:func:`~fsm.wire.decoders.chat_chunks.lean_fragment_in`, a
decoder's ``commonest_fragment``), its text is cut into the fixed pieces around those strings, and
a later event that is exactly those pieces with a JSON string in each hole is the same fragment of
the same call with that text: JSON's grammar gives a string token in place of another string token
the same reading, and no shortcut reader reads the padding.

Sound by construction rather than by test alone: a form is kept only when a probe, the event with
other strings in the holes, parses to the event's value with exactly those strings changed, which
proves each hole is the token that string is read from (not a decoy with the same text, not a key
given twice). The string is read by json's own C string scanner, strict as json.loads is, so a
control character or a bad escape makes the event no match, for the general path to report.
test_chunks_read_by_their_form_decide_as_parsed_ones holds the reassembler to the parsed path.
"""

from __future__ import annotations

import re
from typing import Any, Final, NamedTuple

from fsm.jsontext import loads_event
from fsm.wire.decoders._form_tokens import INTEGER, Path, integer_after, scanstring, string_after, swapped, value_at

PADDING_KEY: Final = "obfuscation"
"""The envelope key whose string differs in every OpenAI chunk and is never read (the padding of
OpenAI's events, and the default of ``FragmentForm.learn``'s ``padding_at``)."""


class FragmentForm:
    """A commonest event with its text string (and padding, counter and place) cut out, made of the
    fixed ``pieces`` around the holes (each piece before a string's hole ends with its opening quote)
    and what each hole holds (``holes``: TEXT, PADDING, COUNTER, PLACE, or COUNT and up for the
    counts a reader reads). ``read(payload)``: the text of an event of this form, else None.
    ``place``: what names the call of the event last read (an OpenAI chat index, an Anthropic
    block's index, ...), for its decoder: the integer in the PLACE hole, where the form has one, so
    one form serves every call of a stream; for a form of counts (Gemini's usage beside each
    chunk), the tuple of the counts the event last read holds, in the order of ``counts_at``; else
    the learnt event's."""

    __slots__ = (
        "counted",
        "counts_in",
        "fixed",
        "head",
        "holes",
        "lead",
        "middle",
        "pattern",
        "place",
        "read",
        "tail",
        "tail_at",
        "text_first",
        "text_in",
    )

    def __init__(self, place: Any, pieces: list[str], holes: list[int]) -> None:
        self.place = place
        self.head, self.tail = pieces[0], pieces[-1]
        self.tail_at = -len(self.tail)  # where the tail starts, from the end
        # After each hole, what it holds and the piece that follows it.
        self.holes = tuple(zip(holes, pieces[1:], strict=True))
        # The commonest forms, the text alone or beside the padding, read by shorter ways.
        self.middle, self.text_first = pieces[1], holes[0] == TEXT
        self.counted = sum(1 for hole in holes if hole >= COUNT)
        if holes == [TEXT]:
            self.read = self._read_one
        elif holes == [PLACE, TEXT]:
            self.read = self._read_place_text
            self.lead = f"{self.head}{place}{self.middle}"  # all before the text, at the place last read
        elif PLACE in holes:
            self.read = self._read_placed
            self.fixed = self._at_place(place)
        elif len(holes) == 2 and max(holes) == PADDING:  # the text and the padding
            self.read = self._read_two
        elif self.counted:
            self.read = self._read_counted
            self._compile(holes)
        else:
            self.read = self._read_holes

    def _compile(self, holes: list[int]) -> None:
        """The pattern of the whole event, one group a hole, for _read_counted: a string hole
        takes exactly what JSON's grammar takes there (so the event parses), an integer hole a
        JSON integer of at most 19 digits; where each count and the text are found."""
        pattern = [re.escape(self.head)]
        for hole, piece in self.holes:
            pattern += [_STRING_HOLE if hole in (TEXT, PADDING) else _INTEGER_HOLE, re.escape(piece)]
        self.pattern = re.compile("".join(pattern), re.DOTALL).fullmatch
        self.text_in = holes.index(TEXT) + 1
        self.counts_in = [k + 1 for k in sorted(range(len(holes)), key=lambda k: holes[k]) if holes[k] >= COUNT]

    def _at_place(self, place: int) -> FragmentForm:
        """This form with its place hole filled in as ``place``: a form of fewer holes, read the
        shorter way its holes allow."""
        pieces = [self.head, *(piece for _, piece in self.holes)]
        kinds = [hole for hole, _ in self.holes]
        k = kinds.index(PLACE)
        pieces[k : k + 2] = [f"{pieces[k]}{place}{pieces[k + 1]}"]
        del kinds[k]
        return FragmentForm(place, pieces, kinds)

    def _read_placed(self, payload: str) -> str | None:
        """read() of a form with a place among other holes (OpenAI chat's beside its padding,
        Bedrock's): at the place last read first, by the form with that place filled in."""
        text = self.fixed.read(payload)
        if text is None:
            text = self._read_holes(payload)
            if text is not None:
                self.fixed = self._at_place(self.place)
        return text

    def _read_one(self, payload: str) -> str | None:
        """read() of a form whose one hole is the text."""
        if payload.startswith(self.head) and payload.endswith(self.tail):
            try:
                text, end = scanstring(payload, len(self.head))
            except ValueError:  # no string there, or a bad one: the general path says what is wrong
                return None
            if end == len(payload) + self.tail_at and text:
                return text
        return None

    def _read_two(self, payload: str) -> str | None:
        """read() of a form of two holes, the text and the padding, in either order."""
        if payload.startswith(self.head) and payload.endswith(self.tail):
            try:
                first, pos = scanstring(payload, len(self.head))
                if not payload.startswith(self.middle, pos):
                    return None
                second, end = scanstring(payload, pos + len(self.middle))
            except ValueError:  # no string there, or a bad one: the general path says what is wrong
                return None
            text = first if self.text_first else second
            if end == len(payload) + self.tail_at and text:
                return text
        return None

    def _read_place_text(self, payload: str) -> str | None:
        """read() of a form whose holes are the place, then the text (OpenAI chat's, Anthropic's):
        at the place last read first, written out (the next event is most often the same call's),
        where what follows a place is never a digit."""
        lead = self.lead
        if payload.startswith(lead) and payload.endswith(self.tail):
            try:
                text, end = scanstring(payload, len(lead))
            except ValueError:  # no string there, or a bad one: the general path says what is wrong
                return None
            return text if end == len(payload) + self.tail_at and text else None
        return self._read_new_place(payload)

    def _read_new_place(self, payload: str) -> str | None:
        """_read_place_text of an event at another place than the last read."""
        if payload.startswith(self.head) and payload.endswith(self.tail):
            number = _PLACE(payload, len(self.head))
            if number is None:
                return None
            pos = number.end()
            if not payload.startswith(self.middle, pos):
                return None
            try:
                text, end = scanstring(payload, pos + len(self.middle))
            except ValueError:  # no string there, or a bad one: the general path says what is wrong
                return None
            if end == len(payload) + self.tail_at and text:
                self.place = int(number[0])
                self.lead = payload[: pos + len(self.middle)]
                return text
        return None

    def _read_counted(self, payload: str) -> str | None:
        """read() of a form of counts (Gemini's usage beside each chunk): the event matched whole
        by one pattern (_compile), the text decoded by json's reader only where it holds an escape,
        the counts read into ``place``."""
        found = self.pattern(payload)
        if found is None:
            return None
        text = found[self.text_in]
        if "\\" in text:
            text = scanstring(payload, found.start(self.text_in))[0]
        if not text:
            return None
        if self.counted > 1:  # (group() of two or more gives a tuple, of one the group itself)
            self.place = tuple(map(int, found.group(*self.counts_in)))
        else:
            self.place = (int(found[self.counts_in[0]]),)
        return text

    def _read_holes(self, payload: str) -> str | None:
        """read() of any other form (one of counts is _read_counted's: learn() makes none with a
        place too): each hole read in turn, a string by json's reader, a counter or a place as a
        JSON integer (what follows it must be the next piece, so a fraction or exponent is no
        match)."""
        if not payload.startswith(self.head):
            return None
        pos, text, place = len(self.head), "", None
        try:
            for hole, piece in self.holes:
                if hole == COUNTER:
                    number = INTEGER.match(payload, pos)
                    if number is None:
                        return None
                    pos = number.end()
                elif hole == PLACE:
                    number = _PLACE(payload, pos)
                    if number is None:
                        return None
                    pos, place = number.end(), number[0]
                else:
                    found, pos = scanstring(payload, pos)
                    if hole == TEXT:
                        text = found
                if not payload.startswith(piece, pos):
                    return None
                pos += len(piece)
        except ValueError:  # no string there, or a bad one: the general path says what is wrong
            return None
        if pos != len(payload) or not text:
            return None
        if place is not None:
            self.place = int(place)
        return text

    @classmethod
    def learn(
        cls,
        payload: str,
        value: dict[str, Any],
        path: Path,
        place: Any,
        padding_at: Path = (PADDING_KEY,),
        counter_at: Path | None = None,
        place_at: Path | None = None,
        counts_at: tuple[Path, ...] = (),
    ) -> FragmentForm | None:
        """The form of ``payload``, which parsed to ``value``, a commonest event whose text is the
        string at ``path`` in it (keys and list indexes) and whose call is at ``place``, with the
        padding its wire adds at ``padding_at`` (a string) and the counter at ``counter_at`` (an
        integer), if the event has them, neither ever read by its reader; and ``place`` itself,
        an integer, at ``place_at`` where it is written there (then a hole, read as the place of
        each event read); and the counts its reader reads at ``counts_at`` (integers: each a hole,
        read into ``place``, which must be the tuple of the learnt event's); None when its holes
        cannot be found or the probe does not prove them."""
        text = value_at(value, path)
        if type(text) is not str:
            return None
        spans = [string_after(payload, f'"{path[-1]}"', text, TEXT)]
        padding = value_at(value, padding_at)
        if type(padding) is str:
            spans.append(string_after(payload, f'"{padding_at[-1]}"', padding, PADDING))
        counter = value_at(value, counter_at) if counter_at else None
        if type(counter) is int:
            spans.append(integer_after(payload, f'"{counter_at[-1]}"', counter, COUNTER))  # type: ignore[index]
        placed = place_at is not None and type(place) is int and 0 <= place < _PLACE_LIMIT
        if placed:
            spans.append(integer_after(payload, f'"{place_at[-1]}"', place, PLACE))  # type: ignore[index]
        counts = [value_at(value, at) for at in counts_at]
        if any(type(count) is not int for count in counts) or (counts_at and place != tuple(counts)):
            return None
        spans += [
            integer_after(payload, f'"{at[-1]}"', count, COUNT + k)
            for k, (at, count) in enumerate(zip(counts_at, counts, strict=True))
        ]
        if None in spans:
            return None
        found = sorted(span for span in spans if span is not None)
        if any(found[k][1] > found[k + 1][0] for k in range(len(found) - 1)):
            return None  # tokens cannot overlap; checked, not assumed
        pieces, start = [], 0
        for begin, end, _ in found:
            pieces.append(payload[start:begin])  # a string's ends with its opening quote
            start = end  # just past it (a string's closing quote)
        pieces.append(payload[start:])
        form = cls(place, pieces, [hole for _, _, hole in found])
        # The probe: in each hole, the string there with an "x" added, the counter and the place
        # plus one. It must parse to the value with exactly those changed: then each hole is the
        # token its value is read from, and any string (integer) there reads as that value in that place.
        fills = [
            str(counts[hole - COUNT] + 1)
            if hole >= COUNT
            else str(counter + 1)  # type: ignore[operator]
            if hole == COUNTER
            else str(place + 1)
            if hole == PLACE
            else payload[begin : end - 1] + 'x"'
            for begin, end, hole in found
        ]
        probe = pieces[0] + "".join(fill + piece for fill, piece in zip(fills, pieces[1:], strict=True))
        try:
            parsed = loads_event(probe)
        except (ValueError, RecursionError):  # (read deep in the caller's stack: no form, the event is parsed)
            return None
        # Put back what the probe changed (the parse is ours to change), checking each was changed.
        if not swapped(parsed, path, text + "x", text):
            return None
        if type(padding) is str and not swapped(parsed, padding_at, padding + "x", padding):
            return None
        if type(counter) is int and not swapped(parsed, counter_at, counter + 1, counter):  # type: ignore[arg-type]
            return None
        if placed and not swapped(parsed, place_at, place + 1, place):  # type: ignore[arg-type]
            return None
        if not all(swapped(parsed, at, count + 1, count) for at, count in zip(counts_at, counts, strict=True)):
            return None
        # (read(payload) last: a form with a place hole keeps the place of the event it read.)
        if parsed != value or form.read(probe) != text + "x" or form.read(payload) != text:
            return None
        return form


class FormSpec(NamedTuple):
    """What a decoder says of a commonest event its shortcut took, for FragmentForm.learn: where
    its text sits, the place that names its call, where padding and a counter would sit, and where
    the place is written, when the decoder reads any integer there as the place of such an event."""

    path: Path
    place: Any
    padding_at: Path = (PADDING_KEY,)
    counter_at: Path | None = None
    place_at: Path | None = None
    counts_at: tuple[Path, ...] = ()


TEXT, PADDING, COUNTER, PLACE, COUNT = 0, 1, 2, 3, 4
"""What a hole holds: the event's text, a padding string, a counter (an integer), the place of
the event's call (an integer), and from COUNT up each count a reader reads (an integer, the
k-th of ``counts_at`` at COUNT + k); the text, the place and the counts are read."""
_STRING_HOLE = r'((?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*)"'
"""A JSON string's characters and its closing quote (the opening one ends the piece before it)."""
_INTEGER_HOLE = r"(-?(?:0|[1-9][0-9]{0,18}))"
"""A JSON integer of at most 19 digits (the piece after it decides that no fraction follows)."""
_PLACE_LIMIT: Final = 10**18
_PLACE = re.compile(r"0|[1-9][0-9]{0,17}").match
"""A place a form's hole reads: a JSON integer from 0 to below _PLACE_LIMIT (another, such as -1 or
a number past it, makes the event no match, for the general path to read)."""
