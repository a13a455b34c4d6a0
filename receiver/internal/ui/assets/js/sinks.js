// Sinks: health from /metrics (queue depth, outcomes, breaker, disabled), dead letters with
// their last error and a replay button.
import { APIError, get, metrics, post } from './api.js';
import { announce, every, fill, h, shortId, timeEl } from './dom.js';

function sinkHealth(samples) {
  const sinks = {};
  const of = (name) => (sinks[name] ||= { depth: null, delivered: 0, retried: 0, dead: 0, disabledOutcome: 0, breaker: 0, disabled: 0 });
  for (const s of samples) {
    const name = s.labels.sink;
    if (!name) continue;
    switch (s.name) {
      case 'scribehook_sink_queue_depth': of(name).depth = s.value; break;
      case 'scribehook_sink_breaker_open': of(name).breaker = s.value; break;
      case 'scribehook_sink_disabled': of(name).disabled = s.value; break;
      case 'scribehook_sink_deliveries_total': {
        const o = s.labels.outcome;
        if (o === 'disabled') of(name).disabledOutcome = s.value;
        else if (o in of(name)) of(name)[o] = s.value;
        break;
      }
      default:
    }
  }
  return sinks;
}

// A sink's recent deliveries (GET /v1/sinks/:name/deliveries) and the replay of a window of its
// events (POST /v1/sinks/:name/replay), which also backfills a sink added later.
let histSel;
function deliveriesSection() {
  const status = h('select', { id: 'hist-status' }, ['', 'queued', 'delivered', 'dead'].map((v) => h('option', { value: v }, v || 'Any status')));
  const since = h('input', { id: 'rp-since', type: 'datetime-local', step: '1', required: true });
  const until = h('input', { id: 'rp-until', type: 'datetime-local', step: '1' });
  const types = h('input', { id: 'rp-type', type: 'text', spellcheck: 'false', autocomplete: 'off', placeholder: 'job.* live.transcript' });
  const dry = h('input', { id: 'rp-dry', type: 'checkbox' });
  const out = h('div', { role: 'status', id: 'sink-replay-status' });
  const problem = h('div', { role: 'alert' });
  const table = h('div', { id: 'sink-history' }, h('p', { class: 'muted' }, 'Choose a sink.'));
  const iso = (v) => (v ? new Date(v).toISOString() : '');
  const load = async () => {
    const name = histSel.value;
    if (!name) { fill(table, h('p', { class: 'muted' }, 'Choose a sink.')); return; }
    const qs = new URLSearchParams({ limit: '50' });
    if (status.value) qs.set('status', status.value);
    try {
      const items = await get(`/v1/sinks/${encodeURIComponent(name)}/deliveries?${qs}`);
      if (!items.length) { fill(table, h('p', { id: 'no-deliveries' }, 'No deliveries.')); return; }
      fill(table, h('div', { class: 'table-wrap' }, h('table', { class: 'cards', id: 'deliveries-table' },
        h('caption', { class: 'visually-hidden' }, `Deliveries of ${name}`),
        h('thead', {}, h('tr', {}, ['Delivery', 'Event', 'Job', 'Status', 'Attempts', 'Last error', 'Queued', 'Done']
          .map((t) => h('th', { scope: 'col', class: t === 'Attempts' ? 'num' : '' }, t)))),
        h('tbody', {}, items.map((d) => h('tr', { dataset: { event: d.event_id, status: d.status } },
          h('th', { scope: 'row', 'data-label': 'Delivery' }, String(d.id)),
          h('td', { 'data-label': 'Event' }, d.event_type, h('div', { class: 'hint mono' }, shortId(d.event_id))),
          h('td', { 'data-label': 'Job' }, d.job_id ? h('a', { href: `#/jobs/${encodeURIComponent(d.job_id)}`, class: 'mono nowrap' }, shortId(d.job_id)) : '—'),
          h('td', { 'data-label': 'Status' }, d.status),
          h('td', { class: 'num', 'data-label': 'Attempts' }, String(d.attempts)),
          h('td', { 'data-label': 'Last error', class: 'last-error' }, d.last_error),
          h('td', { 'data-label': 'Queued' }, timeEl(d.created_at)),
          h('td', { 'data-label': 'Done' }, timeEl(d.delivered_at || d.failed_at))))))));
    } catch (e) {
      if (e instanceof APIError && e.status === 401) return;
      fill(problem, h('p', { class: 'notice error' }, e.message));
    }
  };
  const show = h('form', { class: 'filters', 'aria-label': 'Show deliveries' },
    h('div', { class: 'field' }, h('label', { for: 'hist-sink' }, 'Sink'), histSel),
    h('div', { class: 'field' }, h('label', { for: 'hist-status' }, 'Status'), status),
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Show')));
  show.addEventListener('submit', (ev) => { ev.preventDefault(); load(); });
  const replayForm = h('form', { class: 'filters', id: 'sink-replay', 'aria-label': 'Replay a window' },
    h('div', { class: 'field' }, h('label', { for: 'rp-since' }, 'Since'), since),
    h('div', { class: 'field' }, h('label', { for: 'rp-until' }, 'Until (optional)'), until),
    h('div', { class: 'field' }, h('label', { for: 'rp-type' }, 'Types (optional, space separated globs)'), types),
    h('div', { class: 'field' }, h('label', { for: 'rp-dry' }, dry, ' Dry run')),
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Replay')));
  replayForm.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    fill(problem);
    const name = histSel.value;
    if (!name) { fill(problem, h('p', { class: 'notice error' }, 'Choose a sink first.')); return; }
    const qs = new URLSearchParams({ since: iso(since.value) });
    if (until.value) qs.set('until', iso(until.value));
    for (const t of types.value.split(/[\s,]+/).filter(Boolean)) qs.append('type', t);
    if (dry.checked) qs.set('dry_run', 'true');
    try {
      const r = await post(`/v1/sinks/${encodeURIComponent(name)}/replay?${qs}`);
      const verb = r.dry_run ? 'would queue' : 'queued';
      const msg = `${name}: ${verb} ${r.requeued.length} again and ${r.backfilled.length} by backfill; ${r.already_queued.length} already queued, ${r.skipped} not taken.`;
      fill(out, h('p', { class: 'notice ok' }, msg));
      announce(msg);
      setTimeout(load, 500);
    } catch (e) {
      if (e instanceof APIError && e.status === 401) return;
      const details = e.details && e.details.length ? `: ${e.details.join('; ')}` : '';
      fill(problem, h('p', { class: 'notice error' }, `Replay failed: ${e.message}${details}`));
    }
  });
  return h('section', { 'aria-labelledby': 'h-deliveries' }, h('h2', { id: 'h-deliveries' }, 'Deliveries and replay'),
    h('p', { class: 'hint' }, 'A sink\'s recent deliveries, newest first. Replay queues the sink\'s events first queued in the window again, under their event ids (delivered and dead ones; queued ones stay), and queues a sink added later the stored events its filter takes (a backfill).'),
    show, table, replayForm, out, problem);
}

export function sinksPage(q) {
  const filter = { sink: q.get('sink') || '', job: q.get('job') || '' };
  histSel = h('select', { id: 'hist-sink' }, h('option', { value: '' }, 'Choose a sink'));
  const health = h('div', { id: 'sink-health' }, h('p', { class: 'muted' }, 'Loading…'));
  const sinkSel = h('select', { id: 'dl-sink' }, h('option', { value: '' }, 'All sinks'));
  const jobInput = h('input', { id: 'dl-job', type: 'text', value: filter.job, spellcheck: 'false', autocomplete: 'off' });
  const form = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter dead letters' },
    h('div', { class: 'field' }, h('label', { for: 'dl-sink' }, 'Sink'), sinkSel),
    h('div', { class: 'field' }, h('label', { for: 'dl-job' }, 'Job id'), jobInput),
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Apply'),
      h('button', { type: 'button', class: 'quiet', onclick: () => { location.hash = '#/sinks'; } }, 'Clear')));
  const result = h('div', { role: 'status', id: 'replay-status' });
  const problem = h('div', { role: 'alert' });
  const list = h('div', { id: 'deadletters' }, h('p', { class: 'muted' }, 'Loading…'));
  const el = h('div', {},
    h('h1', {}, 'Sinks'),
    h('section', { 'aria-labelledby': 'h-health' }, h('h2', { id: 'h-health' }, 'Health'),
      h('p', { class: 'hint' }, 'From /metrics, every 5 s. Counts are attempts since serve started; the failure rate is failed attempts (retried, dead, disabled) over all attempts. "Open" covers half-open too. A sink disabled by a 410 Gone answer or by an operator stays disabled across restarts, its deliveries queued, until Enable (or scribehook sinks enable).'),
      health),
    h('section', { 'aria-labelledby': 'h-dead' }, h('h2', { id: 'h-dead' }, 'Dead letters'),
      h('p', { class: 'hint' }, 'Deliveries that failed their last attempt, newest first. Replay puts one back in its sink\'s queue, due now, with its attempts reset.'),
      form, result, problem, list),
    deliveriesSection());

  const known = new Set();
  const addSinkOptions = (names) => {
    for (const n of names) {
      if (known.has(n)) continue;
      known.add(n);
      sinkSel.appendChild(h('option', { value: n, selected: n === filter.sink }, n));
      histSel.appendChild(h('option', { value: n, selected: n === filter.sink }, n));
    }
  };
  if (filter.sink) addSinkOptions([filter.sink]);

  const loadHealth = async () => {
    try {
      const sinks = sinkHealth(await metrics());
      const names = Object.keys(sinks).sort();
      addSinkOptions(names);
      if (!names.length) { fill(health, h('p', { class: 'muted' }, 'No sinks are configured.')); return; }
      fill(health, h('div', { class: 'table-wrap' }, h('table', { class: 'cards', id: 'sinks-table' },
        h('caption', { class: 'visually-hidden' }, 'Sink health'),
        h('thead', {}, h('tr', {}, ['Sink', 'Queue depth', 'Delivered', 'Retried', 'Dead', 'Failure rate', 'Breaker', 'State']
          .map((t, i) => h('th', { scope: 'col', class: i > 0 && i < 6 ? 'num' : '' }, t)))),
        h('tbody', {}, names.map((n) => {
          const s = sinks[n];
          const failed = s.retried + s.dead + s.disabledOutcome;
          const attempts = s.delivered + failed;
          const rate = attempts ? `${Math.round((100 * failed) / attempts)} %` : '—';
          return h('tr', { dataset: { sink: n } },
            h('th', { scope: 'row', 'data-label': 'Sink' }, n),
            h('td', { class: 'num', 'data-label': 'Queue depth' }, s.depth === null ? '—' : String(s.depth)),
            h('td', { class: 'num', 'data-label': 'Delivered' }, String(s.delivered)),
            h('td', { class: 'num', 'data-label': 'Retried' }, String(s.retried)),
            h('td', { class: 'num', 'data-label': 'Dead' }, String(s.dead)),
            h('td', { class: 'num', 'data-label': 'Failure rate' }, rate),
            h('td', { 'data-label': 'Breaker' }, s.breaker ? h('span', { class: 'badge bad' }, 'Open') : h('span', { class: 'badge ok' }, 'Closed')),
            h('td', { 'data-label': 'State' }, s.disabled
              ? [h('span', { class: 'badge bad' }, 'Disabled'), ' ', enableButton(n)]
              : h('span', { class: 'badge ok' }, 'Running')));
        })))));
    } catch (e) {
      fill(health, h('p', { class: 'notice error' }, `Metrics unavailable: ${e.message}`));
    }
  };

  // A disabled sink (its destination answered 410 Gone, or an operator disabled it) stays so
  // across restarts until enabled; Enable records that and its queue starts moving again.
  const enableButton = (name) => {
    const button = h('button', { type: 'button', dataset: { enable: name }, 'aria-label': `Enable sink ${name}` }, 'Enable');
    button.addEventListener('click', async () => {
      button.disabled = true;
      button.textContent = 'Enabling…';
      try {
        await post(`/v1/sinks/${encodeURIComponent(name)}/enable`);
        const msg = `Sink ${name} is enabled: its queued deliveries go out again.`;
        fill(result, h('p', { class: 'notice ok' }, msg));
        announce(msg);
        el.querySelector('h1').focus();
        setTimeout(loadHealth, 300);
      } catch (e) {
        if (e instanceof APIError && e.status === 401) return;
        button.disabled = false;
        button.textContent = 'Enable';
        fill(problem, h('p', { class: 'notice error' }, `Enabling sink ${name} failed: ${e.message}`));
      }
    });
    return button;
  };

  const rows = new Map(); // dead letter id → tr
  async function replay(d, button) {
    button.disabled = true;
    button.textContent = 'Replaying…';
    try {
      await post(`/v1/deadletters/${d.id}/replay`);
      const msg = `Dead letter ${d.id} (${d.event_type} of job ${shortId(d.job_id)}) is queued again for ${d.sink}.`;
      fill(result, h('p', { class: 'notice ok' }, msg));
      announce(msg);
      const tr = rows.get(d.id);
      const next = tr && (tr.nextElementSibling || tr.previousElementSibling);
      if (tr) { tr.remove(); rows.delete(d.id); }
      (next && next.querySelector('button')) ? next.querySelector('button').focus() : el.querySelector('h1').focus();
      setTimeout(loadHealth, 500);
    } catch (e) {
      if (e instanceof APIError && e.status === 401) return;
      button.disabled = false;
      button.textContent = 'Replay';
      fill(problem, h('p', { class: 'notice error' }, `Replay of dead letter ${d.id} failed: ${e.message}`));
    }
  }

  const loadDead = async () => {
    const qs = new URLSearchParams({ limit: '1000' });
    if (filter.sink) qs.set('sink', filter.sink);
    try {
      let dls = await get(`/v1/deadletters?${qs}`);
      addSinkOptions(dls.map((d) => d.sink));
      if (filter.job) dls = dls.filter((d) => d.job_id === filter.job);
      const ids = dls.map((d) => d.id).join(',');
      if (list.dataset.ids === ids) return; // nothing changed: keep focus and scroll
      list.dataset.ids = ids;
      const focusedId = document.activeElement && document.activeElement.dataset && document.activeElement.dataset.replay;
      rows.clear();
      if (!dls.length) {
        fill(list, h('p', { id: 'no-deadletters' }, filter.job || filter.sink ? 'No dead letters match.' : 'No dead letters.'));
        return;
      }
      const trs = dls.map((d) => {
        const button = h('button', { type: 'button', dataset: { replay: String(d.id) }, 'aria-label': `Replay dead letter ${d.id} to ${d.sink}` }, 'Replay');
        button.addEventListener('click', () => replay(d, button));
        const tr = h('tr', { dataset: { id: String(d.id), job: d.job_id, sink: d.sink } },
          h('th', { scope: 'row', 'data-label': 'Dead letter' }, String(d.id)),
          h('td', { 'data-label': 'Sink' }, d.sink),
          h('td', { 'data-label': 'Event' }, d.event_type, h('div', { class: 'hint mono' }, shortId(d.event_id))),
          h('td', { 'data-label': 'Job' }, d.job_id ? h('a', { href: `#/jobs/${encodeURIComponent(d.job_id)}`, class: 'mono nowrap', 'aria-label': `Job ${d.job_id}` }, shortId(d.job_id)) : '—'),
          h('td', { class: 'num', 'data-label': 'Attempts' }, String(d.attempts)),
          h('td', { 'data-label': 'Last error', class: 'last-error' }, d.last_error,
            h('details', {}, h('summary', {}, 'Event'), h('pre', {}, JSON.stringify(d.event, null, 2)))),
          h('td', { 'data-label': 'Failed' }, timeEl(d.failed_at)),
          h('td', { 'data-label': 'Action' }, button));
        rows.set(d.id, tr);
        return tr;
      });
      fill(list, h('div', { class: 'table-wrap' }, h('table', { class: 'cards', id: 'deadletters-table' },
        h('caption', { class: 'visually-hidden' }, 'Dead letters'),
        h('thead', {}, h('tr', {}, ['Dead letter', 'Sink', 'Event', 'Job', 'Attempts', 'Last error', 'Failed', 'Action']
          .map((t) => h('th', { scope: 'col', class: t === 'Attempts' ? 'num' : '' }, t)))),
        h('tbody', {}, trs))));
      if (focusedId) { const b = list.querySelector(`button[data-replay="${focusedId}"]`); if (b) b.focus(); }
    } catch (e) {
      if (e instanceof APIError && e.status === 401) return;
      fill(problem, h('p', { class: 'notice error' }, e.message));
    }
  };

  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    filter.sink = sinkSel.value;
    filter.job = jobInput.value.trim();
    const qs = new URLSearchParams();
    if (filter.sink) qs.set('sink', filter.sink);
    if (filter.job) qs.set('job', filter.job);
    history.replaceState(null, '', `#/sinks${qs.toString() ? `?${qs}` : ''}`);
    delete list.dataset.ids;
    loadDead();
  });

  loadHealth();
  loadDead();
  const stopHealth = every(5000, loadHealth);
  const stopDead = every(5000, loadDead);
  return { el, title: 'Sinks', cleanup: () => { stopHealth(); stopDead(); } };
}
