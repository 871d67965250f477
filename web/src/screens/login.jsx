// Sign in with e-mail and password; on success, back to where the user was going. Sent
// here because the session ended (?expired=1), it says so.
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { ErrorNote, Field } from '../ui.jsx';

// safeNext keeps a ?next= that is a path of this console, and nothing else (an open
// redirect would send a signed-in user anywhere). It is read as the browser will read
// it, by the URL parser, which drops tabs and newlines and takes \ for /: so
// "/\t/evil.example" is //evil.example, another site, and goes to / instead.
export function safeNext(next) {
  if (!next || !next.startsWith('/')) return '/';
  try {
    const url = new URL(next, location.origin);
    return url.origin === location.origin ? url.pathname + url.search + url.hash : '/';
  } catch {
    return '/'; // no URL at all, such as //[x
  }
}

export function Login({ params }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await api('/api/login/', { method: 'POST', body: { email, password }, quiet401: true });
      location.assign(safeNext(params.get('next')));
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  };
  return (
    <main id="main" class="auth-page">
      <form class="auth-card" onSubmit={submit} aria-labelledby="login-title">
        <h1 id="login-title">Sign in to hedge</h1>
        {params.get('expired') && (
          <p class="session-note" role="status">
            Your session has expired. Sign in again to go back to where you were.
          </p>
        )}
        <ErrorNote error={error} fields={['email', 'password']} />
        <Field label="E-mail" name="email" error={error}>
          <input type="email" autocomplete="username" required value={email} onInput={(e) => setEmail(e.target.value)} autofocus />
        </Field>
        <Field label="Password" name="password" error={error}>
          <input type="password" autocomplete="current-password" required value={password} onInput={(e) => setPassword(e.target.value)} />
        </Field>
        <button type="submit" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
        <p class="hint">
          The first user's password is in <code>bootstrap.json</code> in hedge's data directory; <code>hedge passwd</code> sets a new one.
        </p>
      </form>
    </main>
  );
}
