#!/usr/bin/env bash
# Installs the Debian packages listed in scripts/packages.txt (and in the
# other lists named as arguments, e.g. packages-test.txt) that are missing.
# Idempotent: when everything is present it only asks dpkg and returns.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

lists=("$here/packages.txt")
for name in "$@"; do lists+=("$here/$name"); done
missing=()
for list in "${lists[@]}"; do
  while read -r pkg; do
    [[ -z "$pkg" || "$pkg" == \#* ]] && continue
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$pkg")
    fi
  done < "$list"
done

if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
sudo=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
# A fresh image may have no package lists at all: fetch them first. Lists
# that exist but are stale are refreshed only when the install fails.
if ! compgen -G '/var/lib/apt/lists/*_Packages' >/dev/null; then
  "${sudo[@]}" apt-get update </dev/null
fi
if ! "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}" </dev/null; then
  "${sudo[@]}" apt-get update </dev/null
  "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}" </dev/null
fi
