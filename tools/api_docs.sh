#!/usr/bin/env bash
# Build the API reference from the package's docstrings with pdoc, into build/api/ (not committed;
# .gitignore lists build/). Run from anywhere; uses the project's .venv when it has one.
# pdoc exits non-zero on a module it cannot import; a docstring link to a name that does not exist
# shows in its warnings, which this script turns into a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
python=python3
[ -x .venv/bin/python ] && python=.venv/bin/python
out="${1:-build/api}"
rm -rf "$out"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
"$python" -W error::UserWarning -m pdoc --docformat restructuredtext --no-show-source -o "$out" fsm fsm.history 2>"$log" || {
  cat "$log" >&2
  exit 1
}
if grep -q "Warn" "$log"; then
  cat "$log" >&2
  echo "api_docs: pdoc warned (above); fix the docstrings" >&2
  exit 1
fi
test -f "$out/fsm.html"
echo "API reference written to $out/ (open $out/index.html)"
