// What run.mjs and flags.mjs share: a fetch wrapper that records the outcome of every
// request an SDK makes, and a wait until none is in flight.
export const requests = []; // {sdk, method, url, status, error?}
let inflight = 0;

// recording wraps fetch so that every request's outcome is known and awaited.
export const recording = (sdk, fetch) => async (url, options) => {
  inflight++;
  const method = options?.method ?? 'GET';
  try {
    const response = await fetch(url, options);
    requests.push({ sdk, method, url: String(url), status: response.status });
    return response;
  } catch (err) {
    requests.push({ sdk, method, url: String(url), status: 0, error: String(err) });
    throw err;
  } finally {
    inflight--;
  }
};

// settled resolves once no request has been in flight for five checks in a row, 100 ms
// apart.
export async function settled() {
  for (let quiet = 0; quiet < 5; ) {
    await new Promise((r) => setTimeout(r, 100));
    quiet = inflight === 0 ? quiet + 1 : 0;
  }
}
