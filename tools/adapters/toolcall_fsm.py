"""Reference adapter for ``toolcall-fsm conform --against``: this engine, behind the documented
protocol. Read a header line ``{"shape", "policies"}`` (and ``"choice"``, ``"interrupted"``) then one provider event
per line on stdin;
print the assembled calls as a JSON list of ``{"id", "name", "arguments"}`` on stdout.

    toolcall-fsm conform --against "python tools/adapters/toolcall_fsm.py"
"""

from __future__ import annotations

import json
import sys

from fsm import CallStatus, Policies, Reassembler, ToolcallFSMError
from fsm.jsontext import dumps


def main() -> None:
    header = json.loads(sys.stdin.readline())
    r = Reassembler(header["shape"], policies=Policies(**header.get("policies", {})), choice=header.get("choice"))
    try:
        for line in sys.stdin:
            if line.strip():
                r.feed(json.loads(line))
    except ToolcallFSMError:
        pass  # the stream failed there: close() still gives the calls completed before it
    stopped = header.get("interrupted")  # the network error that stopped the stream after its events
    result = r.close(interrupted=ConnectionError(stopped) if stopped is not None else None)
    calls = [
        {"id": c.id, "name": c.name, "arguments": c.arguments} for c in result.calls if c.status is CallStatus.COMPLETE
    ]
    sys.stdout.write(dumps(calls))  # exact numbers: a Decimal json.dump cannot write goes out digit for digit


if __name__ == "__main__":
    main()
