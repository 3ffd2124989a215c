#!/usr/bin/env bash
# Install what is missing, build the release preset and run the whole test
# suite: the unit, service and CLI tests (CTest), the manifest checks, the
# batch export Job run without a cluster and the container smoke test. With --sanitize, build and run the CTest suite in the
# dev preset (Debug, -Werror, ASan + UBSan) instead. Prints each stage's time.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
preset=release
if [[ "${1:-}" == "--sanitize" ]]; then preset=dev; fi

stage_start=$SECONDS
stage() {
  echo "test.sh: $1 took $((SECONDS - stage_start)) s"
  stage_start=$SECONDS
}

bash scripts/install-deps.sh packages-test.txt
stage "installing packages"
cmake --preset "$preset"
cmake --build --preset "$preset"
stage "building ($preset)"
ctest --preset "$preset" -j "$(nproc)"
stage "CTest ($preset)"
if [[ "$preset" == release ]]; then
  bash scripts/deploy-test.sh
  stage "manifest checks"
  bash scripts/batch-export-test.sh "build/$preset/client/scatter"
  stage "batch export (the Indexed Job's command for every index)"
  bash scripts/container-test.sh
  stage "container image and smoke test"
fi
