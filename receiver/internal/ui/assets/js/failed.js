// Failed deliveries: callbacks the kit stored but could not apply, after every retry (or at
// once, for a body that does not decode as its kind), with their last error and attempts, and
// a replay button each.
import { APIError, get, post } from './api.js';
import { announce, every, fill, h, shortId, timeEl } from './dom.js';

const kinds = [
  ['', 'All kinds'],
  ['job.success', 'Job result'],
  ['job.error', 'Job error'],
  ['live.message', 'Live message'],
  ['account.webhook', 'Account webhook'],
];

export function failedPage(q) {
  const filter = { kind: q.get('kind') || '', job: q.get('job') || '' };
  const kindSel = h('select', { id: 'fd-kind' }, kinds.map(([v, label]) => h('option', { value: v, selected: v === filter.kind }, label)));
  const jobInput = h('input', { id: 'fd-job', type: 'text', value: filter.job, spellcheck: 'false', autocomplete: 'off' });
  const form = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter failed deliveries' },
    h('div', { class: 'field' }, h('label', { for: 'fd-kind' }, 'Kind'), kindSel),
    h('div', { class: 'field' }, h('label', { for: 'fd-job' }, 'Job id'), jobInput),
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Apply'),
      h('button', { type: 'button', class: 'quiet', onclick: () => { location.hash = '#/failed'; } }, 'Clear')));
  const result = h('div', { role: 'status', id: 'failed-status' });
  const problem = h('div', { role: 'alert' });
  const list = h('div', { id: 'failed-deliveries' }, h('p', { class: 'muted' }, 'Loading…'));
  const el = h('div', {},
    h('h1', {}, 'Failed deliveries'),
    h('p', { class: 'hint' }, 'Callbacks stored but not applied: retried (by default at 1 s, 5 s, 30 s, 2 min and 10 min), then set aside here (a body that does not decode is set aside at once). Newest first. Replay applies one again, once, with its attempts reset: fix what made it fail first. scribehook inbox replay does the same from a shell.'),
    form, result, problem, list);

  const rows = new Map(); // inbox id → tr
  async function replay(d, button) {
    button.disabled = true;
    button.textContent = 'Replaying…';
    try {
      await post(`/v1/inbox/${d.id}/replay`);
      const msg = `Delivery ${d.id} (${d.kind} of ${shortId(d.job_id)}) is replayed: it is applied again within a few seconds.`;
      fill(result, h('p', { class: 'notice ok' }, msg));
      announce(msg);
      const tr = rows.get(d.id);
      const next = tr && (tr.nextElementSibling || tr.previousElementSibling);
      if (tr) { tr.remove(); rows.delete(d.id); }
      (next && next.querySelector('button')) ? next.querySelector('button').focus() : el.querySelector('h1').focus();
    } catch (e) {
      if (e instanceof APIError && e.status === 401) return;
      button.disabled = false;
      button.textContent = 'Replay';
      fill(problem, h('p', { class: 'notice error' }, `Replay of delivery ${d.id} failed: ${e.message}`));
    }
  }

  const load = async () => {
    const qs = new URLSearchParams({ limit: '1000' });
    if (filter.kind) qs.set('kind', filter.kind);
    if (filter.job) qs.set('job_id', filter.job);
    try {
      const fds = await get(`/v1/inbox/failed?${qs}`);
      const ids = fds.map((d) => `${d.id}:${d.attempts}`).join(',');
      if (list.dataset.ids === ids) return; // nothing changed: keep focus and scroll
      list.dataset.ids = ids;
      const focusedId = document.activeElement && document.activeElement.dataset && document.activeElement.dataset.replay;
      rows.clear();
      if (!fds.length) {
        fill(list, h('p', { id: 'no-failed' }, filter.job || filter.kind ? 'No failed deliveries match.' : 'No failed deliveries.'));
        return;
      }
      const trs = fds.map((d) => {
        const button = h('button', { type: 'button', dataset: { replay: String(d.id) }, 'aria-label': `Replay delivery ${d.id} of ${d.job_id}` }, 'Replay');
        button.addEventListener('click', () => replay(d, button));
        const tr = h('tr', { dataset: { id: String(d.id), job: d.job_id, kind: d.kind } },
          h('th', { scope: 'row', 'data-label': 'Delivery' }, String(d.id)),
          h('td', { 'data-label': 'Job' }, d.job_id ? h('a', { href: `#/jobs/${encodeURIComponent(d.job_id)}`, class: 'mono nowrap', 'aria-label': `Job ${d.job_id}` }, shortId(d.job_id)) : '—'),
          h('td', { 'data-label': 'Kind' }, d.kind, h('div', { class: 'hint mono' }, d.event)),
          h('td', { class: 'num', 'data-label': 'Attempts' }, String(d.attempts)),
          h('td', { 'data-label': 'Last error', class: 'last-error' }, d.last_error),
          h('td', { 'data-label': 'Received' }, timeEl(d.received_at)),
          h('td', { 'data-label': 'Failed' }, timeEl(d.failed_at)),
          h('td', { 'data-label': 'Action' }, button));
        rows.set(d.id, tr);
        return tr;
      });
      fill(list, h('div', { class: 'table-wrap' }, h('table', { class: 'cards', id: 'failed-table' },
        h('caption', { class: 'visually-hidden' }, 'Failed deliveries'),
        h('thead', {}, h('tr', {}, ['Delivery', 'Job', 'Kind', 'Attempts', 'Last error', 'Received', 'Failed', 'Action']
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
    filter.kind = kindSel.value;
    filter.job = jobInput.value.trim();
    const qs = new URLSearchParams();
    if (filter.kind) qs.set('kind', filter.kind);
    if (filter.job) qs.set('job', filter.job);
    history.replaceState(null, '', `#/failed${qs.toString() ? `?${qs}` : ''}`);
    delete list.dataset.ids;
    load();
  });

  load();
  const stop = every(5000, load);
  return { el, title: 'Failed deliveries', cleanup: stop };
}
