#!/usr/bin/env bash
# Install what tools/check_mermaid.py needs: Debian's Chromium and mermaid-cli (into .cache/mermaid),
# telling Puppeteer not to download a browser of its own (this machine has no network for that).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x /usr/bin/chromium ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
if [ ! -x .cache/mermaid/node_modules/.bin/mmdc ]; then
  mkdir -p .cache/mermaid
  PUPPETEER_SKIP_DOWNLOAD=1 PUPPETEER_SKIP_CHROMIUM_DOWNLOAD=1 \
    npm install --silent --no-fund --no-audit --prefix .cache/mermaid @mermaid-js/mermaid-cli@11 >/dev/null
fi
