"""Regenerate docs/ (and the README's slot diagram) from specs/, or check that they are current; the
specs built ahead of time (fsm/spec_compiled.py, tools/compile_specs.py) come along.

python tools/diagram.py           # write
python tools/diagram.py --check   # exit 1, naming the stale files, if anything differs
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import compile_specs

from fsm.cli import main

ROOT = Path(__file__).resolve().parent.parent

if __name__ == "__main__":
    docs = main(["diagram", "--root", str(ROOT), *sys.argv[1:]])
    sys.exit(max(docs, compile_specs.main(sys.argv[1:])))
