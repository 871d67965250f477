// Ingestion: how events reach the warehouse (GET /api/instance_status/), and with the
// event log on, how far behind the warehouse is, partition by partition; with the lake,
// its parts, and the ones set aside as unreadable. It reloads every 5 s while the tab
// is visible, so a backlog is seen draining.
import { useEffect } from 'preact/hooks';
import { api } from '../api.js';
import { ErrorNote, Loading, Table, useAsync } from '../ui.jsx';

export function Ingestion() {
  const status = useAsync((signal) => api('/api/instance_status/', { signal }), []);
  const { reload } = status;
  useEffect(() => {
    const timer = setInterval(() => !document.hidden && reload(), 5000);
    return () => clearInterval(timer);
  }, [reload]);
  const log = status.data?.results.event_log;
  const storage = status.data?.results.storage;
  return (
    <section class="card" aria-labelledby="ingestion-title" id="ingestion">
      <h2 id="ingestion-title">Ingestion</h2>
      {status.data === undefined ? (
        status.error ? <ErrorNote error={status.error} /> : <Loading />
      ) : log ? (
        <EventLog log={log} />
      ) : (
        <p class="ingestion-path">
          Events reach the warehouse directly: capture answers 200 once they are committed to its database, and
          they are queryable at once.
        </p>
      )}
      {storage?.kind === 'lake' && <Lake storage={storage} />}
    </section>
  );
}

const count = (n) => n.toLocaleString('en-US');

// size is bytes in KB, MB or GB.
function size(bytes) {
  const [unit, scale] = bytes >= 1 << 30 ? ['GB', 1 << 30] : bytes >= 1 << 20 ? ['MB', 1 << 20] : ['KB', 1 << 10];
  return `${(bytes / scale).toFixed(1)} ${unit}`;
}

function Lake({ storage }) {
  return (
    <>
      <p class="ingestion-storage">
        Events are kept in the lake: {count(storage.events ?? 0)} events in {count(storage.parts ?? 0)} Parquet parts ({size(storage.bytes ?? 0)}),
        which any engine reads (<code>hedge lake files</code>).
      </p>
      {storage.quarantined_parts > 0 && (
        <p class="error-note ingestion-quarantine" role="alert">
          {count(storage.quarantined_parts)} {storage.quarantined_parts === 1 ? 'part' : 'parts'} (
          {count(storage.quarantined_events)} events) could not be read and {storage.quarantined_parts === 1 ? 'was' : 'were'}{' '}
          set aside: their events are missing from every answer. The server's log names the files.
        </p>
      )}
    </>
  );
}

function EventLog({ log }) {
  const where = log.mode === 'cluster' ? `on a majority of the cluster's ${log.replicas} nodes` : 'on this node';
  const waiting = log.partitions.reduce((n, p) => n + p.backlog_messages, 0);
  return (
    <>
      <p class="ingestion-path">
        Events go through the event log: capture answers 200 once they are on disk {where}, and the warehouse applies
        them behind it, each once.
      </p>
      <p class="ingestion-backlog" role="status">
        {waiting === 0 ? 'The warehouse has applied everything in the log.' : `${waiting.toLocaleString('en-US')} messages wait for the warehouse.`}{' '}
        {log.dead_letters > 0
          ? `${log.dead_letters.toLocaleString('en-US')} could not be applied and are in the dead letters (see the log).`
          : 'No dead letters.'}
      </p>
      <Table
        caption="Backlog by partition"
        columns={[
          { key: 'partition', label: 'Partition', numeric: true },
          { key: 'backlog_messages', label: 'Waiting messages', numeric: true },
          { key: 'behind_seconds', label: 'Behind', numeric: true, render: (p) => (p.behind_seconds > 0 ? `${p.behind_seconds.toFixed(1)} s` : '—') },
        ]}
        rows={log.partitions}
        rowKey={(p) => p.partition}
      />
    </>
  );
}
