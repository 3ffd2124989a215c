#!/usr/bin/env bash
# Builds the scatterd image with podman and smoke-tests it: health, one
# Scatter call through a loopback port mapping, a graceful stop. Prints each
# stage's duration and the image size. Skips (exit 0, saying why) only where
# podman cannot run containers at all.
#
# No registry is used: the bookworm base image is made here with
# `debootstrap --variant=minbase` and `podman import` (cached as
# localhost/scatter-bookworm:latest).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

stage_start=$SECONDS
stage() {
  echo "container-test: $1 ($((SECONDS - stage_start)) s)"
  stage_start=$SECONDS
}

command -v podman >/dev/null || { echo "container-test: SKIP: podman is not installed"; exit 0; }

# Podman here needs runc and explicit ulimits.
conf_dir=$(mktemp -d)
trap 'rm -rf "$conf_dir"' EXIT
cat > "$conf_dir/containers.conf" <<'CONF'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[engine]
runtime = "runc"
CONF
export CONTAINERS_CONF="$conf_dir/containers.conf"

if ! podman info >/dev/null 2>&1; then
  echo "container-test: SKIP: podman cannot run here: $(podman info 2>&1 | tail -1)"
  exit 0
fi

# Can podman store an image at all here (a chroot, say, cannot remount)?
probe=$(mktemp -d)
touch "$probe/probe"
if ! err=$(tar -C "$probe" -c . | podman import - localhost/scatter-probe:latest 2>&1); then
  rm -rf "$probe"
  echo "container-test: SKIP: podman cannot store images here: $(echo "$err" | tail -1)"
  exit 0
fi
rm -rf "$probe"
podman rmi localhost/scatter-probe:latest >/dev/null 2>&1 || true

base=localhost/scatter-bookworm:latest
if ! podman image exists "$base"; then
  # debootstrap runs as root only (and lives in /usr/sbin, off a user's
  # PATH); rootless podman then imports the tree as the user.
  as_root=()
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || {
      echo "container-test: SKIP: making the base image needs root (debootstrap) and there is no sudo"
      exit 0
    }
    as_root=(sudo)
  fi
  root=$(mktemp -d)
  "${as_root[@]}" /usr/sbin/debootstrap --variant=minbase bookworm "$root" >/dev/null
  "${as_root[@]}" tar -C "$root" -c . | podman import - "$base" >/dev/null
  "${as_root[@]}" rm -rf "$root"
  stage "base image $base made with debootstrap"
fi
# ... and run a container at all?
if ! err=$(podman run --rm "$base" true 2>&1); then
  echo "container-test: SKIP: podman cannot run containers here: $(echo "$err" | tail -1)"
  exit 0
fi

image=localhost/scatter:test
podman build --format docker --build-arg BASE="$base" -t "$image" . >/tmp/scatter-image-build.log 2>&1 \
  || { tail -30 /tmp/scatter-image-build.log; exit 1; }
stage "image built"
size=$(podman image inspect --format '{{.Size}}' "$image")
echo "container-test: image $image is $((size / 1000000)) MB"
healthcheck=$(podman image inspect --format '{{json .Config.Healthcheck}}' "$image")
grep -q 'scatter' <<<"$healthcheck" \
  || { echo "container-test: FAIL: the image has no HEALTHCHECK"; exit 1; }

port=$((20000 + RANDOM % 20000))
name=scatter-smoke-$$
podman run -d --name "$name" -p "127.0.0.1:$port:50051" "$image" >/dev/null
cleanup() { podman rm -f "$name" >/dev/null 2>&1 || true; rm -rf "$conf_dir"; }
trap cleanup EXIT
ok=0
for _ in $(seq 1 50); do
  if podman exec "$name" scatter health --server=127.0.0.1:50051 >/dev/null 2>&1; then ok=1; break; fi
  sleep 0.2
done
[ "$ok" = 1 ] || { podman logs "$name"; echo "container-test: FAIL: never healthy"; exit 1; }
stage "container healthy (scatter health inside it)"

# One Scatter call from outside, through the port mapping, with the Python
# client; check the points.
out=$(mktemp)
/usr/bin/python3 client/python/scatter_points.py --address "127.0.0.1:$port" \
  --box 0,0,50,50 --spacing 1 > "$out"
/usr/bin/python3 - "$out" <<'PY'
import sys
rows = [list(map(float, line.split(",")[:2])) for line in open(sys.argv[1])]
assert 1900 < len(rows) < 2600, len(rows)
assert all(0 <= x < 50 and 0 <= y < 50 for x, y in rows)
cells = {}
for i, (x, y) in enumerate(rows):
    cells.setdefault((int(x), int(y)), []).append(i)
for (cx, cy), members in cells.items():
    for dx in (-1, 0, 1):
        for dy in (-1, 0, 1):
            for j in cells.get((cx + dx, cy + dy), ()):
                for i in members:
                    if i < j:
                        d2 = (rows[i][0] - rows[j][0]) ** 2 + (rows[i][1] - rows[j][1]) ** 2
                        assert d2 >= 1.0, (rows[i], rows[j])
print("container-test: %d points through the port mapping, min distance holds" % len(rows))
PY
rm -f "$out"
stage "Scatter call checked"

podman stop -t 25 "$name" >/dev/null
code=$(podman inspect --format '{{.State.ExitCode}}' "$name")
[ "$code" = 0 ] || { podman logs "$name" | tail -5; echo "container-test: FAIL: exit $code on SIGTERM"; exit 1; }
# Read the whole log before searching it: with pipefail, `podman logs | grep -q`
# fails whenever grep exits on the match while podman is still writing (SIGPIPE).
logs=$(podman logs "$name" 2>&1)
grep -q "draining" <<<"$logs" || { tail -5 <<<"$logs"; echo "container-test: FAIL: no drain on stop"; exit 1; }
stage "stopped gracefully (exit 0 after draining)"
echo "container-test: PASS"
