#!/usr/bin/env bash
# Checks the Kubernetes manifests offline: every overlay and the batch
# export (deploy/batch) render with `kubectl kustomize`; the renders
# validate against the Kubernetes schemas (kubernetes-models, pinned in
# deploy/validate/package-lock.json) and pass deploy/validate's own checks
# (memory flags, --threads and the CPU limit, probe timeouts, namespaces);
# each image they deploy is one deploy/README.md builds; and yamllint
# passes. Skips (exit 0, saying why) when kubectl is missing.
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
  # Each image the render deploys must be one deploy/README.md builds.
  for image in $(sed -n 's/^ *image: *//p' "$rendered" | sort -u); do
    if ! grep -qF -- "-t $image " deploy/README.md; then
      echo "deploy-test: FAIL: $overlay deploys $image, but deploy/README.md never builds it" \
           "(podman build ... -t $image)"
      exit 1
    fi
    echo "deploy-test: $image is built in deploy/README.md"
  done
  rm -f "$rendered"
done
echo "deploy-test: PASS"
