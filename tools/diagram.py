"""Regenerate docs/ (and the README's slot diagram) from specs/, or check that they are current.

python tools/diagram.py           # write
python tools/diagram.py --check   # exit 1, naming the stale files, if anything differs
"""

from __future__ import annotations

import sys
from pathlib import Path

from fsm.cli import main

ROOT = Path(__file__).resolve().parent.parent

if __name__ == "__main__":
    sys.exit(main(["diagram", "--root", str(ROOT), *sys.argv[1:]]))
