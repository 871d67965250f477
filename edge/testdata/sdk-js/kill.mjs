// Drives posthog-node at a steady load against a hedge that the Go test kills with
// SIGKILL while requests are in flight, and starts again on the same address; then
// prints a JSON manifest on stdout: every capture request the SDK made, with the
// uuids its body held and its HTTP status (0 when the connection failed), and the
// uuids of all the events captured. The Go test (TestNodeRetryUnderLoadAfterKill in
// the hedge package) checks the database against it: an event of a request answered
// 200 is stored exactly once, and no event twice, however often the SDK sent it.
//
// Protocol: after each request answered 200 this prints "answered N" on stderr. Once
// enough have been answered, the test writes "kill" on stdin, lets the requests in
// flight be committed for a moment, then kills hedge, starts it again and writes
// "restarted". Between "kill" and "restarted" every answer is thrown away as if the
// connection had died before it arrived (status 0): the answers a SIGKILL between a
// commit and its answer would have cut off, which the SDK retries. It retries what
// failed (fetchRetryCount) until hedge answers again, as it does after any outage.
// Four clients send at once, so that several requests are in flight at the kill.
//
// Environment: HEDGE_CAPTURE_URL (the capture listener), HEDGE_PROJECT_KEY (phc_...),
// HEDGE_EVENTS (how many events to capture, default 6000).
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import { PostHog } from 'posthog-node';

const host = process.env.HEDGE_CAPTURE_URL;
const key = process.env.HEDGE_PROJECT_KEY;
const total = Number(process.env.HEDGE_EVENTS || 6000);
if (!host || !key) {
  console.error('HEDGE_CAPTURE_URL and HEDGE_PROJECT_KEY must be set');
  process.exit(2);
}

let losing = false;
const stdin = createInterface({ input: process.stdin });
stdin.on('line', (line) => {
  losing = line === 'kill';
});

const requests = []; // {uuids, status}
let answered = 0;
const fetch = async (url, options) => {
  const body = JSON.parse(options.body);
  const record = { uuids: body.batch.map((e) => e.uuid), status: 0 };
  requests.push(record);
  const response = await globalThis.fetch(url, options); // a failed connection throws: status 0
  if (losing) {
    throw new TypeError('fetch failed');
  }
  record.status = response.status;
  if (response.status === 200) {
    answered++;
    console.error(`answered ${answered}`);
  }
  return response;
};

// Uncompressed bodies, so that the manifest can name the uuids each request held. The
// retries outlast a restart of hedge: 40 attempts, a quarter of a second apart.
const clients = [0, 1, 2, 3].map(() => {
  const client = new PostHog(key, {
    host,
    flushAt: 50,
    flushInterval: 100,
    maxQueueSize: total,
    maxBatchSize: 50,
    requestTimeout: 30000,
    fetchRetryCount: 40,
    fetchRetryDelay: 250,
    disableCompression: true,
    fetch,
  });
  client.on('error', (err) => console.error(`posthog-node: ${err?.message ?? err}`));
  return client;
});

const uuids = [];
for (let i = 0; i < total; i++) {
  const uuid = randomUUID();
  uuids.push(uuid);
  clients[Math.floor(i / 50) % clients.length].capture({
    distinctId: `load-user-${i % 97}`,
    event: 'under-load',
    uuid,
    properties: { i },
  });
  if (i % 200 === 199) {
    await new Promise((resolve) => setTimeout(resolve, 10)); // some 20,000 events a second at most
  }
}
await Promise.all(clients.map((client) => client.shutdown(120000)));
stdin.close();
console.log(JSON.stringify({ uuids, requests }));
