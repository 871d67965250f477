// Drives posthog-node through the retry of a batch whose answer it never read, then
// prints a JSON manifest on stdout: the uuids of the events sent and the HTTP status of
// every capture request. The Go test that runs this (TestNodeRetryAfterKill in the
// hedge package) kills hedge once the batch is committed and starts it again.
//
// Protocol: once hedge has answered the first request (the batch is committed), this
// prints "committed" on stderr and waits for a line on stdin, which the test sends
// once hedge runs again; the request then fails as a connection that died with hedge
// does, and posthog-node retries the batch.
//
// Environment: HEDGE_CAPTURE_URL (the capture listener), HEDGE_PROJECT_KEY (phc_...).
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import { PostHog } from 'posthog-node';

const host = process.env.HEDGE_CAPTURE_URL;
const key = process.env.HEDGE_PROJECT_KEY;
if (!host || !key) {
  console.error('HEDGE_CAPTURE_URL and HEDGE_PROJECT_KEY must be set');
  process.exit(2);
}

const stdin = createInterface({ input: process.stdin });
const restarted = new Promise((resolve) => stdin.once('line', resolve));
const requests = []; // {url, status, lost}
let lost = false;
const fetch = async (url, options) => {
  const response = await globalThis.fetch(url, options);
  if (lost) {
    requests.push({ url: String(url), status: response.status, lost: false });
    return response;
  }
  lost = true;
  requests.push({ url: String(url), status: response.status, lost: true });
  console.error('committed');
  await restarted;
  throw new TypeError('fetch failed');
};

// The request waits while hedge restarts: its timeout must not expire first.
const client = new PostHog(key, {
  host,
  flushAt: 10,
  flushInterval: 60000,
  requestTimeout: 100000,
  fetchRetryCount: 3,
  fetchRetryDelay: 100,
  fetch,
});
const uuids = [];
for (let i = 0; i < 10; i++) {
  const uuid = randomUUID();
  uuids.push(uuid);
  client.capture({ distinctId: 'retry-user', event: 'retried', uuid, properties: { i } });
}
await client.shutdown();
stdin.close();
console.log(JSON.stringify({ uuids, requests }));
