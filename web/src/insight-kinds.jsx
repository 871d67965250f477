// The results of the insight kinds beyond trends and funnels, drawn as PostHog draws
// them: a retention as its cohort table (each cohort's size and the share of it that
// came back each period, shaded) under a line of the mean share; a stickiness as
// persons by the number of intervals they were active in; a lifecycle as stacked bars
// of new, returning and resurrecting persons above the axis and dormant ones below.
// Each opens the persons behind its cells or bars. (Paths are in sankey.jsx.)
import { useState } from 'preact/hooks';
import { TimeChart, inProgressFrom, longDate } from './chart.jsx';
import { PersonsDialog } from './persons-dialog.jsx';
import { format } from './ui.jsx';

// asIs is an x axis whose labels are shown as they are.
const asIs = (name, more) => ({ name, tick: (l) => l, long: (l) => l, ...more });

// cohortDate names a retention cohort by its period's start (RFC 3339 on the project's
// clocks): a day, a week's or a month's first day, or an hour.
function cohortDate(date, period) {
  const d = longDate(date);
  return period === 'Hour' ? d : d.slice(0, 11);
}

// percent is n of size as a percentage, 0 of none.
const percent = (n, size) => (size ? (100 * n) / size : 0);

// pct writes a percentage as PostHog's cells do: one decimal, none for whole numbers.
const pct = (v) => `${Number.isInteger(v) ? v : v.toFixed(1)}%`;

// RetentionResult draws cohorts [{date, label, values: [{count, label}]}]. With
// project and ran (the RetentionQuery as it ran), a cohort's cells and its name open
// the persons of the cohort, with the periods each came back in.
export function RetentionResult({ query, cohorts, title, height, project, ran }) {
  const [open, setOpen] = useState(null);
  if (!Array.isArray(cohorts) || cohorts.length === 0) return <p class="empty">No cohorts in this range.</p>;
  const period = (query.retentionFilter && query.retentionFilter.period) || 'Day';
  const periods = cohorts.reduce((a, c) => (c.values.length > a.length ? c.values.map((v) => v.label) : a), []);
  // The mean share of each period, over the cohorts that have reached it and have persons.
  const mean = periods.map((_, k) => {
    const shares = cohorts.filter((c) => c.values[k] && c.values[0].count > 0).map((c) => percent(c.values[k].count, c.values[0].count));
    return shares.length ? Number((shares.reduce((a, b) => a + b, 0) / shares.length).toFixed(1)) : null;
  });
  const drill = project && ran ? (i, opener) => setOpen({ i, opener }) : null;
  const closed = () => {
    const opener = open && open.opener;
    setOpen(null);
    if (opener && opener.isConnected) opener.focus();
  };
  const chartH = height ? Math.max(120, Math.min(240, Math.round(height * 0.45))) : 240;
  return (
    <div class="retention">
      <TimeChart
        title={`${title}: mean retention`}
        labels={periods}
        series={[{ label: 'Mean', data: mean.map((v) => v ?? 0) }]}
        display="line"
        height={chartH}
        axis={asIs('Period', { unit: '%', noTotal: true })}
      />
      <div class="table-wrap">
        <table class="retention-table">
          <caption class="sr-only">{`${title}: the persons of each cohort, and the share of them that came back each period`}</caption>
          <thead>
            <tr>
              <th scope="col">Cohort</th>
              <th scope="col" class="num">
                Persons
              </th>
              {periods.map((p) => (
                <th scope="col" class="num">
                  {p}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {cohorts.map((c, i) => {
              const size = c.values[0] ? c.values[0].count : 0;
              const name = cohortDate(c.date, period);
              return (
                <tr>
                  <th scope="row">
                    {drill && size > 0 ? (
                      <button type="button" class="link" aria-label={`${name}: ${format(size)} persons, show them`} onClick={(e) => drill(i, e.currentTarget)}>
                        {name}
                      </button>
                    ) : (
                      name
                    )}
                  </th>
                  <td class="num">{format(size)}</td>
                  {periods.map((p, k) => {
                    const v = c.values[k];
                    if (!v) return <td class="retention-cell future" />;
                    const share = percent(v.count, size);
                    return (
                      <td
                        class={`num retention-cell${drill && size > 0 ? ' drill' : ''}`}
                        style={{ '--shade': `${(4 + 0.36 * share).toFixed(1)}%` }}
                        title={`${name}, ${p}: ${format(v.count)} of ${format(size)} persons (${pct(share)})`}
                        data-count={v.count}
                        onClick={drill && size > 0 ? (e) => drill(i, e.currentTarget.closest('tr').querySelector('button')) : undefined}
                      >
                        {pct(share)}
                      </td>
                    );
                  })}
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      {open && (
        <PersonsDialog
          key={open.i}
          project={project}
          source={{ kind: 'InsightActorsQuery', source: ran, interval: open.i }}
          title={`Cohort of ${cohortDate(cohorts[open.i].date, period)}`}
          count={{ column: 'appearances', label: 'Came back', show: (a) => (a || []).filter((k) => k > 0).map((k) => periods[k] || `${period} ${k}`).join(', ') || '—' }}
          close={closed}
        />
      )}
    </div>
  );
}

// useDrill is the bar whose persons are shown ({i, j, opener}, opener the element
// focus goes back to when the dialog closes), the chart's drill that opens one, and
// closed, which the dialog calls.
function useDrill() {
  const [open, setOpen] = useState(null);
  const drill = (i, j, opener) => setOpen({ i, j, opener });
  const closed = () => {
    const opener = open && open.opener;
    setOpen(null);
    if (opener && opener.isConnected) opener.focus();
  };
  return [open, drill, closed];
}

// StickinessResult draws lines [{label, labels: ["1 day", ...], data}]: the persons
// active on exactly that many intervals of the range. With project and ran (the
// StickinessQuery as it ran), a bar or point lists its persons (day: its number of
// intervals, as PostHog's persons modal asks).
export function StickinessResult({ query, lines, title, height, project, ran }) {
  const [open, drill, closed] = useDrill();
  if (!Array.isArray(lines) || lines.length === 0) return <p class="empty">No events in this range.</p>;
  const display = query.stickinessFilter && query.stickinessFilter.display === 'ActionsBar' ? 'bar' : 'line';
  const unit = { hour: 'Hours', day: 'Days', week: 'Weeks', month: 'Months' }[query.interval || 'day'] || 'Intervals';
  const canDrill = !!(project && ran);
  const line = open && lines[open.i];
  return (
    <>
      <TimeChart
        title={title}
        labels={lines[0].labels || []}
        series={lines.map((l) => ({ label: l.label, data: l.data, drillable: canDrill && typeof (l.action && l.action.order) === 'number' }))}
        display={display}
        height={height}
        axis={asIs(`${unit} active`, { long: (l) => `Active ${l}` })}
        drill={canDrill ? drill : undefined}
      />
      {open && (
        <PersonsDialog
          key={`${open.i}-${open.j}`}
          project={project}
          source={{ kind: 'InsightActorsQuery', source: ran, day: open.j + 1, series: line.action.order }}
          title={`${line.label}: active ${(line.labels || [])[open.j] || open.j + 1}`}
          close={closed}
        />
      )}
    </>
  );
}

const statuses = { new: 'New', returning: 'Returning', resurrecting: 'Resurrecting', dormant: 'Dormant' };

// LifecycleResult draws lines [{status, days, data}] as stacked bars: the persons new,
// returning and resurrecting in each interval above the axis, the dormant (negative)
// below it. The interval now falls in is drawn as in progress. With project and ran
// (the LifecycleQuery as it ran), a bar's segment lists its persons (day and status).
export function LifecycleResult({ query, lines, title, height, timezone, project, ran }) {
  const [open, drill, closed] = useDrill();
  if (!Array.isArray(lines) || lines.length === 0) return <p class="empty">No events in this range.</p>;
  const days = lines[0].days || [];
  const zone = timezone || Intl.DateTimeFormat().resolvedOptions().timeZone;
  const canDrill = !!(project && ran);
  const series = lines.map((l) => ({ label: statuses[l.status] || l.label, data: l.data, drillable: canDrill && !!statuses[l.status] }));
  const line = open && lines[open.i];
  return (
    <>
      <TimeChart
        title={title}
        labels={days}
        series={series}
        display="stacked"
        height={height}
        current={inProgressFrom(days, query.interval || 'day', zone)}
        drill={canDrill ? drill : undefined}
      />
      {open && (
        <PersonsDialog
          key={`${open.i}-${open.j}`}
          project={project}
          source={{ kind: 'InsightActorsQuery', source: ran, day: days[open.j], status: line.status }}
          title={`${series[open.i].label} on ${longDate(days[open.j])}`}
          close={closed}
        />
      )}
    </>
  );
}
