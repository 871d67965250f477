// Accept an invite: who invited whom to what, then a name and a password, which signs
// the new user in.
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { ErrorNote, Field, Loading, useAsync } from '../ui.jsx';

export function Signup({ invite }) {
  const preview = useAsync((signal) => api(`/api/signup/${encodeURIComponent(invite)}/`, { signal, quiet401: true }), [invite]);
  const [firstName, setFirstName] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await api(`/api/signup/${encodeURIComponent(invite)}/`, { method: 'POST', body: { first_name: firstName, password }, quiet401: true });
      location.assign('/');
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  };
  let body;
  if (preview.loading) body = <Loading />;
  else if (preview.error) body = <ErrorNote error={preview.error} />;
  else
    body = (
      <>
        <p>
          You were invited to join <strong>{preview.data.organization_name}</strong> as {preview.data.target_email}.
        </p>
        <ErrorNote error={error} fields={['first_name', 'password']} />
        <Field label="First name" name="first_name" error={error}>
          <input autocomplete="given-name" required value={firstName} onInput={(e) => setFirstName(e.target.value)} />
        </Field>
        <Field label="Password" name="password" error={error} hint="At least 10 characters.">
          <input type="password" autocomplete="new-password" required minlength={10} value={password} onInput={(e) => setPassword(e.target.value)} />
        </Field>
        <button type="submit" disabled={busy}>
          {busy ? 'Joining…' : 'Join and sign in'}
        </button>
      </>
    );
  return (
    <main id="main" class="auth-page">
      <form class="auth-card" onSubmit={submit} aria-labelledby="signup-title">
        <h1 id="signup-title">Join hedge</h1>
        {body}
      </form>
    </main>
  );
}
