// Sends events with the real posthog-node through every edge of a cluster, then
// prints a JSON manifest on stdout: each event's uuid and the edge it went to, and the
// HTTP status of every request the SDK made. TestCluster (hedge package) checks that
// the warehouse stored each event once, and evaluates flags through each edge.
//
// Environment: HEDGE_CAPTURE_URLS (the edges' capture URLs, comma-separated),
// HEDGE_PROJECT_KEY (phc_...).
import { randomUUID } from 'node:crypto';
import { PostHog } from 'posthog-node';
import { recording, requests, settled } from './record.mjs';

const hosts = (process.env.HEDGE_CAPTURE_URLS ?? '').split(',').filter(Boolean);
const key = process.env.HEDGE_PROJECT_KEY;
if (hosts.length === 0 || !key) {
  console.error('HEDGE_CAPTURE_URLS and HEDGE_PROJECT_KEY must be set');
  process.exit(2);
}

const events = []; // {uuid, host}
const flags = []; // {host, flags}
for (const host of hosts) {
  const client = new PostHog(key, { host, flushAt: 10, flushInterval: 100, fetch: recording('node', globalThis.fetch) });
  for (let i = 0; i < 25; i++) {
    const uuid = randomUUID();
    client.capture({ distinctId: `cluster-user-${i % 5}`, event: 'cluster event', properties: { host }, uuid });
    events.push({ uuid, host });
  }
  flags.push({ host, flags: await client.getAllFlags('cluster-user-0') });
  await client.shutdown();
}
await settled();
process.stdout.write(JSON.stringify({ events, flags, requests }) + '\n');
