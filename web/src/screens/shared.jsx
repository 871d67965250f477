// The public page of a shared dashboard (/shared/{token}) and its framed twin
// (/embedded/{token}): no sign-in, read only. The page's own URL is the credential; its
// data is the public JSON of the same path (hedge leaves people out of it). ?refresh=N
// fetches it again every N seconds (at least MIN_REFRESH) while the page is visible,
// ?theme=dark or light fixes the scheme. A link that was turned off or rotated says so.
import { useEffect, useMemo } from 'preact/hooks';
import { api } from '../api.js';
import { forceTheme } from '../theme.js';
import { ErrorNote, Loading, useAsync } from '../ui.jsx';
import { Grid } from './dashboard.jsx';

// MIN_REFRESH is the shortest ?refresh= honoured, in seconds: a wall display gains
// nothing from more, and hedge computes the tiles for every fetch of a changed project.
export const MIN_REFRESH = 10;

export function Shared({ token, params, embedded }) {
  const path = `/${embedded ? 'embedded' : 'shared'}/${encodeURIComponent(token)}`;
  const { data, error, reload } = useAsync((signal) => api(path, { signal }), [path]);
  const scheme = params.get('theme');
  useEffect(() => {
    forceTheme(scheme === 'dark' || scheme === 'light' ? scheme : null);
  }, [scheme]);
  const refresh = Number(params.get('refresh'));
  const every = refresh > 0 ? Math.max(MIN_REFRESH, refresh) : 0;
  useEffect(() => {
    if (!every) return;
    const timer = setInterval(() => document.visibilityState === 'visible' && reload(), every * 1000);
    return () => clearInterval(timer);
  }, [every]);
  useEffect(() => {
    document.title = data ? `${data.name || 'Dashboard'} · hedge` : 'Shared dashboard · hedge';
  }, [data]);
  // Public tiles carry no ids: their order (unique, and stable between fetches) keys them.
  const tiles = useMemo(() => (data ? data.tiles.map((t) => ({ ...t, id: t.order })) : []), [data]);
  const at = useMemo(() => new Date().toLocaleTimeString('en-GB'), [data]);

  if (error && error.status === 404) return <Gone />;
  return (
    <main id="main" class={embedded ? 'shared-page shared-embedded' : 'shared-page'}>
      {!data ? (
        error ? <ErrorNote error={error} /> : <Loading />
      ) : (
        <>
          <header class="page-head">
            <h1>{data.name || 'Untitled dashboard'}</h1>
            <p class="muted shared-updated" role="status">
              Updated {at}
              {every ? `, again every ${every} s` : ''}
            </p>
          </header>
          {data.description && <p class="muted dash-description">{data.description}</p>}
          <ErrorNote error={error} />
          {tiles.length === 0 ? <p class="empty">This dashboard has no tiles.</p> : <Grid tiles={tiles} layouts={{}} />}
          {!embedded && <p class="muted shared-foot">A read-only view of a hedge dashboard.</p>}
        </>
      )}
    </main>
  );
}

// Gone is the page of a link that no longer opens a dashboard.
function Gone() {
  useEffect(() => {
    document.title = 'Link no longer works · hedge';
  }, []);
  return (
    <main id="main" class="auth-page">
      <div class="auth-card">
        <h1>This link no longer works</h1>
        <p>Its dashboard is no longer shared, or its owner made a new link. Ask them for the current one.</p>
      </div>
    </main>
  );
}
