/**
 * @jest-environment-options {"customExportConditions": ["node", "node-addons", "import"]}
 */
// kubernetes-models publishes ES modules under the "import" condition only; the docblock above
// lets this file (alone) resolve them, and Node >= 24.9 loads them through require(esm).
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { getMetadataStorage } from 'class-validator';
import { Wallet } from 'ethers';
import { Deployment } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { Job } from 'kubernetes-models/batch/v1';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ConfigMap, Namespace, Secret, Service } from 'kubernetes-models/v1';
import { parseAllDocuments } from 'yaml';
import { AppConfig } from './app-config';
import { EnvSchema, validateEnv } from './env.schema';
import { PROCESS_SECRETS, SECRET_NAMES } from './secrets';

/**
 * deploy/kubernetes/ (DESIGN §23, docs/operations.md "Kubernetes"), checked offline: there is no
 * cluster here. Every manifest validates against the Kubernetes OpenAPI schemas
 * (kubernetes-models) with no field the schema does not know, and the configuration each process
 * gets from the ConfigMaps and the Secret boots that process's own AppConfig (src/config/env.schema.ts).
 */

const DIR = join(__dirname, '..', '..', 'deploy', 'kubernetes');
const NAMESPACE = 'payments';

type Doc = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
interface ModelClass {
  new (data: never): { validate(): void };
}

const MODELS: Record<string, ModelClass> = {
  'v1/Namespace': Namespace,
  'v1/ConfigMap': ConfigMap,
  'v1/Secret': Secret,
  'v1/Service': Service,
  'apps/v1/Deployment': Deployment,
  'batch/v1/Job': Job,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
};

/** Every document of every .yaml file, with the file it came from. */
function loadManifests(): Array<{ file: string; doc: Doc }> {
  const out: Array<{ file: string; doc: Doc }> = [];
  for (const file of readdirSync(DIR).filter((f) => f.endsWith('.yaml')).sort()) {
    for (const d of parseAllDocuments(readFileSync(join(DIR, file), 'utf8'))) {
      if (d.errors.length || d.warnings.length) throw new Error(`${file}: ${[...d.errors, ...d.warnings].map((e) => e.message).join('; ')}`);
      const doc = d.toJS() as Doc | null;
      if (doc) out.push({ file, doc });
    }
  }
  return out;
}

function validationError(model: ModelClass, doc: Doc): string | null {
  try {
    new model(structuredClone(doc) as never).validate();
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}

/**
 * Paths in `doc` the schema does not know. The Kubernetes schemas allow unknown properties (the
 * API server drops them, or refuses them under strict field validation), so a misspelt
 * `readinesProbe` would validate. Each path is probed by giving it a value of the wrong type: a
 * known field then fails validation at that path, an unknown one does not.
 */
function unknownFields(model: ModelClass, doc: Doc): string[] {
  const unknown: string[] = [];
  const visit = (value: unknown, path: Array<string | number>) => {
    if (path.length > 0 && !(typeof path.at(-1) === 'number')) {
      const probe = structuredClone(doc);
      let at: Doc = probe;
      for (const key of path.slice(0, -1)) at = at[key];
      at[path.at(-1)!] = typeof value === 'object' && value !== null ? 12345 : { probe: true };
      if (validationError(model, probe) === null) {
        unknown.push(path.join('.'));
        return; // what lies under an unknown field is unknown too
      }
    }
    if (Array.isArray(value)) value.forEach((v, i) => visit(v, [...path, i]));
    else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) visit(v, [...path, k]);
  };
  visit(doc, []);
  return unknown;
}

const manifests = loadManifests();
const of = (kind: string, name: string): Doc => {
  const found = manifests.find(({ doc }) => doc.kind === kind && doc.metadata?.name === name);
  if (!found) throw new Error(`no ${kind} ${name} in deploy/kubernetes`);
  return found.doc;
};
const podSpec = (workload: Doc): Doc => workload.spec.template.spec;
const container = (workload: Doc): Doc => podSpec(workload).containers[0];

/** A placeholder the operator must replace; a process refuses to start while one is left. */
const PLACEHOLDER = 'REPLACE_ME';

/** Well-formed stand-ins for the placeholders, as an operator would fill them in. */
const SAMPLES: Record<string, () => string> = {
  API_BASE_URL: () => 'https://payments.example.com',
  CHECKOUT_BASE_URL: () => 'https://payments.example.com',
  MCP_BASE_URL: () => 'https://payments.example.com',
  ESCROW_ADDRESS: () => Wallet.createRandom().address,
  ESCROW_DEPLOY_BLOCK: () => '23456789',
  VERIFICATION_ADDRESS: () => Wallet.createRandom().address,
  DATABASE_URL: () => 'postgres://payments:pw@10.20.0.5:5432/payments',
  REDIS_URL: () => 'redis://:pw@10.20.0.6:6379',
  RPC_URL: () => 'https://base-mainnet.rpc.example.com/v2/key',
  RELAYER_PRIVATE_KEY: () => Wallet.createRandom().privateKey,
  TERMS_SIGNER_PRIVATE_KEY: () => Wallet.createRandom().privateKey,
  SIGNER_ENCRYPTION_KEY: () => randomBytes(24).toString('hex'),
  OPERATOR_TOKEN: () => randomBytes(16).toString('hex'),
  STRIPE_SECRET_KEY: () => `sk_live_${randomBytes(12).toString('hex')}`,
  STRIPE_WEBHOOK_SECRET: () => `whsec_${randomBytes(12).toString('hex')}`,
  SMTP_URL: () => 'smtps://mailer:pw@smtp.example.com:465',
};

/** EnvSchema variables no manifest sets, and why. */
const NOT_DEPLOYED: Record<string, string> = {
  ARBITER_PRIVATE_KEY: 'operator CLI only (escrow:resolve)',
  DEPLOYER_PRIVATE_KEY: 'operator CLI only (chain:deploy)',
  CHAIN_ID: 'filled by CHAIN',
  USDC_ADDRESS: 'filled by CHAIN',
  USDC_EIP712_NAME: 'filled by CHAIN',
  USDC_EIP712_VERSION: 'filled by CHAIN',
  IDENTITY_SANDBOX_WEBHOOK_SECRET: 'the sandbox identity provider runs on the local chain only',
  STRIPE_API_BASE: 'a local Stripe stand-in for tests',
};
/** Variables the manifests set that are not EnvSchema's: read by Node itself. */
const NODE_VARIABLES = new Set(['NODE_OPTIONS']);

/**
 * The environment a container gets: its ConfigMaps (envFrom), then its `env` entries (literal
 * values and Secret keys), each as the manifests hold it, with placeholders swapped for samples
 * when `filled`.
 */
function environment(workload: Doc, filled: boolean): Record<string, string> {
  const c = container(workload);
  const fill = (key: string, value: string) => {
    if (!filled || value !== PLACEHOLDER) return value;
    if (!SAMPLES[key]) throw new Error(`no sample for placeholder ${key}`);
    return SAMPLES[key]();
  };
  const env: Record<string, string> = {};
  for (const from of c.envFrom ?? []) {
    for (const [k, v] of Object.entries(of('ConfigMap', from.configMapRef.name).data as Record<string, string>)) env[k] = fill(k, v);
  }
  for (const e of c.env ?? []) {
    if (e.value !== undefined) env[e.name] = fill(e.name, e.value);
    else {
      const ref = e.valueFrom.secretKeyRef;
      const value = (of('Secret', ref.name).stringData as Record<string, string>)[ref.key];
      if (value === undefined && ref.optional) continue;
      if (value === undefined) throw new Error(`${workload.metadata.name}: Secret ${ref.name} has no key ${ref.key}`);
      env[e.name] = fill(ref.key, value);
    }
  }
  return env;
}

/** Every variable EnvSchema validates (class-validator's metadata of its properties). */
function schemaVariables(): string[] {
  return [...new Set(getMetadataStorage().getTargetValidationMetadatas(EnvSchema, '', true, false).map((m) => m.propertyName))].sort();
}

const api = of('Deployment', 'payments-api');
const worker = of('Deployment', 'payments-worker');
const migrate = of('Job', 'payments-migrate');

describe('deploy/kubernetes manifests', () => {
  it('holds every kind the design names', () => {
    const kinds = new Set(manifests.map(({ doc }) => doc.kind));
    for (const kind of ['Deployment', 'Job', 'Service', 'HorizontalPodAutoscaler', 'PodDisruptionBudget', 'NetworkPolicy', 'ConfigMap', 'Secret']) expect(kinds).toContain(kind);
  });

  it.each(manifests.map(({ file, doc }) => [`${file} ${doc.kind}/${doc.metadata?.name}`, doc] as const))('%s validates against the Kubernetes schema', (_, doc) => {
    const model = MODELS[`${doc.apiVersion}/${doc.kind}`];
    expect(model).toBeDefined();
    expect(validationError(model, doc)).toBeNull();
    expect(unknownFields(model, doc)).toEqual([]);
    if (doc.kind !== 'Namespace') expect(doc.metadata.namespace).toBe(NAMESPACE);
  });

  it('the schema check refuses a wrong type and the field check a misspelt field', () => {
    const broken = structuredClone(api);
    container(broken).ports[0].containerPort = 'http';
    expect(validationError(Deployment, broken)).toMatch(/containerPort/);
    const misspelt = structuredClone(api);
    container(misspelt).readinesProbe = container(misspelt).readinessProbe;
    delete container(misspelt).readinessProbe;
    expect(unknownFields(Deployment, misspelt)).toEqual(['spec.template.spec.containers.0.readinesProbe']);
  });

  describe.each([
    ['api', api],
    ['worker', worker],
  ])('the %s Deployment', (_, d) => {
    it('runs non-root with a read-only root filesystem; /tmp is an emptyDir', () => {
      expect(podSpec(d).securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } });
      expect(container(d).securityContext).toEqual({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
      const mount = container(d).volumeMounts.find((m: Doc) => m.mountPath === '/tmp');
      expect(podSpec(d).volumes.find((v: Doc) => v.name === mount.name).emptyDir).toBeDefined();
      expect(podSpec(d).automountServiceAccountToken).toBe(false);
      expect(container(d).resources.requests).toEqual(expect.objectContaining({ cpu: expect.any(String), memory: expect.any(String) }));
      expect(container(d).resources.limits.memory).toEqual(expect.any(String));
    });

    it('probes liveness on /health/live and readiness on /health/serving (PostgreSQL and Redis only)', () => {
      expect(container(d).livenessProbe.httpGet.path).toBe('/health/live');
      expect(container(d).readinessProbe.httpGet.path).toBe('/health/serving');
      // The database check waits up to 2 s (health.controller.ts); the probe must wait longer.
      expect(container(d).readinessProbe.timeoutSeconds).toBeGreaterThan(2);
    });

    it('gives a stopping pod longer than its longest request or job', () => {
      const env = validateEnv(environment(d, true));
      const longestMs = env.RELAYER_WAIT_MS + env.CHAIN_WAIT_MS + 2 * env.RPC_TIMEOUT_MS;
      const preStopMs = (container(d).lifecycle?.preStop?.sleep?.seconds ?? 0) * 1000;
      expect(podSpec(d).terminationGracePeriodSeconds * 1000).toBeGreaterThan(preStopMs + longestMs);
    });

    it('its selector matches its pods, and its Service and PodDisruptionBudget select them', () => {
      const labels = d.spec.template.metadata.labels;
      expect(labels).toMatchObject(d.spec.selector.matchLabels);
      expect(labels).toMatchObject(of('Service', d.metadata.name).spec.selector);
      expect(labels).toMatchObject(of('PodDisruptionBudget', d.metadata.name).spec.selector.matchLabels);
      const named = container(d).ports.map((p: Doc) => p.name);
      expect(named).toContain(of('Service', d.metadata.name).spec.ports[0].targetPort);
    });
  });

  it('the api scales on CPU; each NetworkPolicy selects pods that exist', () => {
    const hpa = of('HorizontalPodAutoscaler', 'payments-api');
    expect(hpa.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: 'payments-api' });
    expect(hpa.spec.metrics).toEqual([expect.objectContaining({ type: 'Resource', resource: expect.objectContaining({ name: 'cpu' }) })]);
    const pods = [api, worker, migrate].map((w) => w.spec.template.metadata.labels as Record<string, string>);
    const selects = (sel: Doc, labels: Record<string, string>) =>
      Object.entries(sel.matchLabels ?? {}).every(([k, v]) => labels[k] === v) &&
      (sel.matchExpressions ?? []).every((e: Doc) => e.operator === 'In' && e.values.includes(labels[e.key]));
    for (const { doc } of manifests.filter((m) => m.doc.kind === 'NetworkPolicy')) {
      expect([doc.metadata.name, pods.some((l) => selects(doc.spec.podSelector, l))]).toEqual([doc.metadata.name, true]);
    }
  });
});

describe('deploy/kubernetes configuration covers src/config/env.schema.ts', () => {
  const configKeys = new Set(manifests.filter((m) => m.doc.kind === 'ConfigMap').flatMap((m) => Object.keys(m.doc.data)));
  const secretKeys = new Set(Object.keys(of('Secret', 'payments-secrets').stringData));

  it('every EnvSchema variable is set by a ConfigMap or the Secret, or is listed as not deployed with its reason', () => {
    const missing = schemaVariables().filter((v) => !configKeys.has(v) && !secretKeys.has(v) && !(v in NOT_DEPLOYED));
    expect(missing).toEqual([]);
  });

  it('every key set is a variable the processes read (no typo goes unnoticed)', () => {
    const known = new Set(schemaVariables());
    expect([...configKeys, ...secretKeys].filter((k) => !known.has(k) && !NODE_VARIABLES.has(k))).toEqual([]);
  });

  it('every Secret value is a placeholder, and every placeholder has a sample here', () => {
    const placeholders = [...manifests.filter((m) => m.doc.kind === 'ConfigMap').flatMap((m) => Object.entries(m.doc.data)), ...Object.entries(of('Secret', 'payments-secrets').stringData)]
      .filter(([, v]) => v === PLACEHOLDER)
      .map(([k]) => k);
    for (const value of Object.values(of('Secret', 'payments-secrets').stringData)) expect(value).toBe(PLACEHOLDER);
    expect(placeholders.filter((k) => !SAMPLES[k])).toEqual([]);
  });

  it.each([
    ['api', api, PROCESS_SECRETS.api],
    ['worker', worker, PROCESS_SECRETS.worker],
  ] as const)('the %s gets exactly the secrets it loads and starts on chain 8453 once the placeholders are filled', (name, d, secrets) => {
    const env = environment(d, true);
    expect(SECRET_NAMES.filter((s) => s in env).sort()).toEqual([...secrets].sort());
    const config = new AppConfig(env, { name, secrets });
    expect(config.env.CHAIN_ID).toBe(8453);
    for (const s of secrets) expect(config.secret(s)).toBe(env[s]);
  });

  it.each([
    ['api', api, PROCESS_SECRETS.api],
    ['worker', worker, PROCESS_SECRETS.worker],
  ] as const)('the %s refuses to start while a placeholder is left, naming each', (name, d, secrets) => {
    const raw = environment(d, false);
    const left = Object.entries(raw).filter(([, v]) => v === PLACEHOLDER).map(([k]) => k);
    expect(left.length).toBeGreaterThan(0);
    let message = '';
    try {
      new AppConfig(raw, { name, secrets });
    } catch (err) {
      message = (err as Error).message;
    }
    for (const key of left) expect(message).toContain(`  ${key}=`);
  });

  it('SMTP_URL is optional: without it in the Secret both processes still start', () => {
    const secret = of('Secret', 'payments-secrets');
    const saved = secret.stringData.SMTP_URL;
    delete secret.stringData.SMTP_URL;
    try {
      for (const [name, d, secrets] of [['api', api, PROCESS_SECRETS.api], ['worker', worker, PROCESS_SECRETS.worker]] as const) {
        const env = environment(d, true);
        expect(env).not.toHaveProperty('SMTP_URL');
        expect(new AppConfig(env, { name, secrets }).env.SMTP_URL).toBeUndefined();
      }
    } finally {
      secret.stringData.SMTP_URL = saved;
    }
  });

  it('the api alone gets the Stripe Identity keys; the migrations only DATABASE_URL', () => {
    expect(environment(api, false)).toHaveProperty('STRIPE_SECRET_KEY');
    expect(environment(worker, false)).not.toHaveProperty('STRIPE_SECRET_KEY');
    const env = environment(migrate, true);
    expect(Object.keys(env).filter((k) => secretKeys.has(k))).toEqual(['DATABASE_URL']);
    expect(validateEnv(env).DATABASE_URL).toBe(env.DATABASE_URL);
  });
});
