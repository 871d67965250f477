// Project setup: how to send events here (the snippets, with the project's token and
// the CAPTURE listener's address, never the console's), whether any arrived yet, the
// project's name and time zone, how events reach the warehouse, and the organization's
// members and invites.
import { useEffect, useState } from 'preact/hooks';
import { api, hogql } from '../api.js';
import { Link } from '../router.jsx';
import { useSession } from '../session.jsx';
import { CopyButton, ErrorNote, Field, Page } from '../ui.jsx';
import { Ingestion } from './settings-ingestion.jsx';
import { Invites, Members } from './settings-members.jsx';

export function Settings({ project }) {
  const { me, projects } = useSession();
  const record = projects.find((p) => p.id === project);
  return (
    <Page title="Project settings">
      <Install project={record} captureURL={me.capture_url} />
      <ProjectForm key={record.id} project={record} />
      <Ingestion />
      {me.organization && (
        <>
          <Members org={me.organization} me={me} />
          <Invites org={me.organization} />
        </>
      )}
      <p class="muted">
        Personal API keys, for scripts and the API, are in <Link href="/account#api-keys">your account</Link>.
      </p>
    </Page>
  );
}

// Install shows the snippets and waits for the project's first event.
function Install({ project, captureURL }) {
  // hedge says where its capture listener is (capture_url of users/@me/); the
  // management listener serving this page is the wrong host for events.
  const host = captureURL || 'https://<your hedge capture host>';
  const token = project.api_token;
  // The no-external bundle carries everything itself: hedge serves no /static/ scripts
  // for posthog-js to load later.
  const web = `<script src="https://cdn.jsdelivr.net/npm/posthog-js@1/dist/array.full.no-external.js" crossorigin="anonymous"></script>
<script>
  posthog.init('${token}', {
    api_host: '${host}',
    person_profiles: 'identified_only',
  })
</script>`;
  const curl = `curl -X POST ${host}/capture/ \\
  -H 'Content-Type: application/json' \\
  -d '{"api_key": "${token}", "event": "hello from curl", "distinct_id": "setup-check"}'`;
  return (
    <section class="card" aria-labelledby="install-title">
      <h2 id="install-title">Send events</h2>
      <p>
        Events go to hedge's capture address <code class="capture-url">{host}</code> with the project token{' '}
        <code class="project-token">{token}</code>.
      </p>
      <FirstEvent project={project.id} />
      <Snippet id="snippet-web" title="Website (posthog-js)" code={web} />
      <Snippet id="snippet-curl" title="Any server (curl)" code={curl} />
    </section>
  );
}

function Snippet({ id, title, code }) {
  return (
    <div class="snippet">
      <div class="snippet-head">
        <h3 id={`${id}-title`}>{title}</h3>
        <CopyButton text={code} label={`Copy ${title}`} />
      </div>
      <pre id={id} tabindex="0" aria-labelledby={`${id}-title`}>
        <code>{code}</code>
      </pre>
    </div>
  );
}

// FirstEvent counts the project's events every few seconds until there is one; it
// skips a check while the tab is hidden.
function FirstEvent({ project }) {
  const [count, setCount] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    const ctl = new AbortController();
    let timer;
    const check = async () => {
      if (!document.hidden) {
        try {
          const r = await hogql(project, 'SELECT count() FROM events', ctl.signal);
          const n = r.results[0][0];
          setCount(n);
          setError(null);
          if (n > 0) return;
        } catch (e) {
          if (e.name === 'AbortError') return;
          setError(e);
        }
      }
      timer = setTimeout(check, 3000);
    };
    check();
    return () => {
      ctl.abort();
      clearTimeout(timer);
    };
  }, [project]);
  const received = count > 0;
  return (
    <>
      <p class={received ? 'event-check received' : 'event-check waiting'} role="status">
        <span class="dot" aria-hidden="true" />
        {count === null ? 'Checking for events…' : received ? `Events received: ${count.toLocaleString('en-US')}.` : 'Waiting for the first event…'}
      </p>
      <ErrorNote error={error} />
    </>
  );
}

// zones are the time zones to choose from: the browser's list, UTC first, and the
// project's own even if the browser does not know it. hedge validates the choice.
function zones(current) {
  const all = typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : [];
  return [...new Set(['UTC', current, ...all])];
}

function ProjectForm({ project }) {
  const { reload } = useSession();
  const [name, setName] = useState(project.name);
  const [timezone, setTimezone] = useState(project.timezone);
  const [state, setState] = useState({ error: null, saved: false, busy: false });
  const submit = async (e) => {
    e.preventDefault();
    setState({ error: null, saved: false, busy: true });
    try {
      await api(`/api/projects/${project.id}/`, { method: 'PATCH', body: { name, timezone } });
      setState({ error: null, saved: true, busy: false });
      reload(); // the header's project switch shows the new name
    } catch (error) {
      setState({ error, saved: false, busy: false });
    }
  };
  return (
    <form class="card form" onSubmit={submit} aria-labelledby="project-title">
      <h2 id="project-title">Project</h2>
      <ErrorNote error={state.error} fields={['name', 'timezone']} />
      <Field label="Name" name="name" error={state.error}>
        <input required maxLength={200} value={name} onInput={(e) => setName(e.target.value)} />
      </Field>
      <Field label="Time zone" name="timezone" error={state.error} hint="Insights count days and weeks in it.">
        <select value={timezone} onChange={(e) => setTimezone(e.target.value)}>
          {zones(project.timezone).map((z) => (
            <option value={z}>{z.replaceAll('_', ' ')}</option>
          ))}
        </select>
      </Field>
      <button type="submit" disabled={state.busy}>
        Save project
      </button>
      <p role="status" class="saved">
        {state.saved ? 'Saved.' : ''}
      </p>
    </form>
  );
}
