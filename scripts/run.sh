#!/usr/bin/env bash
# The main job: install what is missing, build the release preset, and run
# the demo (2D unit square, r = 0.001), which samples and prints a summary.
# Extra arguments go to scatter_demo, e.g. --dims=3 --radius=0.015.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release --target scatter_demo
exec ./build/release/demo/scatter_demo "$@"
