// The signed-in user's own settings: name, password and personal API keys. A new
// password ends the user's other sessions (hedge does that; this page says so).
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { useSession } from '../session.jsx';
import { ErrorNote, Field, Page } from '../ui.jsx';
import { ApiKeys } from './api-keys.jsx';

export function Account() {
  const { me, reload } = useSession();
  return (
    <Page title="Your account">
      <div class="account-forms">
        <NameForm me={me} reload={reload} />
        <PasswordForm hasPassword={me.has_password} reload={reload} />
      </div>
      <ApiKeys />
    </Page>
  );
}

function NameForm({ me, reload }) {
  const [first, setFirst] = useState(me.first_name);
  const [last, setLast] = useState(me.last_name);
  const [state, setState] = useState({ error: null, saved: false });
  const submit = async (e) => {
    e.preventDefault();
    try {
      await api('/api/users/@me/', { method: 'PATCH', body: { first_name: first, last_name: last } });
      setState({ error: null, saved: true });
      reload();
    } catch (error) {
      setState({ error, saved: false });
    }
  };
  return (
    <form class="card form" onSubmit={submit} aria-labelledby="name-title">
      <h2 id="name-title">Name</h2>
      <p class="muted">Signed in as {me.email}.</p>
      <ErrorNote error={state.error} fields={['first_name', 'last_name']} />
      <Field label="First name" name="first_name" error={state.error}>
        <input autocomplete="given-name" value={first} onInput={(e) => setFirst(e.target.value)} />
      </Field>
      <Field label="Last name" name="last_name" error={state.error}>
        <input autocomplete="family-name" value={last} onInput={(e) => setLast(e.target.value)} />
      </Field>
      <button type="submit">Save name</button>
      <p role="status">{state.saved ? 'Saved.' : ''}</p>
    </form>
  );
}

function PasswordForm({ hasPassword, reload }) {
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [state, setState] = useState({ error: null, saved: false });
  const submit = async (e) => {
    e.preventDefault();
    try {
      await api('/api/users/@me/', { method: 'PATCH', body: { current_password: current, password: next } });
      setCurrent('');
      setNext('');
      setState({ error: null, saved: true });
      reload();
    } catch (error) {
      setState({ error, saved: false });
    }
  };
  return (
    <form class="card form" onSubmit={submit} aria-labelledby="password-title">
      <h2 id="password-title">Password</h2>
      <p class="muted">Changing it signs you out everywhere else.</p>
      <ErrorNote error={state.error} fields={['current_password', 'password']} />
      {hasPassword && (
        <Field label="Current password" name="current_password" error={state.error}>
          <input type="password" autocomplete="current-password" value={current} onInput={(e) => setCurrent(e.target.value)} />
        </Field>
      )}
      <Field label="New password" name="password" error={state.error} hint="At least 10 characters.">
        <input type="password" autocomplete="new-password" value={next} onInput={(e) => setNext(e.target.value)} />
      </Field>
      <button type="submit">Change password</button>
      <p role="status">{state.saved ? 'Password changed. Your other sessions were signed out.' : ''}</p>
    </form>
  );
}
