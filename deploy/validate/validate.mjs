// Validates rendered manifests offline against the Kubernetes schemas of
// the kubernetes-models package (pinned in package-lock.json).
// Usage: kubectl kustomize deploy/overlays/dev | node validate.mjs
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";

const text = readFileSync(process.argv[2] ?? 0, "utf8");
let failures = 0;
let count = 0;
const objects = [];
for (const doc of parseAllDocuments(text)) {
  const object = doc.toJSON();
  if (!object) continue;
  objects.push(object);
  count++;
  const [group, version] = object.apiVersion.includes("/")
    ? object.apiVersion.split("/")
    : ["", object.apiVersion];
  const module = group === "" ? `kubernetes-models/${version}`
                              : `kubernetes-models/${group}/${version}`;
  const name = `${object.kind} ${object.metadata?.name}`;
  let Model;
  try {
    Model = (await import(`${module}/${object.kind}`))[object.kind];
  } catch (error) {
    console.error(`${name}: no schema for ${object.apiVersion} ${object.kind}`);
    failures++;
    continue;
  }
  try {
    new Model(object).validate();
    console.log(`ok   ${object.apiVersion} ${name}`);
  } catch (error) {
    console.error(`FAIL ${object.apiVersion} ${name}: ${error.message}`);
    failures++;
  }
}
// A Kubernetes quantity ("4Gi", "512Mi", "1G", "100") in bytes.
function bytesOf(quantity) {
  const units = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40,
                  k: 1e3, M: 1e6, G: 1e9, T: 1e12 };
  const match = /^([0-9.]+)([A-Za-z]*)$/.exec(String(quantity));
  if (!match || (match[2] && !(match[2] in units))) return NaN;
  return Number(match[1]) * (match[2] ? units[match[2]] : 1);
}

// scatterd's memory flags must fit its container's memory limit: the
// raster and tile caches and the sampling budget are each filled in turn
// under load, so their sum, with a tenth to spare for the rest of the
// process, is what a pod can come to hold.
for (const deployment of objects.filter((o) => o.kind === "Deployment")) {
  for (const container of deployment.spec?.template?.spec?.containers ?? []) {
    if (container.name !== "scatterd") continue;
    const args = container.args ?? [];
    const name = `Deployment ${deployment.metadata?.name}`;
    const value = (flag) => {
      const arg = args.find((a) => a.startsWith(`--${flag}=`));
      if (!arg) return NaN;
      let v = arg.slice(flag.length + 3);
      const ref = /^\$\(([A-Z_]+)\)$/.exec(v);
      if (ref) {
        const env = (container.env ?? []).find((e) => e.name === ref[1]);
        const key = env?.valueFrom?.configMapKeyRef;
        const map = objects.find((o) => o.kind === "ConfigMap" &&
                                        o.metadata?.name === key?.name);
        v = env?.value ?? map?.data?.[key?.key];
      }
      return Number(v);
    };
    const flags = ["raster_cache_bytes", "tile_cache_bytes", "memory_budget_bytes"];
    const sum = flags.map(value).reduce((a, b) => a + b, 0);
    const limit = bytesOf(container.resources?.limits?.memory);
    if (!(sum <= 0.9 * limit)) {
      console.error(`FAIL ${name}: ${flags.join(" + ")} = ${sum} bytes, over 90 % ` +
                    `of the memory limit ${container.resources?.limits?.memory}`);
      failures++;
    } else {
      console.log(`ok   ${name}: caches and sampling budget ${sum} bytes, ` +
                  `within 90 % of ${container.resources.limits.memory}`);
    }
  }
}
if (count === 0) {
  console.error("no manifests on input");
  process.exit(1);
}
process.exit(failures === 0 ? 0 : 1);
