#!/usr/bin/env bash
# Debian's headless-capable Chromium for the viewer's browser test (marker `browser`); does nothing when present.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -q chromium >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q chromium >/dev/null; }
/usr/bin/chromium --version
