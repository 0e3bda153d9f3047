// The deployment files agree with each other and with the service: deploy/kubernetes (kustomize),
// deploy/compose.yaml with its Prometheus and nginx files, and docs/deployment.md. Pure parsing:
// no cluster, no Docker engine. With the `kubernetes-models` package installed, the Kubernetes
// objects are also checked against the Kubernetes API's OpenAPI schemas and, for unknown fields,
// its TypeScript interfaces (what kubeconform -strict does; see "schemas" below).

import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { START_ENV, START_NODE_FLAGS } from '../../bench/load/service.js';
import { describeSettings } from '../../src/service/config.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const k8sDir = join(root, 'deploy/kubernetes');
const read = (path: string): string => readFileSync(join(root, path), 'utf8');

// Loose views of the parsed YAML: each check reads only the fields it needs.
type Obj = Record<string, unknown>;
interface Manifest {
  file: string;
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  spec: Obj;
}

/** Every YAML document of a file, failing on a syntax error or a duplicate key. */
function yamlDocs(path: string): unknown[] {
  const docs = parseAllDocuments(read(path), { uniqueKeys: true, merge: true });
  if (!Array.isArray(docs)) throw new Error(`${path}: not YAML`);
  const problems = docs.flatMap((d) => [...d.errors, ...d.warnings].map((e) => `${path}: ${e.message}`));
  expect(problems).toEqual([]);
  return docs.map((d) => d.toJS() as unknown).filter((d) => d !== null);
}

/** The Kubernetes objects of deploy/kubernetes/*.yaml (and extras/ with `extras`), kustomization and Helm values left out. */
function manifests(extras: boolean): Manifest[] {
  const files = readdirSync(k8sDir).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml').map((f) => `deploy/kubernetes/${f}`);
  if (extras) {
    files.push(...readdirSync(join(k8sDir, 'extras')).filter((f) => f.endsWith('.yaml') && f !== 'prometheus-adapter-rules.yaml').map((f) => `deploy/kubernetes/extras/${f}`));
  }
  return files.flatMap((file) => yamlDocs(file).map((d) => ({ file, ...(d as Omit<Manifest, 'file'>) })));
}

const base = manifests(false);
const all = manifests(true);
const one = (kind: string, name: string, list: Manifest[] = base): Manifest => {
  const found = list.filter((m) => m.kind === kind && m.metadata.name === name);
  expect(found, `${kind}/${name}`).toHaveLength(1);
  return found[0]!;
};

const deployment = one('Deployment', 'canopy');
const podSpec = (deployment.spec.template as { spec: Obj }).spec;
const podLabels = (deployment.spec.template as { metadata: { labels: Record<string, string> } }).metadata.labels;
interface Container {
  name: string;
  ports: Array<{ name: string; containerPort: number }>;
  env: Array<{ name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }>;
  resources: { requests: { cpu: string; memory: string }; limits?: Obj };
  readinessProbe: { httpGet: { path: string; port: string | number } };
  livenessProbe: { httpGet: { path: string; port: string | number } };
  startupProbe?: { httpGet: { path: string; port: string | number } };
  lifecycle: { preStop: { exec?: { command: string[] }; sleep?: { seconds: number } } };
}
const container = (podSpec.containers as Container[])[0]!;
const env = (name: string): string | undefined => container.env.find((e) => e.name === name)?.value;

/** `matchLabels` selects `labels`: every pair of the selector is among the labels. */
const selects = (selector: Record<string, string>, labels: Record<string, string>): boolean =>
  Object.keys(selector).length > 0 && Object.entries(selector).every(([k, v]) => labels[k] === v);

/** The GET routes a service source file registers (`app.get('/healthz', ...)`). */
const routesOf = (path: string): string[] => [...read(path).matchAll(/app\.get\('([^']+)'/g)].map((m) => m[1]!);
const serviceRoutes = [...routesOf('src/service/http/health.ts'), ...routesOf('src/service/metrics.ts')];

/** Every metric name the service registers (src/service/metrics.ts), prom-client's defaults aside. */
const metricNames = new Set([...read('src/service/metrics.ts').matchAll(/(?:name: |\w+\()'(canopy_[a-z_]+)'/g)].map((m) => m[1]!));

// The Kubernetes API's own OpenAPI schemas, as compiled validators of the `kubernetes-models` npm
// package (types, required fields, enums, formats of every built-in object; unknown fields are NOT
// refused: the schemas allow them). The ServiceMonitor is a CRD and is not checked by them. The
// package is optional: without it that one test is skipped and says so. (The name is built so that
// the type-checker does not look for a package that may be absent.)
const MODELS = ['kubernetes', 'models'].join('-');
const models = await import(/* @vite-ignore */ `${MODELS}/apps/v1/Deployment`).then(() => true, () => false);

/** The CANOPY_* variables the service reads. CANOPY_REDIS_URL comes with issue 10 part 2 (durable sessions across instances). */
const knownEnv = new Set([...describeSettings().map((s) => s.env), 'CANOPY_REDIS_URL']);

describe('deploy/kubernetes', () => {
  it('every object has an apiVersion and kind this repository expects, a name and labels', () => {
    const expected: Record<string, string> = {
      Deployment: 'apps/v1',
      StatefulSet: 'apps/v1',
      Service: 'v1',
      PodDisruptionBudget: 'policy/v1',
      HorizontalPodAutoscaler: 'autoscaling/v2',
      NetworkPolicy: 'networking.k8s.io/v1',
      ServiceMonitor: 'monitoring.coreos.com/v1',
    };
    for (const m of all) {
      expect(expected[m.kind], `${m.file}: kind ${m.kind}`).toBeDefined();
      expect(m.apiVersion, `${m.file}: ${m.kind}`).toBe(expected[m.kind]);
      expect(m.metadata.name, `${m.file}`).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
      expect(m.metadata.labels?.['app.kubernetes.io/name'], `${m.file}: ${m.kind}/${m.metadata.name}`).toBeDefined();
      expect(m.spec, `${m.file}: ${m.kind}/${m.metadata.name}`).toBeTypeOf('object');
    }
    expect(base.map((m) => m.kind).toSorted()).toEqual(
      ['Deployment', 'HorizontalPodAutoscaler', 'NetworkPolicy', 'PodDisruptionBudget', 'Service', 'Service', 'StatefulSet'],
    );
  });

  it('kustomization.yaml lists exactly the manifests of the folder', () => {
    const [kustomization] = yamlDocs('deploy/kubernetes/kustomization.yaml') as Array<{ kind: string; resources: string[]; images: Array<{ name: string }> }>;
    expect(kustomization!.kind).toBe('Kustomization');
    const files = readdirSync(k8sDir).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml');
    expect(kustomization!.resources.toSorted()).toEqual(files.toSorted());
    // Its image rewrite names the image the Deployment uses.
    expect(kustomization!.images.map((i) => i.name)).toEqual([(podSpec.containers as Array<{ image: string }>)[0]!.image]);
  });

  it('probes point at the service routes: readiness at /readyz, liveness and start-up at /healthz, on the container port', () => {
    expect(serviceRoutes).toEqual(expect.arrayContaining(['/healthz', '/readyz', '/metrics']));
    expect(container.readinessProbe.httpGet.path).toBe('/readyz');
    // Never /readyz for liveness: a draining pod answers 503 there and would be killed mid-drain.
    expect(container.livenessProbe.httpGet.path).toBe('/healthz');
    expect(container.startupProbe?.httpGet.path).toBe('/healthz');
    const http = container.ports.find((p) => p.name === 'http')!;
    for (const probe of [container.readinessProbe, container.livenessProbe, container.startupProbe!]) {
      expect([http.name, http.containerPort]).toContain(probe.httpGet.port);
    }
    // The port the service listens on (CANOPY_PORT, the image's default) is the container port.
    expect(Number(env('CANOPY_PORT'))).toBe(http.containerPort);
    expect(read('Dockerfile')).toMatch(new RegExp(`CANOPY_PORT=${http.containerPort}\\b[\\s\\S]*EXPOSE ${http.containerPort}\\b`));
    // The scrape annotations name the metrics route and port.
    const annotations = (deployment.spec.template as { metadata: { annotations: Record<string, string> } }).metadata.annotations;
    expect(serviceRoutes).toContain(annotations['prometheus.io/path']);
    expect(Number(annotations['prometheus.io/port'])).toBe(http.containerPort);
  });

  it('the image, npm start and the load generator start node with the same flags (a floor under the main thread heap) and environment', () => {
    const cmd = /^CMD (\[.*\])$/m.exec(read('Dockerfile'));
    expect(JSON.parse(cmd![1]!)).toEqual(['node', ...START_NODE_FLAGS, 'dist/src/service/main.js']);
    const start = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts.start!;
    expect(start).toContain(`exec node ${START_NODE_FLAGS.join(' ')} dist/src/service/main.js`);
    expect(read('docs/configuration.md')).toContain(`node ${START_NODE_FLAGS.join(' ')}`);
    // And with the same environment, which the caller's may override.
    for (const [name, value] of Object.entries(START_ENV)) {
      expect(read('Dockerfile')).toContain(`ENV ${name}=${value}`);
      expect(start).toContain(`${name}=\${${name}:-${value}}`);
    }
  });

  it('every CANOPY_* variable is one the service reads, and the API keys come from a Secret', () => {
    const names = container.env.map((e) => e.name);
    expect(names.filter((n) => !knownEnv.has(n))).toEqual([]);
    expect(names).toEqual(expect.arrayContaining(['CANOPY_REDIS_URL', 'CANOPY_WORKERS', 'CANOPY_API_KEYS', 'CANOPY_SHUTDOWN_MS']));
    const keys = container.env.find((e) => e.name === 'CANOPY_API_KEYS')!;
    expect(keys.value).toBeUndefined();
    expect(keys.valueFrom?.secretKeyRef).toEqual({ name: 'canopy-api-keys', key: 'keys' });
    // The guide says how to create that Secret.
    expect(read('docs/deployment.md')).toContain('kubectl create secret generic canopy-api-keys --from-literal=keys=');
  });

  it('the grace period covers the preStop sleep and the whole drain (CANOPY_SHUTDOWN_MS)', () => {
    const shutdownMs = Number(env('CANOPY_SHUTDOWN_MS'));
    expect(shutdownMs).toBeGreaterThan(0);
    const preStop = container.lifecycle.preStop;
    const sleep = preStop.sleep?.seconds ?? Number(preStop.exec?.command.join(' ').match(/^sleep (\d+)$/)?.[1]);
    expect(sleep).toBeGreaterThan(0);
    expect(podSpec.terminationGracePeriodSeconds as number).toBeGreaterThan(sleep + shutdownMs / 1000);
  });

  it('one worker thread per requested core; a memory request and limit', () => {
    const cpu = container.resources.requests.cpu;
    const cores = cpu.endsWith('m') ? Number(cpu.slice(0, -1)) / 1000 : Number(cpu);
    expect(Number(env('CANOPY_WORKERS'))).toBe(cores);
    expect(container.resources.requests.memory).toMatch(/^\d+(Mi|Gi)$/);
    expect(container.resources.limits?.memory).toMatch(/^\d+(Mi|Gi)$/);
  });

  it('labels and selectors match across the Deployment, Service, PodDisruptionBudget, HPAs and the Redis objects', () => {
    expect((deployment.spec.selector as { matchLabels: Record<string, string> }).matchLabels).toEqual(podLabels);
    // The HPA owns the replica count.
    expect(deployment.spec.replicas).toBeUndefined();

    const service = one('Service', 'canopy');
    expect(selects(service.spec.selector as Record<string, string>, podLabels)).toBe(true);
    expect(service.spec.sessionAffinity).toBe('None');
    const servicePorts = service.spec.ports as Array<{ name: string; port: number; targetPort: string }>;
    expect(container.ports.map((p) => p.name)).toContain(servicePorts[0]!.targetPort);

    const pdb = one('PodDisruptionBudget', 'canopy');
    expect(selects((pdb.spec.selector as { matchLabels: Record<string, string> }).matchLabels, podLabels)).toBe(true);

    for (const hpa of all.filter((m) => m.kind === 'HorizontalPodAutoscaler')) {
      expect(hpa.spec.scaleTargetRef, `${hpa.file}`).toEqual({ apiVersion: deployment.apiVersion, kind: 'Deployment', name: deployment.metadata.name });
      // Two pods at least, so a drained or crashed pod's sessions have somewhere to go, and the
      // disruption budget never takes the last one.
      expect(hpa.spec.minReplicas as number, `${hpa.file}`).toBeGreaterThanOrEqual(2);
      expect(pdb.spec.maxUnavailable as number).toBeLessThan(hpa.spec.minReplicas as number);
    }
    // The agents HPA targets a metric the service exports.
    const agentsHpa = one('HorizontalPodAutoscaler', 'canopy', all.filter((m) => m.file.endsWith('extras/hpa-agents.yaml')));
    const podMetric = (agentsHpa.spec.metrics as Array<{ type: string; pods?: { metric: { name: string } } }>).find((m) => m.type === 'Pods')!;
    expect(metricNames).toContain(podMetric.pods!.metric.name);

    const spread = (podSpec.topologySpreadConstraints as Array<{ labelSelector: { matchLabels: Record<string, string> } }>)[0]!;
    expect(selects(spread.labelSelector.matchLabels, podLabels)).toBe(true);

    const monitor = one('ServiceMonitor', 'canopy', all);
    expect(selects((monitor.spec.selector as { matchLabels: Record<string, string> }).matchLabels, service.metadata.labels!)).toBe(true);
    const endpoint = (monitor.spec.endpoints as Array<{ port: string; path: string }>)[0]!;
    expect(servicePorts.map((p) => p.name)).toContain(endpoint.port);
    expect(serviceRoutes).toContain(endpoint.path);
  });

  it('CANOPY_REDIS_URL names the Redis Service, which selects the Redis pod, which only Canopy pods may reach', () => {
    const url = new URL(env('CANOPY_REDIS_URL')!);
    expect(url.protocol).toBe('redis:');
    const redisService = one('Service', url.hostname);
    const redisPorts = redisService.spec.ports as Array<{ port: number; targetPort: string }>;
    expect(redisPorts.map((p) => p.port)).toContain(Number(url.port || 6379));

    const redis = one('StatefulSet', 'canopy-redis');
    expect(redis.spec.replicas).toBe(1);
    const redisLabels = (redis.spec.template as { metadata: { labels: Record<string, string> } }).metadata.labels;
    expect((redis.spec.selector as { matchLabels: Record<string, string> }).matchLabels).toEqual(redisLabels);
    expect(selects(redisService.spec.selector as Record<string, string>, redisLabels)).toBe(true);
    const redisContainer = ((redis.spec.template as { spec: { containers: Array<{ ports: Array<{ name: string }>; args: string[] }> } }).spec.containers)[0]!;
    expect(redisContainer.ports.map((p) => p.name)).toContain(redisPorts[0]!.targetPort);
    // Refuse writes when full rather than evict a session's lease or log.
    expect(redisContainer.args.join(' ')).toContain('--maxmemory-policy noeviction');

    const policy = one('NetworkPolicy', 'canopy-redis');
    expect(selects((policy.spec.podSelector as { matchLabels: Record<string, string> }).matchLabels, redisLabels)).toBe(true);
    const from = (policy.spec.ingress as Array<{ from: Array<{ podSelector: { matchLabels: Record<string, string> } }> }>)[0]!.from[0]!;
    expect(selects(from.podSelector.matchLabels, podLabels)).toBe(true);
    expect(selects(from.podSelector.matchLabels, redisLabels)).toBe(false);
  });

  it('the prometheus-adapter rule exposes a metric the service exports, under the name the agents HPA reads', () => {
    const [values] = yamlDocs('deploy/kubernetes/extras/prometheus-adapter-rules.yaml') as Array<{ rules: { custom: Array<{ seriesQuery: string; name: { as: string } }> } }>;
    const rule = values!.rules.custom[0]!;
    expect(metricNames).toContain(/^(canopy_[a-z_]+)\{/.exec(rule.seriesQuery)?.[1]);
    expect(rule.name.as).toBe('canopy_agents');
  });

  it.skipIf(!models)('schemas: every built-in object validates against the Kubernetes OpenAPI schema (skipped without the kubernetes-models package)', async () => {
    const problems: string[] = [];
    for (const m of all.filter((o) => !o.apiVersion.includes('coreos.com'))) {
      // `apps/v1` → kubernetes-models/apps/v1/Deployment; the core group's `v1` → kubernetes-models/v1/Service.
      const mod = (await import(/* @vite-ignore */ `${MODELS}/${m.apiVersion}/${m.kind}`)) as Record<string, new (data: unknown) => { validate(): void }>;
      const { file, ...object } = m;
      try {
        new mod[m.kind]!(object).validate();
      } catch (err) {
        problems.push(`${file}: ${m.kind}/${m.metadata.name}: ${(err as Error).message}`);
      }
    }
    expect(problems).toEqual([]);
  });

  // The OpenAPI schemas let unknown fields through (a misspelt `terminationGracePeriodSecond` would
  // pass); kubernetes-models' TypeScript types do not: an object literal typed as IDeployment may
  // only have the API's fields, at every depth. So each object is written out as a typed constant
  // and type-checked by the repository's tsc (about a second).
  it.skipIf(!models)('no unknown field anywhere: each built-in object type-checks as kubernetes-models’ interface (skipped without the package)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'canopy-k8s-types-'));
    try {
      symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
      writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n');
      const compilerOptions = { strict: true, noEmit: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', skipLibCheck: true, types: [] };
      writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['manifests.ts'] }));
      const objects = all.filter((o) => !o.apiVersion.includes('coreos.com'));
      const imports = [...new Set(objects.map((m) => `import type { I${m.kind} } from '${MODELS}/${m.apiVersion}/${m.kind}';`))];
      let text = `${imports.join('\n')}\n`;
      const starts: Array<{ line: number; what: string }> = [];
      objects.forEach(({ file, ...object }, i) => {
        starts.push({ line: text.split('\n').length, what: `${file}: ${object.kind}/${object.metadata.name}` });
        text += `export const m${i}: I${object.kind} = ${JSON.stringify(object, null, 1)};\n`;
      });
      writeFileSync(join(dir, 'manifests.ts'), text);
      const tsc = spawnSync(join(root, 'node_modules/.bin/tsc'), ['-p', '.'], { cwd: dir, encoding: 'utf8' });
      const problems = `${tsc.stdout}${tsc.stderr}`.split('\n').filter((l) => l.trim() !== '').map((l) => {
        const at = /manifests\.ts\((\d+),\d+\): (.*)$/.exec(l);
        if (at === null) return `tsc: ${l}`;
        return `${starts.findLast((s) => s.line <= Number(at[1]))?.what}: ${at[2]}`;
      });
      expect(problems).toEqual([]);
      expect(tsc.status).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('deploy/compose.yaml', () => {
  const [compose] = yamlDocs('deploy/compose.yaml') as Array<{
    services: Record<string, {
      build?: { context: string; dockerfile: string };
      environment?: Record<string, string>;
      volumes?: string[];
      depends_on?: Record<string, unknown> | string[];
      stop_grace_period?: string;
    }>;
  }>;
  const services = compose!.services;
  const canopies = Object.keys(services).filter((s) => services[s]!.build !== undefined);

  it('two Canopy instances built from the repository Dockerfile, Redis, Prometheus and a load balancer', () => {
    expect(canopies).toEqual(['canopy-a', 'canopy-b']);
    for (const name of canopies) {
      const build = services[name]!.build!;
      expect(existsSync(join(root, 'deploy', build.context, build.dockerfile)), `${name}: ${build.context}/${build.dockerfile}`).toBe(true);
    }
    expect(Object.keys(services).toSorted()).toEqual(['canopy-a', 'canopy-b', 'lb', 'prometheus', 'redis']);
  });

  it('every file it mounts exists, and every dependency is a service of the file', () => {
    for (const [name, s] of Object.entries(services)) {
      for (const volume of s.volumes ?? []) {
        const source = volume.split(':')[0]!;
        expect(existsSync(join(root, 'deploy', source)), `${name}: ${source}`).toBe(true);
      }
      const deps = Array.isArray(s.depends_on) ? s.depends_on : Object.keys(s.depends_on ?? {});
      for (const dep of deps) expect(Object.keys(services), `${name} depends on ${dep}`).toContain(dep);
    }
  });

  it('the instances read known variables, reach the Redis service, and get more than the drain to stop', () => {
    for (const name of canopies) {
      const environment = services[name]!.environment!;
      expect(Object.keys(environment).filter((n) => !knownEnv.has(n))).toEqual([]);
      expect(Object.keys(services)).toContain(new URL(environment.CANOPY_REDIS_URL!).hostname);
      const grace = Number(/^(\d+)s$/.exec(services[name]!.stop_grace_period!)?.[1]);
      expect(grace).toBeGreaterThan(Number(environment.CANOPY_SHUTDOWN_MS) / 1000);
    }
  });

  it('Prometheus scrapes both instances at the metrics route, and nginx balances over both', () => {
    const [prometheus] = yamlDocs('deploy/prometheus.yml') as Array<{ scrape_configs: Array<{ metrics_path: string; static_configs: Array<{ targets: string[] }> }> }>;
    const job = prometheus!.scrape_configs[0]!;
    expect(serviceRoutes).toContain(job.metrics_path);
    expect(job.static_configs.flatMap((c) => c.targets).toSorted()).toEqual(canopies.map((c) => `${c}:8080`));
    const upstream = [...read('deploy/nginx.conf').matchAll(/^\s*server (\S+?:\d+)/gm)].map((m) => m[1]);
    expect(upstream.toSorted()).toEqual(canopies.map((c) => `${c}:8080`));
  });
});

describe('docs/deployment.md', () => {
  const guide = read('docs/deployment.md');

  it('every deploy/ path it names exists, and the README links to it', () => {
    const paths = [...guide.matchAll(/`(deploy\/[\w./-]*)`/g)].map((m) => m[1]!);
    expect(paths.length).toBeGreaterThan(0);
    expect(paths.filter((p) => !existsSync(join(root, p)))).toEqual([]);
    expect(read('README.md')).toContain('](docs/deployment.md)');
  });

  it('every canopy_* metric it (or a deploy file) names is one the service exports', () => {
    const files = [...new Set(all.map((m) => m.file)), 'deploy/kubernetes/extras/prometheus-adapter-rules.yaml', 'deploy/prometheus.yml', 'deploy/compose.yaml'];
    const texts = [guide, ...files.map(read)];
    const named = new Set(texts.flatMap((t) => [...t.matchAll(/\b(canopy_[a-z_]+)/g)].map((m) => m[1]!)));
    expect(named.size).toBeGreaterThan(3);
    expect([...named].filter((n) => !metricNames.has(n) && !metricNames.has(n.replace(/_(bucket|sum|count)$/, '')))).toEqual([]);
  });
});
