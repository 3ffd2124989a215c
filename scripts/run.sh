#!/usr/bin/env bash
# The main job: install what is missing, build the release preset's service
# and the tools the README uses with it (the scatter client, the demo), and
# start scatterd, the Scatter gRPC service, on 127.0.0.1:50051 (metrics on
# 127.0.0.1:9464/metrics). Extra arguments go to scatterd, e.g.
# --address=0.0.0.0:50051; `scatterd --help` lists them. Ctrl-C or SIGTERM
# drains and stops it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release --target scatterd scatter scatter_demo
exec ./build/release/server/scatterd "$@"
