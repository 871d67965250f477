// The console's one way to the management API: same-origin fetch with the session
// cookie, the CSRF token on unsafe methods (read from its cookie, as PostHog's front
// end does), and hedge's flat error body {type, code, detail, attr} turned into an
// ApiError. A 401 anywhere keeps the open forms' drafts and sends the user to sign in
// and back afterwards.

export class ApiError extends Error {
  constructor(status, body) {
    super((body && body.detail) || `The request failed (${status}).`);
    this.status = status;
    this.type = body && body.type;
    this.code = body && body.code;
    this.attr = (body && body.attr) || null;
  }
}

function cookie(name) {
  for (const part of document.cookie.split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === name || k === '__Host-' + name) return decodeURIComponent(v.join('='));
  }
  return '';
}

let onUnauthorized = () => {};
// setUnauthorizedHandler is called once by the app: what a 401 does.
export function setUnauthorizedHandler(fn) {
  onUnauthorized = fn;
}

// Drafts: a form with unsaved input registers how to read it (keepDraft), and when a
// 401 ends the session every registered form's state is put in sessionStorage before
// the page goes to sign in; the form takes it back (takeDraft) when it opens again
// after sign-in. sessionStorage is this tab's only and goes when the tab closes; keys
// name the user, so another user signing in here never gets the draft.
const drafts = new Map();
const draftPrefix = 'hedge.draft:';

// keepDraft registers read (answering the form's state, or null when there is nothing
// worth keeping) under key, and answers the function that unregisters it.
export function keepDraft(key, read) {
  drafts.set(key, read);
  return () => drafts.get(key) === read && drafts.delete(key);
}

// takeDraft answers the state kept under key, once, or null.
export function takeDraft(key) {
  try {
    const text = sessionStorage.getItem(draftPrefix + key);
    sessionStorage.removeItem(draftPrefix + key);
    return text ? JSON.parse(text) : null;
  } catch {
    return null; // storage refused (private mode, full) or a draft of another version
  }
}

function saveDrafts() {
  for (const [key, read] of drafts) {
    const state = read();
    try {
      if (state !== null) sessionStorage.setItem(draftPrefix + key, JSON.stringify(state));
    } catch {
      // storage refused: the draft is lost, as it was before drafts were kept
    }
  }
}

// api sends method path with body (JSON, or a FormData sent as multipart/form-data)
// and answers the parsed JSON, or throws an ApiError. signal aborts it.
export async function api(path, { method = 'GET', body, signal, quiet401 = false } = {}) {
  const headers = { Accept: 'application/json' };
  const form = body instanceof FormData;
  if (body !== undefined && !form) headers['Content-Type'] = 'application/json';
  if (method !== 'GET' && method !== 'HEAD') headers['X-CSRFToken'] = cookie('hedge_csrftoken');
  let res;
  try {
    res = await fetch(path, {
      method,
      headers,
      body: body === undefined || form ? body : JSON.stringify(body),
      credentials: 'same-origin',
      signal,
    });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, { detail: 'hedge cannot be reached. Check that it is running.' });
  }
  if (res.status === 204) return null;
  let data = null;
  const text = await res.text();
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = { detail: text.slice(0, 200) };
    }
  }
  if (!res.ok) {
    if (res.status === 401 && !quiet401) {
      saveDrafts();
      onUnauthorized();
    }
    throw new ApiError(res.status, data);
  }
  return data;
}

// query runs a query of the query API (HogQLQuery, TrendsQuery, ...) in project.
export function query(project, q, signal) {
  return api(`/api/projects/${project}/query/`, { method: 'POST', body: { query: q }, signal });
}

// hogql runs a HogQL SELECT in project; values fill its {name} placeholders, which
// hedge binds as parameters: what a user typed goes there, never into the SQL text.
export function hogql(project, sql, signal, values) {
  return query(project, values ? { kind: 'HogQLQuery', query: sql, values } : { kind: 'HogQLQuery', query: sql }, signal);
}
