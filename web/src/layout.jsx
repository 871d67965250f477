// The frame around every signed-in screen: a skip link, the header with the project
// switch, the navigation, the theme toggle and the account menu.
import { useState } from 'preact/hooks';
import { api } from './api.js';
import { screens } from './nav.js';
import { CommandPalette } from './palette.jsx';
import { Link, navigate } from './router.jsx';
import { projectPath, useSession } from './session.jsx';
import { setTheme, themeChoice } from './theme.js';


export function Layout({ children }) {
  const { me, projects, project } = useSession();
  const [choice, setChoice] = useState(themeChoice());
  const path = location.pathname;
  const signOut = async () => {
    try {
      await api('/api/logout/', { method: 'POST' });
    } finally {
      location.assign('/login');
    }
  };
  return (
    <div class="shell">
      <a class="skip-link" href="#main">
        Skip to content
      </a>
      <header class="top">
        <Link class="brand" href={projectPath(project.id, 'activity')}>
          hedge
        </Link>
        <label class="project-switch">
          <span class="sr-only">Project</span>
          <select value={project.id} onChange={(e) => navigate(projectPath(e.target.value, 'activity'))}>
            {me.organizations.length > 1
              ? me.organizations.map((o) => (
                  <optgroup label={o.name}>
                    {projects
                      .filter((p) => p.organization === o.id)
                      .map((p) => (
                        <option value={p.id}>{p.name}</option>
                      ))}
                  </optgroup>
                ))
              : projects.map((p) => <option value={p.id}>{p.name}</option>)}
          </select>
        </label>
        <nav aria-label="Screens">
          <ul>
            {screens.map(([slug, label]) => {
              const href = projectPath(project.id, slug);
              // A dashboard's own path is dashboard/{id}, as in PostHog; cohorts and groups sit
              // beside persons (People's tabs).
              const current = path === href || path.startsWith(href + '/') || (slug === 'dashboards' && path.startsWith(projectPath(project.id, 'dashboard/'))) ||
                (slug === 'persons' && (path.startsWith(projectPath(project.id, 'groups/')) || path.startsWith(projectPath(project.id, 'cohorts'))));
              return (
                <li>
                  <Link href={href} aria-current={current ? 'page' : undefined}>
                    {label}
                  </Link>
                </li>
              );
            })}
          </ul>
        </nav>
        <div class="top-end">
          <label>
            <span class="sr-only">Theme</span>
            <select
              value={choice}
              onChange={(e) => {
                setTheme(e.target.value);
                setChoice(e.target.value);
              }}
            >
              <option value="system">Auto</option>
              <option value="light">Light</option>
              <option value="dark">Dark</option>
            </select>
          </label>
          <Link href="/account" title={me.email} aria-current={path === '/account' ? 'page' : undefined}>
            {me.first_name || me.email.split('@')[0]}
          </Link>
          <button type="button" class="secondary" onClick={signOut}>
            Sign out
          </button>
        </div>
      </header>
      <CommandPalette project={project.id} />
      <main id="main" tabindex="-1">
        {children}
      </main>
    </div>
  );
}
