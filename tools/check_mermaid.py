"""Parse and render every Mermaid block in docs/ and README.md with the real Mermaid (mermaid-cli,
driving the system Chromium). Exits 1 naming the first block Mermaid rejects; exits 2 when
mermaid-cli or Chromium is not installed (tools/install_mermaid.sh installs both).

    python tools/check_mermaid.py [--out DIR]   # DIR keeps the rendered SVGs, to look at
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BLOCK = re.compile(r"```mermaid\n(.*?)```", re.S)
KIND = {"stateDiagram-v2": "stateDiagram", "flowchart": "flowchart-v2"}
CHROMIUM = ("/usr/bin/chromium", "/usr/bin/chromium-browser")


def find_mmdc() -> str | None:
    local = ROOT / ".cache" / "mermaid" / "node_modules" / ".bin" / "mmdc"
    return str(local) if local.exists() else shutil.which("mmdc")


def find_chromium() -> str | None:
    return next((c for c in CHROMIUM if Path(c).exists()), None)


def blocks() -> list[tuple[str, str]]:
    found = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for i, match in enumerate(BLOCK.finditer(page.read_text(encoding="utf-8"))):
            found.append((f"{page.relative_to(ROOT)}#{i + 1}", match.group(1)))
    return found


def check(out: Path) -> list[str]:
    """Render every block into ``out``; return the problems found (empty when all render)."""
    mmdc, chromium = find_mmdc(), find_chromium()
    if mmdc is None or chromium is None:
        raise FileNotFoundError("mermaid-cli (mmdc) or Chromium is missing: run tools/install_mermaid.sh")
    config = out / "puppeteer.json"
    flags = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]
    config.write_text(json.dumps({"executablePath": chromium, "args": flags}))
    problems = []
    for n, (where, text) in enumerate(blocks()):
        source, svg = out / f"{n}.mmd", out / f"{n}.svg"
        source.write_text(text)
        proc = subprocess.run(
            [mmdc, "-q", "-p", str(config), "-i", str(source), "-o", str(svg)],
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        if proc.returncode != 0 or not svg.exists():
            error = next((ln for ln in proc.stderr.splitlines() if "rror" in ln), proc.stderr.strip()[:300])
            problems.append(f"{where}: Mermaid rejected it: {error}")
            continue
        kind = KIND.get(text.split(None, 1)[0], "")
        if f'aria-roledescription="{kind}"' not in svg.read_text(encoding="utf-8"):
            problems.append(f"{where}: rendered, but not as a {kind}")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="keep the rendered SVGs here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        try:
            problems = check(out)
        except FileNotFoundError as exc:
            print(f"check_mermaid: {exc}", file=sys.stderr)
            return 2
    for problem in problems:
        print(problem, file=sys.stderr)
    print(f"{len(blocks())} Mermaid blocks, {len(problems)} rejected")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
