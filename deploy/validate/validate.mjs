// Validates rendered manifests offline against the Kubernetes schemas of
// the kubernetes-models package (pinned in package-lock.json).
// Usage: kubectl kustomize deploy/overlays/dev | node validate.mjs
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";

const text = readFileSync(process.argv[2] ?? 0, "utf8");
let failures = 0;
let count = 0;
for (const doc of parseAllDocuments(text)) {
  const object = doc.toJSON();
  if (!object) continue;
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
if (count === 0) {
  console.error("no manifests on input");
  process.exit(1);
}
process.exit(failures === 0 ? 0 : 1);
