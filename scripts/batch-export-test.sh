#!/usr/bin/env bash
# Runs the batch export Job of deploy/batch without a cluster: the
# container's exact command, once per completion index, as Kubernetes
# would run it (JOB_COMPLETION_INDEX and the Job's env set, the ConfigMap's
# world.json at the mount path, `scatter` on the PATH), each index into an
# output directory of its own. Then checks that the indices' files together
# are exactly the tiles of TILES, each once, byte for byte those of one
# single-process export. The manifests come from `kubectl kustomize` when
# kubectl is installed, else from deploy/batch's files as they are.
#
# Usage: scripts/batch-export-test.sh [path/to/scatter]
#        (default build/release/client/scatter)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scatter=$(realpath "${1:-build/release/client/scatter}")
[[ -x "$scatter" ]] || { echo "batch-export-test: no scatter at $scatter" >&2; exit 1; }

stage_start=$SECONDS
stage() {
  echo "batch-export-test: $1 took $((SECONDS - stage_start)) s"
  stage_start=$SECONDS
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if command -v kubectl >/dev/null; then
  kubectl kustomize deploy/batch > "$work/rendered.yaml"
  source="kubectl kustomize deploy/batch"
else
  # What kustomize would add (the ConfigMap) from the files themselves.
  {
    cat deploy/batch/job.yaml
    printf -- '---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: scatter-world\ndata:\n'
    printf '  world.json: |\n'
    sed 's/^/    /' deploy/batch/world.json
  } > "$work/rendered.yaml"
  source="deploy/batch files (no kubectl)"
fi

# The Job's command, env, completions and mounts; the ConfigMap's files.
/usr/bin/python3 - "$work" <<'EOF'
import json, os, sys, yaml
work = sys.argv[1]
docs = [d for d in yaml.safe_load_all(open(os.path.join(work, "rendered.yaml"))) if d]
job = next(d for d in docs if d["kind"] == "Job")
config = next(d for d in docs if d["kind"] == "ConfigMap")
spec = job["spec"]
assert spec["completionMode"] == "Indexed", "the Job must be Indexed"
pod = spec["template"]["spec"]
container = pod["containers"][0]
mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
volumes = {v["name"]: v for v in pod["volumes"]}
world_mount = next(mounts[n] for n, v in volumes.items() if "configMap" in v)
out_mount = next(mounts[n] for n, v in volumes.items() if "persistentVolumeClaim" in v)
os.makedirs(os.path.join(work, "job"))
for name, text in config["data"].items():
    open(os.path.join(work, "job", name), "w").write(text)
env = {e["name"]: e["value"] for e in container.get("env", [])}
json.dump({"command": container["command"] + container["args"],
           "env": env, "completions": spec["completions"],
           "world_mount": world_mount, "out_mount": out_mount},
          open(os.path.join(work, "job.json"), "w"))
EOF
field() { /usr/bin/python3 -c "import json,sys; print(json.load(open('$work/job.json'))$1)"; }
completions=$(field '["completions"]')
world_mount=$(field '["world_mount"]')
out_mount=$(field '["out_mount"]')
tiles=$(field '["env"]["TILES"]')
format=$(field '["env"]["FORMAT"]')
shards=$(field '["env"]["SHARDS"]')
if [[ "$shards" != "$completions" ]]; then
  echo "batch-export-test: FAIL: SHARDS=$shards but completions=$completions" >&2
  exit 1
fi
echo "batch-export-test: $completions indices of the Job from $source, tiles $tiles"
stage "rendering"

# The container's command with the volumes' mount paths pointing at local
# directories, as the mounts would.
mapfile -t command < <(/usr/bin/python3 -c "
import json; [print(a) for a in json.load(open('$work/job.json'))['command']]")
bin_dir=$(dirname "$scatter")
for ((i = 0; i < completions; i++)); do
  mkdir -p "$work/out_$i"
  args=()
  for a in "${command[@]}"; do
    a=${a//"$world_mount"/"$work/job"}
    args+=("${a//"$out_mount"/"$work/out_$i"}")
  done
  mapfile -t env_args < <(/usr/bin/python3 -c "
import json; [print(f'{k}={v}') for k, v in json.load(open('$work/job.json'))['env'].items()]")
  env -i HOME="$work" PATH="$bin_dir:/usr/bin:/bin" JOB_COMPLETION_INDEX="$i" \
    "${env_args[@]}" "${args[@]}"
done
stage "running $completions indices"

"$scatter" tiles "$work/job/world.json" --tiles="$tiles" --format="$format" --local \
  --out="$work/whole"
stage "single-process export"

# Every tile once over all indices, and the same bytes as the whole.
status=0
declare -A seen
for ((i = 0; i < completions; i++)); do
  for file in "$work/out_$i"/* "$work/out_$i"/.[!.]*; do
    [[ -e "$file" ]] || continue
    name=$(basename "$file")
    # Every index says the same world as the single export.
    if [[ "$name" == scatter-export.json ]]; then
      if ! cmp -s "$file" "$work/whole/$name"; then
        echo "batch-export-test: FAIL: index $i's manifest differs from the single export's" >&2
        status=1
      fi
      continue
    fi
    if [[ -n "${seen[$name]:-}" ]]; then
      echo "batch-export-test: FAIL: $name written by indices ${seen[$name]} and $i" >&2
      status=1
    fi
    seen[$name]=$i
    if ! cmp -s "$file" "$work/whole/$name"; then
      echo "batch-export-test: FAIL: index $i's $name differs from the single export" >&2
      status=1
    fi
  done
done
whole=$(find "$work/whole" -type f -name 'tile_*' | wc -l)
# One file per tile of the rectangle, so an export that wrote nothing (in
# every index and in the single run alike) cannot pass.
if [[ "$tiles" =~ ^(-?[0-9]+):(-?[0-9]+),(-?[0-9]+):(-?[0-9]+)$ ]]; then
  expected=$(((BASH_REMATCH[2] - BASH_REMATCH[1]) * (BASH_REMATCH[4] - BASH_REMATCH[3])))
  if [[ $whole -ne $expected ]]; then
    echo "batch-export-test: FAIL: the single export wrote $whole files; TILES=$tiles has $expected tiles" >&2
    status=1
  fi
else
  echo "batch-export-test: FAIL: TILES=$tiles is not a rectangle x0:x1,y0:y1" >&2
  status=1
fi
if [[ ${#seen[@]} -ne $whole ]]; then
  echo "batch-export-test: FAIL: the indices wrote ${#seen[@]} files, the area has $whole" >&2
  status=1
fi
stage "comparing"
if [[ $status -ne 0 ]]; then exit "$status"; fi
echo "batch-export-test: PASS: $completions indices wrote $whole tiles, each once, as one export"
