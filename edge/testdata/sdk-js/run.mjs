// Drives the real posthog-node and posthog-js (in jsdom) against a running hedge, then
// prints a JSON manifest on stdout: every event sent, how hedge must store it, and the
// HTTP status of every capture request either SDK made. The Go test that runs this
// (TestNodeSDKs in the hedge package) checks the manifest against the database.
//
// Environment: HEDGE_CAPTURE_URL (the capture listener), HEDGE_PROJECT_KEY (phc_...).
import { randomUUID } from 'node:crypto';
import { JSDOM } from 'jsdom';
import { PostHog } from 'posthog-node';
import { recording, requests, settled } from './record.mjs';

const host = process.env.HEDGE_CAPTURE_URL;
const key = process.env.HEDGE_PROJECT_KEY;
if (!host || !key) {
  console.error('HEDGE_CAPTURE_URL and HEDGE_PROJECT_KEY must be set');
  process.exit(2);
}

const events = []; // {sdk, uuid?, event, distinct_id, lane, properties?}

const surveyID = '0190f0f0-0000-7000-8000-00000000beef';

async function node() {
  const client = new PostHog(key, {
    host,
    flushAt: 5,
    flushInterval: 100,
    fetch: recording('node', globalThis.fetch),
  });
  const capture = (distinctId, event, properties = {}, extra = {}) => {
    const uuid = randomUUID();
    client.capture({ distinctId, event, properties, uuid, ...extra });
    events.push({ sdk: 'node', uuid, event, distinct_id: distinctId, lane: 'realtime' });
  };
  capture('node-user', 'signed up', { plan: 'pro' });
  capture('node-user', '$pageview', { $current_url: 'https://example.com/pricing' });
  capture('node-user', '$screen', { $screen_name: 'Home' });
  client.identify({ distinctId: 'node-user', properties: { $set: { email: 'node@example.com' }, $anon_distinct_id: 'node-anon' } });
  events.push({ sdk: 'node', event: '$identify', distinct_id: 'node-user', lane: 'realtime', set: { email: 'node@example.com' } });
  client.alias({ distinctId: 'node-user', alias: 'node-alias' });
  events.push({ sdk: 'node', event: '$create_alias', distinct_id: 'node-user', lane: 'realtime' });
  client.groupIdentify({ groupType: 'company', groupKey: 'node-acme', properties: { name: 'Acme' } });
  events.push({ sdk: 'node', event: '$groupidentify', distinct_id: '$company_node-acme', lane: 'realtime' });
  capture('node-user', 'grouped', {}, { groups: { company: 'node-acme' } });
  capture('node-personless', 'personless', { $process_person_profile: false });
  capture('node-user', 'survey shown', { $survey_id: surveyID });
  capture('node-user', 'survey sent', { $survey_id: surveyID, $survey_response: 'yes' });
  capture('node-user', 'survey dismissed', { $survey_id: surveyID });
  await client.shutdown();

  const historical = new PostHog(key, { host, historicalMigration: true, fetch: recording('node', globalThis.fetch) });
  for (let i = 0; i < 3; i++) {
    const uuid = randomUUID();
    const timestamp = new Date(Date.UTC(2023, 0, 15, 10, i));
    historical.capture({ distinctId: 'node-hist', event: 'imported', uuid, timestamp });
    events.push({ sdk: 'node', uuid, event: 'imported', distinct_id: 'node-hist', lane: 'historical', timestamp: timestamp.toISOString() });
  }
  await historical.shutdown();
}

async function browser() {
  const dom = new JSDOM('<!doctype html><html><head></head><body></body></html>', {
    url: 'https://example.com/pricing?utm_source=hedge',
  });
  const window = dom.window;
  // posthog-js sends with the global fetch (Node's), so that is the one to watch.
  const fetch = recording('js', globalThis.fetch);
  window.fetch = fetch;
  globalThis.fetch = fetch;
  for (const name of ['window', 'document', 'navigator', 'location', 'localStorage', 'sessionStorage', 'XMLHttpRequest']) {
    Object.defineProperty(globalThis, name, { value: window[name], configurable: true, writable: true });
  }
  const { default: posthog } = await import('posthog-js/dist/module.no-external.js');
  posthog.init(key, {
    api_host: host,
    autocapture: false,
    capture_pageview: false,
    capture_pageleave: false,
    disable_session_recording: true,
    disable_surveys: true,
    advanced_disable_flags: true,
    advanced_disable_decide: true,
    persistence: 'localStorage',
    person_profiles: 'identified_only',
    request_batching: false,
  });
  const capture = (event, properties) => {
    const result = posthog.capture(event, properties);
    events.push({ sdk: 'js', uuid: result.uuid, event, distinct_id: result.properties.distinct_id, lane: 'realtime' });
  };
  // Before identify, identified_only makes events personless.
  capture('js anonymous', { page: 1 });
  const anon = posthog.get_distinct_id();
  posthog.identify('js-user', { email: 'js@example.com' });
  events.push({ sdk: 'js', event: '$identify', distinct_id: 'js-user', lane: 'realtime', set: { email: 'js@example.com' }, anon });
  capture('$pageview', { $current_url: 'https://example.com/pricing' });
  capture('$screen', { $screen_name: 'Home' });
  capture('signed up', { plan: 'pro' });
  posthog.alias('js-alias');
  events.push({ sdk: 'js', event: '$create_alias', distinct_id: 'js-user', lane: 'realtime' });
  posthog.group('company', 'js-acme', { name: 'Acme' });
  events.push({ sdk: 'js', event: '$groupidentify', distinct_id: 'js-user', lane: 'realtime' });
  capture('grouped', {});
  capture('survey shown', { $survey_id: surveyID });
  capture('survey sent', { $survey_id: surveyID, $survey_response: 'yes' });
  capture('survey dismissed', { $survey_id: surveyID });
  await settled();
}

await node();
await browser();
await settled();
process.stdout.write(JSON.stringify({ events, requests }) + '\n');
// posthog-js keeps timers alive in jsdom.
process.exit(0);
