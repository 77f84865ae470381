"""Task 169: the benchmarks' long story lives in docs/performance.md, the README keeps what a user
needs (the commands, how it measures, the table as tools/bench.py prints it, the verdicts and why
the missed ones are missed). These hold the split: the README's section stays short and links the
page, each table has the columns its tool prints, and the tests the page names as proofs exist."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
PERFORMANCE = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
SECTION = README.split("\n## Performance\n")[1].split("\n## ")[0]


def tool(name: str) -> ModuleType:
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        return __import__(name)
    finally:
        sys.path.remove(str(ROOT / "tools"))


def header(table_text: str) -> str:
    return table_text.splitlines()[0]


def test_the_readmes_section_is_short_and_sends_the_rest_to_the_page() -> None:
    # a newcomer reads the commands, the table and the verdicts; the dated story grew it to 540 lines
    assert len(SECTION.splitlines()) <= 120
    assert "(https://github.com/toolcall-fsm/toolcall-fsm/blob/main/docs/performance.md)" in SECTION
    for command in ("tools/bench.py --json", "tools/bench_instructions.py --json", "tools/bench_talk.py"):
        assert f"python {command}" in SECTION, command
    # no run's diary: a past run compared with the one before it belongs to CHANGELOG.md
    assert not re.search(r"this run|the run before|round before|task \d+", SECTION, re.I)


def test_the_readme_shows_the_table_and_verdicts_bench_prints() -> None:
    bench = tool("bench")
    report = {"rows": [], "import": {"import fsm / import json": 0.5, "replay / import json": 4.0}, "targets": {}}
    assert header(bench.markdown(report)) in SECTION.splitlines()
    columns = header(bench.markdown(report)).count(" | ") + 1
    rows = [line for line in SECTION.splitlines() if line.startswith("| ") and "|---" not in line]
    assert len(rows) > 30
    main_rows = [line for line in rows if line.count(" | ") + 1 == columns]
    assert len(main_rows) > 20 and all(line.endswith(" |") for line in main_rows)
    assert "Start-up (CPU time, best of N): `import fsm`" in SECTION
    verdicts = re.findall(r"^- \*\*(met|missed)\*\*: ", SECTION, re.M)
    assert len(verdicts) >= 8 and verdicts.count("missed") == len(re.findall(r"^- \*\*[A-Z]", SECTION, re.M))


def test_the_pages_tables_have_the_columns_their_tools_print() -> None:
    talk = tool("bench_talk")
    instructions = tool("bench_instructions")
    assert header(talk.markdown([])) in PERFORMANCE.splitlines()
    assert header(instructions.markdown({"rows": [], "targets": {}})) in PERFORMANCE.splitlines()


def test_every_test_the_page_names_as_a_proof_exists() -> None:
    named = set(re.findall(r"`(test_\w+)`", PERFORMANCE))
    assert len(named) > 20
    defined = {
        name
        for path in (ROOT / "tests").rglob("*.py")
        for name in re.findall(r"^\s*(?:async )?def (test_\w+)\(", path.read_text(encoding="utf-8"), re.M)
    }
    assert sorted(named - defined) == []


def test_the_hand_written_pages_say_so() -> None:
    architecture = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert "as is `docs/performance.md`" in architecture
    assert PERFORMANCE.startswith("# Performance") and "This page is written by hand." in PERFORMANCE
    layout = README.split("## Layout")[1].split("\n## ")[0]
    assert "`architecture.md` and `performance.md`" in layout


def test_the_docs_index_lists_the_performance_page() -> None:
    index = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    assert "(performance.md)" in index
