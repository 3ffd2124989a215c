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
// The value of a container's environment variable, from `value` or a
// rendered ConfigMap's key; undefined when it has neither.
function envValue(container, variable) {
  const env = (container.env ?? []).find((e) => e.name === variable);
  const key = env?.valueFrom?.configMapKeyRef;
  const map = objects.find((o) => o.kind === "ConfigMap" &&
                                  o.metadata?.name === key?.name);
  return env?.value ?? map?.data?.[key?.key];
}

// The value a container passes for --flag, in its args or command: as
// written, or from the environment when it is $(VAR) (Kubernetes expands
// it) or "$VAR" / $VAR (in a shell command line). undefined when the flag
// is not passed.
function flagValue(container, flag) {
  const words = [...(container.command ?? []), ...(container.args ?? [])]
    .flatMap((a) => a.split(/\s+/));
  const word = words.find((w) => w.startsWith(`--${flag}=`));
  if (word === undefined) return undefined;
  const v = word.slice(flag.length + 3);
  const ref = /^(?:\$\(([A-Za-z_][A-Za-z0-9_]*)\)|"?\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?"?)$/.exec(v);
  return ref ? envValue(container, ref[1] ?? ref[2]) : v;
}

// A Kubernetes CPU quantity ("2", "250m", "1.5") in CPUs.
function cpusOf(quantity) {
  const match = /^([0-9.]+)(m?)$/.exec(String(quantity));
  if (!match) return NaN;
  return Number(match[1]) / (match[2] ? 1000 : 1);
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
// under load, and gRPC reads each request whole before scatterd counts it
// against the budget (max_streams calls' worth, of max_request_bytes at
// most each, unset: scatterd's default 64 MiB), so their sum, with a tenth
// to spare for the rest of the process, is what a pod can come to hold.
for (const deployment of objects.filter((o) => o.kind === "Deployment")) {
  for (const container of deployment.spec?.template?.spec?.containers ?? []) {
    if (container.name !== "scatterd") continue;
    const args = container.args ?? [];
    const name = `Deployment ${deployment.metadata?.name}`;
    const value = (flag) => Number(flagValue(container, flag));
    const flags = ["raster_cache_bytes", "tile_cache_bytes", "memory_budget_bytes"];
    const requests = (flagValue(container, "max_streams") === undefined
                        ? 16 : value("max_streams")) *
                     (flagValue(container, "max_request_bytes") === undefined
                        ? 64 * 2 ** 20 : value("max_request_bytes"));
    const sum = flags.map(value).reduce((a, b) => a + b, 0) + requests;
    const limit = bytesOf(container.resources?.limits?.memory);
    const terms = `${flags.join(" + ")} + max_streams x max_request_bytes`;
    if (!(sum <= 0.9 * limit)) {
      console.error(`FAIL ${name}: ${terms} = ${sum} bytes, over 90 % ` +
                    `of the memory limit ${container.resources?.limits?.memory}`);
      failures++;
    } else {
      console.log(`ok   ${name}: caches, sampling budget and arriving requests ` +
                  `${sum} bytes, within 90 % of ${container.resources.limits.memory}`);
    }
    // The caches are kept full once filled (nothing gives them back while
    // scatterd runs), so a busy pod sits at about their size: a memory
    // request below it lets the scheduler overcommit the node, and such
    // pods are evicted first. 128 MiB more for the process itself.
    const resident = value("raster_cache_bytes") + value("tile_cache_bytes") +
                     128 * 2 ** 20;
    const request = bytesOf(container.resources?.requests?.memory);
    if (!(request >= resident)) {
      console.error(`FAIL ${name}: memory request ` +
                    `${container.resources?.requests?.memory} is under the ` +
                    `caches a busy pod keeps (raster_cache_bytes + ` +
                    `tile_cache_bytes + 128 MiB = ${resident} bytes)`);
      failures++;
    } else {
      console.log(`ok   ${name}: memory request ` +
                  `${container.resources.requests.memory} holds the caches ` +
                  `and the process (${resident} bytes)`);
    }
  }
}
// A workload a HorizontalPodAutoscaler scales must not set its own
// replicas: every `kubectl apply -k` set the count back to it (3 in
// production, under an autoscaler of 3..30), and the pods over it drained
// with their streams.
for (const hpa of objects.filter((o) => o.kind === "HorizontalPodAutoscaler")) {
  const target = hpa.spec?.scaleTargetRef ?? {};
  const workload = objects.find((o) => o.kind === target.kind &&
                                       o.metadata?.name === target.name);
  const name = `${target.kind} ${target.name}`;
  if (workload === undefined) {
    console.error(`FAIL HorizontalPodAutoscaler ${hpa.metadata?.name}: ` +
                  `scales ${name}, which the render does not hold`);
    failures++;
  } else if (workload.spec?.replicas !== undefined) {
    console.error(`FAIL ${name}: replicas ${workload.spec.replicas}, but ` +
                  `HorizontalPodAutoscaler ${hpa.metadata?.name} owns the ` +
                  `count (each apply would reset it)`);
    failures++;
  } else {
    console.log(`ok   ${name}: no replicas of its own; ` +
                `HorizontalPodAutoscaler ${hpa.metadata?.name} sets them`);
  }
}
// A Deployment's replicas spread over nodes: a topology spread constraint
// on kubernetes.io/hostname whose selector picks its own pods (a selector
// that matched none spread nothing). Its pods tell a Prometheus that
// discovers pods by annotation the port of a containerPort of theirs.
for (const deployment of objects.filter((o) => o.kind === "Deployment")) {
  const name = `Deployment ${deployment.metadata?.name}`;
  const template = deployment.spec?.template ?? {};
  const podLabels = template.metadata?.labels ?? {};
  const selects = (selector) => {
    const match = selector?.matchLabels ?? {};
    return Object.keys(match).length > 0 &&
           Object.entries(match).every(([k, v]) => podLabels[k] === v);
  };
  const spread = (template.spec?.topologySpreadConstraints ?? []).find(
    (c) => c.topologyKey === "kubernetes.io/hostname" && selects(c.labelSelector));
  if (spread === undefined) {
    console.error(`FAIL ${name}: no topology spread over kubernetes.io/hostname ` +
                  `that selects its pods (labels ${JSON.stringify(podLabels)})`);
    failures++;
  } else {
    console.log(`ok   ${name}: spread over nodes, maxSkew ${spread.maxSkew}`);
  }
  const annotations = template.metadata?.annotations ?? {};
  const ports = (template.spec?.containers ?? [])
    .flatMap((c) => c.ports ?? []).map((p) => String(p.containerPort));
  if (annotations["prometheus.io/scrape"] !== "true" ||
      !ports.includes(annotations["prometheus.io/port"])) {
    console.error(`FAIL ${name}: prometheus.io/scrape is not "true" or ` +
                  `prometheus.io/port (${annotations["prometheus.io/port"]}) ` +
                  `is none of its containerPorts (${ports.join(", ")})`);
    failures++;
  } else {
    console.log(`ok   ${name}: scraped on port ${annotations["prometheus.io/port"]}`);
  }
}
// A Job's pods carry its labels, which `kubectl logs -l` finds them by
// (deploy/README.md, "Batch export"); without them it found none.
for (const job of objects.filter((o) => o.kind === "Job")) {
  const labels = job.metadata?.labels ?? {};
  const podLabels = job.spec?.template?.metadata?.labels ?? {};
  const missing = Object.keys(labels).filter((k) => podLabels[k] !== labels[k]);
  if (missing.length > 0) {
    console.error(`FAIL Job ${job.metadata?.name}: its pods lack its labels ` +
                  `${missing.join(", ")}`);
    failures++;
  } else {
    console.log(`ok   Job ${job.metadata?.name}: its pods carry its labels`);
  }
}
// `kubectl apply -k` on a fresh cluster creates only what the render holds:
// every namespace the objects name must be a Namespace of the render, or
// the apply fails with 'namespaces "..." not found'.
{
  const rendered = new Set(objects.filter((o) => o.kind === "Namespace")
                                  .map((o) => o.metadata?.name));
  const used = new Set(objects.map((o) => o.metadata?.namespace).filter(Boolean));
  for (const namespace of used) {
    if (rendered.has(namespace)) {
      console.log(`ok   namespace ${namespace} is rendered`);
    } else {
      console.error(`FAIL namespace ${namespace}: objects are in it, but the render ` +
                    `has no Namespace ${namespace} (apply fails on a fresh cluster)`);
      failures++;
    }
  }
}

// The workloads' pod templates and containers.
const workloads = ["Deployment", "StatefulSet", "DaemonSet", "Job"];
const containers = objects
  .filter((o) => workloads.includes(o.kind))
  .flatMap((o) => (o.spec?.template?.spec?.containers ?? []).map((container) => ({
    name: `${o.kind} ${o.metadata?.name} container ${container.name}`,
    kind: o.kind,
    container,
  })));

// scatterd and `scatter tiles --local` must be told their thread count.
// Unset, it is what the process can see: one thread per CPU of the node
// where the cgroup's quota cannot be read (and always, in builds before
// sampler/cpus.h), 64 on a 64-core node for a pod limited to 2 CPUs; and
// scatterd reserves a tile generator's bytes of its sampling budget per
// thread for every ScatterTiles call. --threads must be at least 1 and at
// most the container's CPU limit (rounded up).
for (const { name, kind, container } of containers) {
  const words = [...(container.command ?? []), ...(container.args ?? [])].join(" ");
  const scatterd = kind === "Deployment" && container.name === "scatterd";
  const localTiles = /\bscatter tiles\b/.test(words) && /--local\b/.test(words);
  if (!scatterd && !localTiles) continue;
  const threads = flagValue(container, "threads");
  const limit = cpusOf(container.resources?.limits?.cpu);
  if (threads === undefined) {
    console.error(`FAIL ${name}: no --threads; it would take one thread per ` +
                  `CPU it sees, not its CPU limit`);
    failures++;
  } else if (!/^[0-9]+$/.test(String(threads)) || Number(threads) < 1) {
    console.error(`FAIL ${name}: --threads=${threads}: must be a whole number >= 1`);
    failures++;
  } else if (!(limit > 0)) {
    console.error(`FAIL ${name}: no CPU limit to check --threads=${threads} against`);
    failures++;
  } else if (Number(threads) > Math.ceil(limit)) {
    console.error(`FAIL ${name}: --threads=${threads} is over the CPU limit ` +
                  `${container.resources.limits.cpu}`);
    failures++;
  } else {
    console.log(`ok   ${name}: --threads=${threads}, within the CPU limit ` +
                `${container.resources.limits.cpu}`);
  }
}

// An Indexed Job of `scatter tiles --shard=$JOB_COMPLETION_INDEX/N` exports
// band i of N in pod i: N must be its `completions`. With more shards than
// completions the Job succeeded with bands never written; with fewer, pods
// failed on an index past N.
for (const job of objects.filter((o) => o.kind === "Job")) {
  for (const container of job.spec?.template?.spec?.containers ?? []) {
    const name = `Job ${job.metadata?.name} container ${container.name}`;
    const words = [...(container.command ?? []), ...(container.args ?? [])]
      .flatMap((a) => a.split(/\s+/));
    const word = words.find((w) => w.startsWith("--shard="));
    if (word === undefined) continue;
    const [index, count] = word.slice("--shard=".length).replace(/"/g, "").split("/");
    const ref = /^\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?$|^\$\(([A-Za-z_][A-Za-z0-9_]*)\)$/
      .exec(count ?? "");
    const shards = ref ? envValue(container, ref[1] ?? ref[2]) : count;
    const completions = job.spec?.completions;
    if (!/JOB_COMPLETION_INDEX/.test(index ?? "") ||
        job.spec?.completionMode !== "Indexed") {
      console.error(`FAIL ${name}: --shard=${index}/... needs an Indexed Job's ` +
                    `$JOB_COMPLETION_INDEX`);
      failures++;
    } else if (String(shards) !== String(completions)) {
      console.error(`FAIL ${name}: --shard=.../${shards} but completions is ` +
                    `${completions}: every band needs one pod`);
      failures++;
    } else {
      console.log(`ok   ${name}: ${shards} shards, one per completion`);
    }
  }
}

// A Go duration as the CLI's flags take it ("4s", "500ms", "1m30s") in
// seconds; NaN when it is not one.
function secondsOf(duration) {
  const units = { h: 3600, m: 60, s: 1, ms: 1e-3, us: 1e-6, ns: 1e-9 };
  const parts = [...String(duration).matchAll(/([0-9.]+)(ms|us|ns|h|m|s)/g)];
  if (parts.map((p) => p[0]).join("") !== String(duration) || !parts.length) return NaN;
  return parts.reduce((sum, p) => sum + Number(p[1]) * units[p[2]], 0);
}

// Probes: scatterd has all three, and every probe sets timeoutSeconds
// (Kubernetes' default, 1 s, is short for a pod busy to its CPU limit,
// and for `scatter health` over TLS). An exec probe running `scatter
// health` must give it longer than its own --timeout (5 s by default), so
// that it reports its error instead of being killed.
for (const { name, kind, container } of containers) {
  const kinds = ["startupProbe", "readinessProbe", "livenessProbe"];
  if (kind === "Deployment" && container.name === "scatterd") {
    for (const probe of kinds.filter((k) => !container[k])) {
      console.error(`FAIL ${name}: no ${probe}`);
      failures++;
    }
  }
  for (const probe of kinds.filter((k) => container[k])) {
    const spec = container[probe];
    const timeout = spec.timeoutSeconds;
    const command = spec.exec?.command ?? [];
    const health = command[0] === "scatter" && command[1] === "health";
    const arg = command.find((a) => a.startsWith("--timeout="));
    const own = health ? secondsOf(arg ? arg.slice("--timeout=".length) : "5s") : 0;
    if (timeout === undefined) {
      console.error(`FAIL ${name}: ${probe} sets no timeoutSeconds (the default ` +
                    `is 1 s)`);
      failures++;
    } else if (health && !(timeout > own)) {
      console.error(`FAIL ${name}: ${probe} timeoutSeconds ${timeout} is not over ` +
                    `scatter health's own --timeout (${own} s)`);
      failures++;
    } else {
      console.log(`ok   ${name}: ${probe} timeoutSeconds ${timeout}` +
                  (health ? `, over scatter health's ${own} s` : ""));
    }
  }
}

if (count === 0) {
  console.error("no manifests on input");
  process.exit(1);
}
process.exit(failures === 0 ? 0 : 1);
