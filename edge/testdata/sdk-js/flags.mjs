// Drives the real posthog-node and posthog-js (in jsdom) through hedge's feature flags,
// then prints a JSON manifest on stdout: every answer each SDK gave, the browsers'
// identities, the events sent with sendFeatureFlags, and the HTTP status of every
// request either SDK made. TestFlagSDKs (sdk_flags_test.go in the hedge package) writes
// the subjects, runs this, and checks each answer against hedge's own /flags/ answer
// and the events in the database.
//
//   node flags.mjs node remote     posthog-node, remote evaluation (no personal key)
//   node flags.mjs node local      posthog-node, local evaluation (personalApiKey)
//   node flags.mjs js <bundle>     posthog-js in jsdom, bundle no-external (the remote
//                                  config as JSON) or default (config.js by a <script>,
//                                  which jsdom runs)
//
// Environment: HEDGE_CAPTURE_URL, HEDGE_PROJECT_KEY (phc_...), HEDGE_PERSONAL_KEY
// (phx_...), HEDGE_FLAG_SUBJECTS (a JSON file: {flags, payload_flags, remote_config_flag,
// remote_config_flag_id, node_remote, node_local, browsers}).
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { recording, requests, settled } from './record.mjs';

const host = process.env.HEDGE_CAPTURE_URL;
const key = process.env.HEDGE_PROJECT_KEY;
const personalApiKey = process.env.HEDGE_PERSONAL_KEY;
const subjectsFile = process.env.HEDGE_FLAG_SUBJECTS;
if (!host || !key || !personalApiKey || !subjectsFile) {
  console.error('HEDGE_CAPTURE_URL, HEDGE_PROJECT_KEY, HEDGE_PERSONAL_KEY and HEDGE_FLAG_SUBJECTS must be set');
  process.exit(2);
}
const subjects = JSON.parse(readFileSync(subjectsFile, 'utf8'));

// answers: {sdk, call, id, key?, value?, payload?, flags?, payloads?}; a value or a
// payload the SDK answered undefined is null.
const answers = [];
const browsers = []; // {bundle, phase, id, anon?, hedge}: hedge's answer for what the browser sent
const captures = []; // {uuid, id}: events captured with sendFeatureFlags

const orNull = (v) => (v === undefined ? null : v);

// A flag request's timeout, 3 s by default in every SDK: longer, as make test shares
// the cores with other tests, and a request that times out fails the test.
const featureFlagsRequestTimeoutMs = 10000;

// pool runs fn over items, width at a time.
async function pool(items, width, fn) {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) {
        const i = next++;
        await fn(items[i], i);
      }
    }),
  );
}

function options(s) {
  const o = {};
  if (s.person_properties) o.personProperties = s.person_properties;
  if (s.groups) o.groups = s.groups;
  if (s.group_properties) o.groupProperties = s.group_properties;
  return o;
}

// nodeClient is a posthog-node client whose requests are recorded as sdk's, with
// config added, and the errors it emits.
async function nodeClient(sdk, config) {
  const { PostHog } = await import('posthog-node');
  const errors = [];
  const client = new PostHog(key, {
    host,
    flushAt: 50,
    flushInterval: 100,
    featureFlagsRequestTimeoutMs,
    fetch: recording(sdk, globalThis.fetch),
    ...config,
  });
  client.on('error', (err) => errors.push(String(err?.stack ?? err)));
  return { client, errors };
}

async function nodeRemote() {
  // Remote evaluation: every read is a /flags/ request.
  const { client: remote, errors } = await nodeClient('node-remote', {});
  await pool(subjects.node_remote, 8, async (s, i) => {
    const id = s.distinct_id;
    const o = options(s);
    // Every flag of every subject comes in getAllFlags; the single reads, one request
    // each, take half the flags of each subject (isFeatureEnabled a quarter).
    for (const [j, k] of subjects.flags.entries()) {
      if ((i + j) % 2 === 0) {
        answers.push({ sdk: 'node-remote', call: 'getFeatureFlag', id, key: k, value: orNull(await remote.getFeatureFlag(k, id, o)) });
      }
      if ((i + j) % 4 === 1) {
        answers.push({ sdk: 'node-remote', call: 'isFeatureEnabled', id, key: k, value: orNull(await remote.isFeatureEnabled(k, id, o)) });
      }
    }
    for (const k of subjects.payload_flags) {
      answers.push({ sdk: 'node-remote', call: 'getFeatureFlagPayload', id, key: k, payload: orNull(await remote.getFeatureFlagPayload(k, id, undefined, o)) });
    }
    answers.push({ sdk: 'node-remote', call: 'getAllFlags', id, flags: await remote.getAllFlags(id, o) });
    const all = await remote.getAllFlagsAndPayloads(id, o);
    answers.push({ sdk: 'node-remote', call: 'getAllFlagsAndPayloads', id, flags: all.featureFlags, payloads: all.featureFlagPayloads });
  });
  // capture with sendFeatureFlags adds $feature/<key> for every flag of the subject.
  for (const s of subjects.node_remote.slice(0, 10)) {
    const uuid = randomUUID();
    remote.capture({ distinctId: s.distinct_id, event: 'flags sent', uuid, groups: s.groups, sendFeatureFlags: { personProperties: s.person_properties, groupProperties: s.group_properties } });
    captures.push({ uuid, id: s.distinct_id });
  }
  await remote.shutdown();
  return errors;
}

async function nodeLocal() {
  // Local evaluation: the definitions from /flags/definitions, and /flags/ for what
  // cannot be decided locally (unless onlyEvaluateLocally).
  const { client: local, errors } = await nodeClient('node-local', { personalApiKey, featureFlagsPollingInterval: 60000 });
  if (!(await local.waitForLocalEvaluationReady(10000))) {
    errors.push('posthog-node did not load the flag definitions');
  }
  await pool(subjects.node_local, 8, async (s) => {
    const id = s.distinct_id;
    const o = options(s);
    const only = { ...o, onlyEvaluateLocally: true };
    const all = await local.getAllFlagsAndPayloads(id, only);
    answers.push({ sdk: 'node-local-only', call: 'getAllFlagsAndPayloads', id, flags: all.featureFlags, payloads: all.featureFlagPayloads });
    for (const k of subjects.flags) {
      const r = await local.getFeatureFlagResult(k, id, { ...only, sendFeatureFlagEvents: false });
      if (r !== undefined) {
        answers.push({ sdk: 'node-local-only', call: 'getFeatureFlagResult', id, key: k, value: r.enabled ? (r.variant ?? true) : false, payload: orNull(r.payload) });
      }
      answers.push({ sdk: 'node-local', call: 'getFeatureFlag', id, key: k, value: orNull(await local.getFeatureFlag(k, id, o)) });
    }
    for (const k of subjects.payload_flags) {
      answers.push({ sdk: 'node-local', call: 'getFeatureFlagPayload', id, key: k, payload: orNull(await local.getFeatureFlagPayload(k, id, undefined, o)) });
    }
    answers.push({ sdk: 'node-local', call: 'getAllFlags', id, flags: await local.getAllFlags(id, o) });
  });
  // A reload sends the definitions' ETag back: nothing changed, so hedge answers 304.
  await local.reloadFeatureFlags();
  // A remote configuration flag's payload, by key and by id, with the personal key.
  for (const k of [subjects.remote_config_flag, String(subjects.remote_config_flag_id)]) {
    answers.push({ sdk: 'node-local', call: 'getRemoteConfigPayload', id: '', key: k, payload: orNull(await local.getRemoteConfigPayload(k)) });
  }
  await local.shutdown();
  return errors;
}

// hedgeFlags is hedge's own /flags/?v=2 answer for what a browser sent, asked at once:
// the anonymous id's answer changes once identify merges it into the identified person,
// so it cannot be asked afterwards.
async function hedgeFlags(fetch, body) {
  const response = await fetch(`${host}/flags/?v=2`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ token: key, ...body }),
  });
  if (response.status !== 200) throw new Error(`hedge's /flags/ for ${body.distinct_id}: ${response.status}`);
  return response.json();
}

// browser runs posthog-js in jsdom: each instance loads the remote config and its
// flags, reads them anonymously, identifies and reads them again.
async function browser(bundle) {
  const { JSDOM, requestInterceptor } = await import('jsdom');
  const errors = [];
  const base = globalThis.fetch;
  const fetch = recording(`js-${bundle}`, base);
  const jsdomOptions = { url: 'https://example.com/pricing' };
  if (bundle === 'default') {
    // The default bundle loads the remote config with a <script> (config.js): jsdom
    // runs scripts only when told, and loads them through this interceptor, which
    // records them with every other request.
    jsdomOptions.runScripts = 'dangerously';
    jsdomOptions.resources = {
      interceptors: [
        requestInterceptor(async (request) => {
          const r = await fetch(request.url, { method: request.method });
          return new Response(await r.arrayBuffer(), { status: r.status, headers: { 'Content-Type': r.headers.get('content-type') ?? '' } });
        }),
      ],
    };
  }
  const dom = new JSDOM('<!doctype html><html><head></head><body></body></html>', jsdomOptions);
  const window = dom.window;
  window.fetch = fetch;
  globalThis.fetch = fetch;
  for (const name of ['window', 'document', 'navigator', 'location', 'localStorage', 'sessionStorage', 'XMLHttpRequest']) {
    Object.defineProperty(globalThis, name, { value: window[name], configurable: true, writable: true });
  }
  const module = bundle === 'default' ? 'posthog-js/dist/module.js' : 'posthog-js/dist/module.no-external.js';
  const { default: posthog } = await import(module);

  const record = (ph, id) => {
    for (const k of subjects.flags) {
      answers.push({ sdk: `js-${bundle}`, call: 'getFeatureFlag', id, key: k, value: orNull(ph.getFeatureFlag(k)) });
      answers.push({ sdk: `js-${bundle}`, call: 'isFeatureEnabled', id, key: k, value: orNull(ph.isFeatureEnabled(k)) });
    }
    for (const k of subjects.payload_flags) {
      answers.push({ sdk: `js-${bundle}`, call: 'getFeatureFlagPayload', id, key: k, payload: orNull(ph.getFeatureFlagPayload(k)) });
    }
  };

  await Promise.all(
    subjects.browsers
      .filter((b) => b.bundle === bundle)
      .map(async (b, i) => {
        // loaded(n) resolves once onFeatureFlags has fired n times.
        let loads = 0;
        const waiters = [];
        const loaded = (n) =>
          new Promise((resolve, reject) => {
            if (loads >= n) return resolve();
            const timer = setTimeout(() => reject(new Error(`${b.id}: onFeatureFlags fired ${loads} times, want ${n}`)), 10000);
            waiters.push({ n, resolve: () => (clearTimeout(timer), resolve()) });
          });
        const ph = posthog.init(
          key,
          {
            api_host: host,
            autocapture: false,
            capture_pageview: false,
            capture_pageleave: false,
            disable_session_recording: true,
            persistence: 'localStorage',
            persistence_name: `hedge-${bundle}-${i}`,
            person_profiles: 'identified_only',
            request_batching: false,
            feature_flag_request_timeout_ms: featureFlagsRequestTimeoutMs,
          },
          `hedge-${bundle}-${i}`,
        );
        ph.onFeatureFlags(() => {
          loads++;
          for (const w of waiters.splice(0)) loads >= w.n ? w.resolve() : waiters.push(w);
        });
        try {
          await loaded(1);
          const anon = ph.get_distinct_id();
          record(ph, anon);
          browsers.push({ bundle, phase: 'anonymous', id: anon, hedge: await hedgeFlags(base, { distinct_id: anon }) });
          // identify reloads the flags, with the person properties it sets.
          const before = loads;
          ph.identify(b.id, b.person_properties);
          await loaded(before + 1);
          record(ph, b.id);
          const identified = { distinct_id: b.id, $anon_distinct_id: anon, person_properties: b.person_properties };
          browsers.push({ bundle, phase: 'identified', id: b.id, anon, hedge: await hedgeFlags(base, identified) });
        } catch (err) {
          errors.push(String(err));
        }
      }),
  );
  return errors;
}

const [mode, variant] = process.argv.slice(2);
let errors;
if (mode === 'node' && variant === 'remote') {
  errors = await nodeRemote();
} else if (mode === 'node' && variant === 'local') {
  errors = await nodeLocal();
} else if (mode === 'js' && (variant === 'no-external' || variant === 'default')) {
  errors = await browser(variant);
} else {
  console.error('usage: node flags.mjs node remote | node local | js no-external | js default');
  process.exit(2);
}
await settled();
// posthog-js keeps timers alive in jsdom: exit once the manifest is written (a pipe
// takes it in pieces).
process.stdout.write(JSON.stringify({ requests, answers, browsers, captures, errors }) + '\n', () => process.exit(0));
