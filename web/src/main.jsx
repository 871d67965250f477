// The console's entry: routes a URL to its screen. Signed-out paths (sign in, invite,
// public dashboards) render alone; every other path first loads who is signed in, and
// a 401 sends the user to sign in and back to the same URL afterwards.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import './app.css';
import './theme.js';
import { api, setUnauthorizedHandler } from './api.js';
import { Layout } from './layout.jsx';
import { lazy } from './lazy.jsx';
import { match, navigate, useLocation } from './router.jsx';
import { Account } from './screens/account.jsx';
import { Activity } from './screens/activity.jsx';
import { Dashboards } from './screens/dashboards.jsx';
import { Group, Groups } from './screens/groups.jsx';
import { Insights } from './screens/insights.jsx';
import { Login } from './screens/login.jsx';
import { Person } from './screens/person.jsx';
import { Persons } from './screens/persons.jsx';
import { Signup } from './screens/signup.jsx';
import { Session, projectPath } from './session.jsx';
import { ErrorNote, Loading, Page } from './ui.jsx';

// The screens loaded when first shown (lazy.jsx): the builders, charts, editors and
// forms; the lists and the shell come with the first load.
const BatchExport = lazy(() => import('./screens/batch-exports.jsx'), 'BatchExport');
const BatchExports = lazy(() => import('./screens/batch-exports.jsx'), 'BatchExports');
const Cohort = lazy(() => import('./screens/cohorts.jsx'), 'Cohort');
const Cohorts = lazy(() => import('./screens/cohorts.jsx'), 'Cohorts');
const Dashboard = lazy(() => import('./screens/dashboard.jsx'), 'Dashboard');
const FeatureFlag = lazy(() => import('./screens/flag.jsx'), 'FeatureFlag');
const FeatureFlags = lazy(() => import('./screens/flags.jsx'), 'FeatureFlags');
const Insight = lazy(() => import('./screens/insight.jsx'), 'Insight');
const Settings = lazy(() => import('./screens/settings.jsx'), 'Settings');
const Shared = lazy(() => import('./screens/shared.jsx'), 'Shared');
const SQL = lazy(() => import('./screens/sql.jsx'), 'SQL');
const WebAnalytics = lazy(() => import('./screens/web-analytics.jsx'), 'WebAnalytics');

// publicRoutes need no sign-in.
const publicRoutes = [
  ['/login', ({ params }) => <Login params={params} />],
  ['/signup/:invite', ({ invite }) => <Signup invite={invite} />],
  ['/shared/:token', ({ token, params }) => <Shared token={token} params={params} />],
  ['/embedded/:token', ({ token, params }) => <Shared token={token} params={params} embedded />],
];

// routes are the signed-in screens; project screens get the project's id as project.
const routes = [
  ['/account', () => <Account />],
  ['/project/:project/activity', ({ project, params }) => <Activity project={project} params={params} />],
  ['/project/:project/persons', ({ project, params }) => <Persons project={project} params={params} />],
  ['/project/:project/persons/:uuid', ({ project, uuid }) => <Person project={project} uuid={uuid} />],
  ['/project/:project/cohorts', ({ project }) => <Cohorts project={project} />],
  ['/project/:project/cohorts/new', ({ project }) => <Cohort project={project} />],
  ['/project/:project/cohorts/:id', ({ project, id }) => <Cohort key={id} project={project} id={id} />],
  ['/project/:project/groups/:type', ({ project, type, params }) => <Groups project={project} type={type} params={params} />],
  // The key is groupKey: a prop named key would be Preact's own.
  ['/project/:project/groups/:type/:groupKey', ({ project, type, groupKey }) => <Group project={project} type={type} groupKey={groupKey} />],
  ['/project/:project/insights', ({ project, params }) => <Insights project={project} params={params} />],
  ['/project/:project/insights/new', ({ project, params }) => <Insight project={project} params={params} />],
  ['/project/:project/insights/:short_id', ({ project, params, short_id }) => <Insight key={short_id} project={project} params={params} shortId={short_id} />],
  ['/project/:project/dashboards', ({ project }) => <Dashboards project={project} />],
  ['/project/:project/dashboard/:id', ({ project, id, params }) => <Dashboard project={project} id={id} params={params} />],
  ['/project/:project/sql', ({ project, params }) => <SQL project={project} params={params} />],
  ['/project/:project/web', ({ project, params }) => <WebAnalytics project={project} params={params} />],
  ['/project/:project/feature_flags', ({ project, params }) => <FeatureFlags project={project} params={params} />],
  ['/project/:project/feature_flags/new', ({ project, params }) => <FeatureFlag project={project} params={params} />],
  ['/project/:project/feature_flags/:id', ({ project, id, params }) => <FeatureFlag project={project} id={id} params={params} />],
  ['/project/:project/batch_exports', ({ project, params }) => <BatchExports project={project} params={params} />],
  ['/project/:project/batch_exports/:id', ({ project, id }) => <BatchExport project={project} id={id} />],
  ['/project/:project/settings', ({ project }) => <Settings project={project} />],
];

// toSignIn goes to the sign-in page, and back here after it. expired says the session
// ended (hedge answered 401), which the sign-in page tells the user; without it the
// browser simply holds no session.
function toSignIn(expired = false) {
  const here = location.pathname + location.search;
  const params = new URLSearchParams();
  if (here !== '/') params.set('next', here);
  if (expired) params.set('expired', '1');
  const qs = params.toString();
  location.assign('/login' + (qs ? '?' + qs : ''));
}

function App() {
  const { path, params } = useLocation();
  for (const [pattern, Screen] of publicRoutes) {
    const m = match(pattern, path);
    if (m) return <Screen {...m} params={params} />;
  }
  return <SignedIn path={path} params={params} />;
}

// SignedIn loads the user and their projects, then shows the screen for path.
function SignedIn({ path, params }) {
  const [state, setState] = useState({ me: null, projects: null, error: null });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    setUnauthorizedHandler(() => toSignIn(true));
    // The CSRF cookie lives as long as the session: without it nobody is signed in,
    // and the sign-in page needs no failed request to say so.
    if (!/(^|;\s*)(__Host-)?hedge_csrftoken=/.test(document.cookie)) {
      toSignIn();
      return;
    }
    const ctl = new AbortController();
    (async () => {
      try {
        const me = await api('/api/users/@me/', { signal: ctl.signal });
        // Every organization's projects: the header switches between all of them.
        const pages = await Promise.all(
          me.organizations.map((o) => api(`/api/organizations/${o.id}/projects/?limit=200`, { signal: ctl.signal })),
        );
        const projects = pages.flatMap((page, i) => page.results.map((p) => ({ ...p, organization_name: me.organizations[i].name })));
        setState({ me, projects, error: null });
      } catch (error) {
        if (error.name !== 'AbortError') setState({ me: null, projects: null, error });
      }
    })();
    return () => ctl.abort();
  }, [tick]);
  if (state.error) return <ErrorNote error={state.error} />;
  if (!state.me) return <Loading />;
  const { me, projects } = state;
  const reload = () => setTick((n) => n + 1);
  const inProject = path.match(/^\/project\/(\d+)(\/|$)/);
  const project = inProject ? projects.find((p) => p.id === Number(inProject[1])) : projects.find((p) => me.team && p.id === me.team.id) || projects[0];
  if (path === '/' && project) {
    navigate(projectPath(project.id, 'activity'), { replace: true });
    return null;
  }
  const session = { me, projects, project: project || projects[0] || null, reload };
  // A project path of a project the user cannot reach shows Not found in the frame.
  let screen = null;
  for (const [pattern, Screen] of routes) {
    const m = match(pattern, path);
    if (m) {
      screen = inProject && !project ? null : <Screen {...m} project={project && project.id} params={params} />;
      break;
    }
  }
  if (!session.project) {
    return (
      <main id="main" class="auth-page">
        <div class="auth-card">
          <h1>No project</h1>
          <p>Your account reaches no project yet. Ask an organization's admin for an invite, or create a project with the API.</p>
        </div>
      </main>
    );
  }
  return (
    <Session.Provider value={session}>
      <Layout>
        {screen || (
          <Page title="Not found">
            <p>There is no screen at this address.</p>
          </Page>
        )}
      </Layout>
    </Session.Provider>
  );
}

render(<App />, document.getElementById('app'));
