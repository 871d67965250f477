// Batch exports: the project's exports, a form to make one (Parquet files in a local
// directory, or S3), and one export's page: pause or unpause, backfill a past range,
// and its runs with their status and error, each retryable. S3 keys are write-only:
// the form sends them, hedge never returns them, and nothing here shows them.
import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.js';
import { Link, navigate, setQuery } from '../router.jsx';
import { projectPath, useSession } from '../session.jsx';
import { ErrorNote, Field, Loading, Page, Table, format, useAsync } from '../ui.jsx';
import { ConfirmButton } from './confirm.jsx';

const intervals = ['hour', 'day', 'week', 'every 5 minutes', 'every 15 minutes'];
const compressions = ['zstd', 'snappy', 'gzip', 'brotli', 'lz4', 'none'];
// pollEvery is how often the runs are read again: often while one is queued or
// running, seldom while one only waits for its next attempt (backoff starts at 30 s).
function pollEvery(runs) {
  if (runs.some((r) => r.status === 'Starting' || r.status === 'Running')) return 2000;
  if (runs.some((r) => r.status === 'FailedRetryable')) return 15000;
  return 0;
}

const exportsPath = (project, rest = '') => `/api/projects/${project}/batch_exports/${rest}`;

// when shows a time in the project's time zone.
function when(iso, timeZone) {
  if (!iso) return '';
  return new Date(iso).toLocaleString('en-US', { timeZone, dateStyle: 'medium', timeStyle: 'short' });
}

// where says where an export writes, without its secrets (hedge does not send them).
function where(d) {
  const c = d.config || {};
  if (d.type === 'Parquet') return `Parquet files in ${c.path}`;
  return `S3 s3://${c.bucket_name || c.bucket}/${c.prefix || ''}${c.endpoint_url ? ` at ${c.endpoint_url}` : ''}`;
}

function Status({ status }) {
  const tone = status === 'Completed' ? 'ok' : status === 'Failed' || status === 'FailedRetryable' ? 'bad' : 'neutral';
  return <span class={`status status-${tone}`}>{status}</span>;
}

export function BatchExports({ project, params }) {
  const { project: record } = useSession();
  const list = useAsync((signal) => api(exportsPath(project, '?limit=100'), { signal }), [project]);
  const creating = params.get('new') === '1';
  const columns = [
    { key: 'name', label: 'Name', render: (e) => <Link href={projectPath(project, `batch_exports/${e.id}`)}>{e.name}</Link> },
    { key: 'destination', label: 'Destination', render: (e) => where(e.destination) },
    { key: 'model', label: 'Model' },
    { key: 'interval', label: 'Every', render: (e) => e.interval },
    { key: 'paused', label: 'State', render: (e) => (e.paused ? 'Paused' : 'Active') },
    {
      key: 'last',
      label: 'Last run',
      render: (e) => (e.latest_runs.length ? <><Status status={e.latest_runs[0].status} /> {when(e.latest_runs[0].data_interval_end, record.timezone)}</> : 'none yet'),
    },
  ];
  return (
    <Page
      title="Batch exports"
      actions={
        !creating && (
          <button type="button" onClick={() => setQuery({ new: '1' })}>
            New export
          </button>
        )
      }
    >
      {creating && <ExportForm project={project} onCancel={() => setQuery({ new: null })} />}
      <ErrorNote error={list.error} />
      {list.data ? (
        <Table columns={columns} rows={list.data.results} rowKey={(e) => e.id} empty="No batch exports yet: make one to copy this project's events to Parquet files or S3 on a schedule." />
      ) : (
        !list.error && <Loading />
      )}
    </Page>
  );
}

// ExportForm makes an export; on success it opens the export's page.
function ExportForm({ project, onCancel }) {
  const [f, setF] = useState({ name: '', model: 'events', interval: 'hour', type: 'Parquet', path: '', compression: 'zstd', bucket_name: '', region: '', prefix: '', endpoint_url: '', aws_access_key_id: '', aws_secret_access_key: '' });
  const [state, setState] = useState({ error: null, busy: false });
  const set = (k) => (e) => setF({ ...f, [k]: e.target.value });
  const submit = async (e) => {
    e.preventDefault();
    setState({ error: null, busy: true });
    const config =
      f.type === 'Parquet'
        ? { path: f.path, compression: f.compression }
        : { bucket_name: f.bucket_name, region: f.region, prefix: f.prefix, aws_access_key_id: f.aws_access_key_id, aws_secret_access_key: f.aws_secret_access_key, compression: f.compression, file_format: 'Parquet', ...(f.endpoint_url ? { endpoint_url: f.endpoint_url } : {}) };
    try {
      const created = await api(exportsPath(project), { method: 'POST', body: { name: f.name, model: f.model, interval: f.interval, destination: { type: f.type, config } } });
      navigate(projectPath(project, `batch_exports/${created.id}`));
    } catch (error) {
      setState({ error, busy: false });
    }
  };
  const c = (k) => `destination__config__${k}`;
  const names = ['name', 'model', 'interval', 'destination', 'destination__type', ...['path', 'compression', 'bucket_name', 'region', 'prefix', 'endpoint_url', 'aws_access_key_id', 'aws_secret_access_key'].map(c)];
  const err = state.error;
  return (
    <form class="card form" onSubmit={submit} aria-labelledby="new-export-title">
      <h2 id="new-export-title">New batch export</h2>
      <ErrorNote error={err} fields={names} />
      <Field label="Name" name="name" error={err}>
        <input required maxLength={256} value={f.name} onInput={set('name')} />
      </Field>
      <div class="row">
        <Field label="What" name="model" error={err}>
          <select value={f.model} onChange={set('model')}>
            <option value="events">Events</option>
            <option value="persons">Persons</option>
          </select>
        </Field>
        <Field label="Every" name="interval" error={err}>
          <select value={f.interval} onChange={set('interval')}>
            {intervals.map((i) => (
              <option value={i}>{i}</option>
            ))}
          </select>
        </Field>
        <Field label="Destination" name="destination__type" error={err}>
          <select value={f.type} onChange={set('type')}>
            <option value="Parquet">Parquet files in a directory</option>
            <option value="S3">S3 (Parquet)</option>
          </select>
        </Field>
      </div>
      {f.type === 'Parquet' ? (
        <Field label="Directory" name={c('path')} error={err} hint={`A relative path is below hedge's data directory, in exports/${project}/.`}>
          <input required value={f.path} onInput={set('path')} placeholder="nightly" />
        </Field>
      ) : (
        <fieldset class="s3">
          <legend>S3</legend>
          <div class="row">
            <Field label="Bucket" name={c('bucket_name')} error={err}>
              <input required value={f.bucket_name} onInput={set('bucket_name')} />
            </Field>
            <Field label="Region" name={c('region')} error={err}>
              <input required value={f.region} onInput={set('region')} placeholder="us-east-1" />
            </Field>
            <Field label="Prefix" name={c('prefix')} error={err}>
              <input value={f.prefix} onInput={set('prefix')} />
            </Field>
          </div>
          <Field label="Endpoint URL" name={c('endpoint_url')} error={err} hint="Only for an S3-compatible store other than AWS.">
            <input type="url" value={f.endpoint_url} onInput={set('endpoint_url')} />
          </Field>
          <p class="hint">The keys are write-only: hedge stores them for the uploads and never shows them again.</p>
          <div class="row">
            <Field label="Access key id" name={c('aws_access_key_id')} error={err}>
              <input required autocomplete="off" value={f.aws_access_key_id} onInput={set('aws_access_key_id')} />
            </Field>
            <Field label="Secret access key" name={c('aws_secret_access_key')} error={err}>
              <input required type="password" autocomplete="new-password" value={f.aws_secret_access_key} onInput={set('aws_secret_access_key')} />
            </Field>
          </div>
        </fieldset>
      )}
      <Field label="Compression" name={c('compression')} error={err}>
        <select value={f.compression} onChange={set('compression')}>
          {compressions.map((x) => (
            <option value={x}>{x}</option>
          ))}
        </select>
      </Field>
      <div class="row">
        <button type="submit" disabled={state.busy}>
          Create export
        </button>
        <button type="button" class="secondary" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

// BatchExport is one export's page.
export function BatchExport({ project, id }) {
  const { project: record } = useSession();
  const tz = record.timezone;
  const exp = useAsync((signal) => api(exportsPath(project, `${id}/`), { signal }), [project, id]);
  const runs = useAsync((signal) => api(exportsPath(project, `${id}/runs/?limit=100`), { signal }), [project, id]);
  const [error, setError] = useState(null);
  const [note, setNote] = useState('');
  // Runs change by themselves: look again while some may, and the tab is visible.
  const every = runs.data ? pollEvery(runs.data.results) : 0;
  useEffect(() => {
    if (!every) return;
    const timer = setInterval(() => !document.hidden && runs.reload(), every);
    return () => clearInterval(timer);
  }, [every]);
  const act = async (fn, done) => {
    setError(null);
    try {
      await fn();
      setNote(done);
    } catch (e) {
      setError(e);
    }
    exp.reload();
    runs.reload();
  };
  if (exp.error) return <Page title="Batch export"><ErrorNote error={exp.error} /></Page>;
  if (!exp.data) return <Page title="Batch export"><Loading /></Page>;
  const e = exp.data;
  const columns = [
    { key: 'window', label: 'Window', render: (r) => `${when(r.data_interval_start, tz)} – ${when(r.data_interval_end, tz)}` },
    { key: 'status', label: 'Status', render: (r) => <Status status={r.status} /> },
    { key: 'records_completed', label: 'Records', numeric: true, render: (r) => format(r.records_completed) },
    { key: 'attempts', label: 'Attempts', numeric: true },
    { key: 'error', label: 'Error', render: (r) => (r.latest_error ? <span class="run-error">{r.latest_error}</span> : '') },
    {
      key: 'actions',
      label: 'Actions',
      render: (r) => (
        <button
          type="button"
          class="secondary"
          disabled={r.status === 'Running'}
          aria-label={`Retry the run of ${when(r.data_interval_start, tz)}`}
          onClick={() => act(() => api(exportsPath(project, `${id}/runs/${r.id}/retry/`), { method: 'POST' }), `The run of ${when(r.data_interval_start, tz)} runs again.`)}
        >
          Retry
        </button>
      ),
    },
  ];
  return (
    <Page
      title={e.name}
      actions={
        <>
          <button
            type="button"
            class="secondary"
            onClick={() => act(() => api(exportsPath(project, `${id}/${e.paused ? 'unpause' : 'pause'}/`), { method: 'POST' }), e.paused ? 'Unpaused.' : 'Paused.')}
          >
            {e.paused ? 'Unpause' : 'Pause'}
          </button>
          <ConfirmButton
            label="Delete"
            title={`Delete the export “${e.name}”?`}
            confirmLabel="Delete export"
            onConfirm={async () => {
              await api(exportsPath(project, `${id}/`), { method: 'DELETE' });
              navigate(projectPath(project, 'batch_exports'));
            }}
          >
            <p>Its schedule stops; files already written stay where they are.</p>
          </ConfirmButton>
        </>
      }
    >
      <p>
        <Link href={projectPath(project, 'batch_exports')}>All batch exports</Link>
      </p>
      <dl class="facts">
        <dt>State</dt>
        <dd class="export-state">{e.paused ? `Paused since ${when(e.last_paused_at, tz)}` : 'Active'}</dd>
        <dt>Exports</dt>
        <dd>
          {e.model}, every {e.interval}
        </dd>
        <dt>To</dt>
        <dd>{where(e.destination)}</dd>
      </dl>
      <Backfill
        project={project}
        id={id}
        onQueued={(b) => {
          setNote(`Backfill queued: ${b.total_runs} run${b.total_runs === 1 ? '' : 's'}.`);
          runs.reload();
        }}
      />
      <p role="status" class="saved">
        {note}
      </p>
      <ErrorNote error={error} />
      <section aria-labelledby="runs-title">
        <h2 id="runs-title">Runs</h2>
        <ErrorNote error={runs.error} />
        {runs.data ? <Table columns={columns} rows={runs.data.results} rowKey={(r) => r.id} empty="No runs yet: the first runs when its first window ends, or backfill a past range." /> : !runs.error && <Loading />}
      </section>
    </Page>
  );
}

// localInput is a datetime-local value for a Date, in the browser's time.
function localInput(d) {
  const pad = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

function Backfill({ project, id, onQueued }) {
  const now = new Date();
  const [start, setStart] = useState(() => localInput(new Date(now.getTime() - 3 * 86400e3)));
  const [end, setEnd] = useState(() => localInput(now));
  const [state, setState] = useState({ error: null, busy: false });
  const submit = async (e) => {
    e.preventDefault();
    setState({ error: null, busy: true });
    try {
      const b = await api(exportsPath(project, `${id}/backfills/`), { method: 'POST', body: { start_at: new Date(start).toISOString(), end_at: new Date(end).toISOString() } });
      setState({ error: null, busy: false });
      onQueued(b);
    } catch (error) {
      setState({ error, busy: false });
    }
  };
  return (
    <form class="card" onSubmit={submit} aria-labelledby="backfill-title">
      <h2 id="backfill-title">Backfill</h2>
      <p class="muted">Export a past range again: one run per window that has ended, by the events' own time.</p>
      <ErrorNote error={state.error} fields={['start_at', 'end_at']} />
      <div class="row">
        <Field label="From (your time)" name="start_at" error={state.error}>
          <input type="datetime-local" required value={start} onInput={(e) => setStart(e.target.value)} />
        </Field>
        <Field label="Until (your time)" name="end_at" error={state.error}>
          <input type="datetime-local" required value={end} onInput={(e) => setEnd(e.target.value)} />
        </Field>
        <button type="submit" disabled={state.busy}>
          Start backfill
        </button>
      </div>
    </form>
  );
}
