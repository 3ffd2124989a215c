#!/usr/bin/env bash
# Install what is missing, build the release preset and run the whole test
# suite. With --sanitize, do the same in the dev preset (Debug, -Werror,
# ASan + UBSan) instead.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
preset=release
if [[ "${1:-}" == "--sanitize" ]]; then preset=dev; fi
bash scripts/install-deps.sh
cmake --preset "$preset"
cmake --build --preset "$preset"
ctest --preset "$preset" -j "$(nproc)"
