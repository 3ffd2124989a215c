#!/usr/bin/env bash
# Checks the Kubernetes manifests offline: every overlay and the batch
# export (deploy/batch) render with `kubectl kustomize`, validates against the Kubernetes schemas
# (kubernetes-models, pinned in deploy/validate/package-lock.json), and
# yamllint passes. Skips (exit 0, saying why) when kubectl is missing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

yamllint -c deploy/.yamllint deploy/base deploy/overlays deploy/batch
echo "deploy-test: yamllint passed"

if ! command -v kubectl >/dev/null; then
  echo "deploy-test: SKIP rendering and schema checks: kubectl is not installed"
  exit 0
fi
if ! command -v npm >/dev/null; then
  bash scripts/install-deps.sh packages-node.txt
fi
(cd deploy/validate && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
for overlay in deploy/overlays/*/ deploy/batch/; do
  rendered=$(mktemp)
  kubectl kustomize "$overlay" > "$rendered"
  echo "deploy-test: $overlay"
  node deploy/validate/validate.mjs "$rendered"
  rm -f "$rendered"
done
echo "deploy-test: PASS"
