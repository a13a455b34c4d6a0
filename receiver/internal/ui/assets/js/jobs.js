// Jobs: the list with the read API's filters and paging, updated every 2 s; a job's page.
import { APIError, apiURL, get, put } from './api.js';
import {
  announce, every, fill, fmtBytes, fmtClock, fmtSeconds, h, json, section, shortId,
  speakerName, statusBadge, timeEl, webURL,
} from './dom.js';

const POLL_MS = 2000;
const STATUSES = ['queued', 'processing', 'done', 'error'];

// ---------------------------------------------------------------- list

/** datetime-local value (local time) → ISO 8601 in UTC; '' stays ''. */
function localToISO(v) {
  if (!v) return '';
  const d = new Date(v);
  return Number.isNaN(d.getTime()) ? v : d.toISOString();
}

/** ISO 8601 → datetime-local value in local time. */
function isoToLocal(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  const pad = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

function stateFrom(q) {
  return {
    status: (q.get('status') || '').split(',').filter((s) => STATUSES.includes(s)),
    kind: q.get('kind') || '',
    date: q.get('date') || '',
    after_date: q.get('after_date') || '',
    before_date: q.get('before_date') || '',
    custom_metadata: q.get('custom_metadata') || '',
    limit: q.get('limit') || '20',
    offset: Math.max(0, Number(q.get('offset')) || 0),
  };
}

function queryOf(state) {
  const q = new URLSearchParams();
  if (state.status.length) q.set('status', state.status.join(','));
  for (const k of ['kind', 'date', 'after_date', 'before_date', 'custom_metadata']) if (state[k]) q.set(k, state[k]);
  if (state.limit !== '20') q.set('limit', state.limit);
  if (state.offset) q.set('offset', String(state.offset));
  return q;
}

function compact(v) {
  if (v === undefined || v === null) return '';
  const s = JSON.stringify(v);
  return s.length > 60 ? `${s.slice(0, 59)}…` : s;
}

export function jobList(q) {
  const state = stateFrom(q);
  const ids = (name) => `jobs-${name}`;

  const statusBoxes = STATUSES.map((s) => h('label', { class: 'check' },
    h('input', { type: 'checkbox', name: 'status', value: s, checked: state.status.includes(s) }), ` ${s}`));
  const kind = h('select', { id: ids('kind'), name: 'kind' },
    h('option', { value: '' }, 'Any kind'),
    h('option', { value: 'pre-recorded', selected: state.kind === 'pre-recorded' }, 'pre-recorded'),
    h('option', { value: 'live', selected: state.kind === 'live' }, 'live'));
  const date = h('input', { id: ids('date'), name: 'date', type: 'date', value: state.date });
  const after = h('input', { id: ids('after'), name: 'after_date', type: 'datetime-local', value: isoToLocal(state.after_date) });
  const before = h('input', { id: ids('before'), name: 'before_date', type: 'datetime-local', value: isoToLocal(state.before_date) });
  const meta = h('input', {
    id: ids('meta'), name: 'custom_metadata', type: 'text', value: state.custom_metadata, spellcheck: 'false',
    placeholder: '{"team": "captions"}', 'aria-describedby': ids('meta-hint'),
  });
  const limit = h('select', { id: ids('limit'), name: 'limit' },
    ['10', '20', '50', '100'].map((n) => h('option', { value: n, selected: state.limit === n }, n)));

  const form = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter jobs' },
    h('fieldset', { class: 'wide' }, h('legend', {}, 'Status'), statusBoxes),
    h('div', { class: 'field' }, h('label', { for: ids('kind') }, 'Kind'), kind),
    h('div', { class: 'field' }, h('label', { for: ids('date') }, 'Created on (date)'), date),
    h('div', { class: 'field' }, h('label', { for: ids('limit') }, 'Jobs per page'), limit),
    h('div', { class: 'field' }, h('label', { for: ids('after') }, 'Created after'), after),
    h('div', { class: 'field' }, h('label', { for: ids('before') }, 'Created before'), before),
    h('div', { class: 'field wide' }, h('label', { for: ids('meta') }, 'Custom metadata contains (JSON object)'), meta,
      h('p', { id: ids('meta-hint'), class: 'hint' }, 'Jobs whose custom_metadata includes these members, e.g. {"team": "captions"}.')),
    h('div', { class: 'actions wide' },
      h('button', { type: 'submit' }, 'Apply filters'),
      h('button', { type: 'button', class: 'quiet', onclick: () => { location.hash = '#/jobs'; } }, 'Clear filters')));

  const problem = h('div', { role: 'alert' });
  const updated = h('span', { class: 'muted' }, '');
  const pause = h('button', { type: 'button', class: 'quiet', 'aria-pressed': 'false' }, 'Pause live updates');
  const tbody = h('tbody');
  const table = h('table', { class: 'cards', id: 'jobs-table' },
    h('caption', { class: 'visually-hidden' }, 'Jobs, newest first'),
    h('thead', {}, h('tr', {},
      ['Job', 'Kind', 'Status', 'Created', 'Completed', 'Audio', 'Custom metadata'].map((t) => h('th', { scope: 'col', class: t === 'Audio' ? 'num' : '' }, t)))),
    tbody);
  const empty = h('p', { class: 'muted', hidden: true }, 'No jobs match these filters.');
  const range = h('span', { class: 'muted' });
  const prev = h('button', { type: 'button', class: 'quiet' }, '← Newer');
  const next = h('button', { type: 'button', class: 'quiet' }, 'Older →');
  const active = state.status.length + ['kind', 'date', 'after_date', 'before_date', 'custom_metadata'].filter((k) => state[k]).length;
  const box = h('details', { class: 'filter-box', open: active > 0 || window.matchMedia('(min-width: 700px)').matches },
    h('summary', {}, active ? `Filters (${active} active)` : 'Filters'), form);
  const el = h('div', {},
    h('h1', {}, 'Jobs'),
    box,
    h('div', { class: 'toolbar' }, updated, pause),
    problem,
    h('div', { class: 'table-wrap' }, table),
    empty,
    h('nav', { class: 'pager', 'aria-label': 'Pages of jobs' }, prev, range, next));

  const rows = new Map(); // id → {tr, status, cells}
  let paused = false;
  let hasNext = false;

  function rowFor(job) {
    const cells = {
      status: h('td', { 'data-label': 'Status' }, statusBadge(job.status)),
      completed: h('td', { 'data-label': 'Completed' }, timeEl(job.completed_at)),
      audio: h('td', { 'data-label': 'Audio', class: 'num' }, job.file ? fmtSeconds(job.file.audio_duration) : '—'),
    };
    const tr = h('tr', { dataset: { id: job.id } },
      h('td', { 'data-label': 'Job' }, h('a', { href: `#/jobs/${encodeURIComponent(job.id)}`, class: 'id' }, job.id)),
      h('td', { 'data-label': 'Kind' }, job.kind),
      cells.status,
      h('td', { 'data-label': 'Created' }, timeEl(job.created_at)),
      cells.completed,
      cells.audio,
      h('td', { 'data-label': 'Custom metadata' }, h('code', {}, compact(job.custom_metadata))));
    return { tr, status: job.status, cells, completed: job.completed_at };
  }

  function render(page) {
    const items = page.items || [];
    const order = items.map((j) => j.id);
    const same = order.length === rows.size && order.every((id, i) => tbody.children[i] && tbody.children[i].dataset.id === id);
    const changes = [];
    for (const job of items) {
      const row = rows.get(job.id);
      if (!row) continue;
      if (row.status !== job.status) {
        fill(row.cells.status, statusBadge(job.status));
        changes.push(`Job ${shortId(job.id)} is now ${job.status}.`);
        row.status = job.status;
      }
      if (row.completed !== job.completed_at) {
        fill(row.cells.completed, timeEl(job.completed_at));
        fill(row.cells.audio, job.file ? fmtSeconds(job.file.audio_duration) : '—');
        row.completed = job.completed_at;
      }
    }
    if (!same) {
      const focused = document.activeElement && document.activeElement.closest && document.activeElement.closest('tr[data-id]');
      const focusId = focused && tbody.contains(focused) ? focused.dataset.id : null;
      const keep = new Set(order);
      for (const [id] of rows) if (!keep.has(id)) rows.delete(id);
      const trs = items.map((job) => {
        let row = rows.get(job.id);
        if (!row) {
          row = rowFor(job);
          rows.set(job.id, row);
          if (tbody.children.length) changes.push(`New job ${shortId(job.id)}, ${job.status}.`);
        }
        return row.tr;
      });
      tbody.replaceChildren(...trs);
      if (focusId && rows.get(focusId)) rows.get(focusId).tr.querySelector('a').focus();
    }
    empty.hidden = items.length > 0;
    table.hidden = items.length === 0;
    hasNext = Boolean(page.next);
    prev.disabled = state.offset === 0;
    next.disabled = !hasNext;
    range.textContent = items.length ? `Jobs ${state.offset + 1}–${state.offset + items.length}` : '';
    if (changes.length) announce(changes.slice(0, 3).join(' '));
  }

  async function refresh() {
    if (paused) return;
    const qs = queryOf(state);
    qs.set('limit', state.limit);
    try {
      const page = await get(`/v1/jobs?${qs}`);
      fill(problem);
      render(page);
      updated.textContent = `Updated ${new Date().toLocaleTimeString()} · refreshes every 2 s`;
    } catch (e) {
      if (e instanceof APIError && e.status === 401) return;
      fill(problem, h('div', { class: 'notice error' }, e.message,
        e.details && e.details.length ? h('ul', {}, e.details.map((d) => h('li', {}, d))) : null));
    }
  }

  function go() {
    history.replaceState(null, '', `#/jobs${queryOf(state).toString() ? `?${queryOf(state)}` : ''}`);
    rows.clear();
    tbody.replaceChildren();
    refresh();
  }

  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    state.status = [...form.querySelectorAll('input[name=status]:checked')].map((i) => i.value);
    state.kind = kind.value;
    state.date = date.value;
    state.after_date = localToISO(after.value);
    state.before_date = localToISO(before.value);
    state.custom_metadata = meta.value.trim();
    state.limit = limit.value;
    state.offset = 0;
    go();
  });
  prev.addEventListener('click', () => { state.offset = Math.max(0, state.offset - Number(state.limit)); go(); });
  next.addEventListener('click', () => { if (hasNext) { state.offset += Number(state.limit); go(); } });
  pause.addEventListener('click', () => {
    paused = !paused;
    pause.setAttribute('aria-pressed', String(paused));
    pause.textContent = paused ? 'Resume live updates' : 'Pause live updates';
    if (!paused) refresh();
  });

  refresh();
  const stop = every(POLL_MS, refresh);
  return { el, title: 'Jobs', cleanup: stop };
}

// ---------------------------------------------------------------- one job

/** The request parameters as stored, with callback tokens hidden: they authenticate callbacks. */
export function redactCallbacks(v) {
  return JSON.parse(JSON.stringify(v ?? null), (k, val) => (typeof val === 'string'
    ? val.replace(/(\/v1\/callbacks\/)[^/?#\s"]+/g, '$1[token hidden]')
    : val));
}

const ADDON_LABELS = {
  summarization: 'Summarization', sentiment_analysis: 'Sentiment analysis', sentences: 'Sentences',
  diarization: 'Diarization', translation: 'Translation', moderation: 'Moderation',
  named_entity_recognition: 'Named entity recognition', name_consistency: 'Name consistency',
  speaker_reidentification: 'Speaker re-identification', structured_data_extraction: 'Structured data extraction',
  audio_to_llm: 'Audio to LLM', display_mode: 'Display mode', chapterization: 'Chapterization',
};

function addonDetails(a) {
  if (!a.success) {
    const e = a.error || {};
    return h('div', {}, h('strong', {}, `${e.status_code ?? ''} ${e.exception ?? 'error'}`.trim()), ': ', e.message || 'no message');
  }
  const r = a.results;
  if (typeof r === 'string') return h('p', { class: 'addon-text' }, r.length > 600 ? `${r.slice(0, 600)}…` : r);
  if (Array.isArray(r)) {
    const texts = r.map((x) => (typeof x === 'string' ? x : x && x.text)).filter(Boolean);
    return h('div', {}, `${r.length} item${r.length === 1 ? '' : 's'}`,
      texts.length ? h('ul', {}, texts.slice(0, 5).map((t) => h('li', {}, t))) : null,
      h('details', {}, h('summary', {}, 'Results as JSON'), h('pre', {}, json(r))));
  }
  if (r === null || r === undefined) return h('span', { class: 'muted' }, 'no results');
  return h('details', {}, h('summary', {}, 'Results as JSON'), h('pre', {}, json(r)));
}

function addonsTable(result) {
  const rows = [];
  for (const [name, a] of Object.entries(result || {})) {
    if (!a || typeof a !== 'object' || Array.isArray(a) || !('success' in a)) continue;
    const failed = !a.success;
    const outcome = failed ? h('span', { class: 'badge bad' }, 'Failed')
      : h('span', { class: 'badge ok' }, a.is_empty ? 'Succeeded (empty)' : 'Succeeded');
    rows.push(h('tr', { class: failed ? 'failed' : '', dataset: { addon: name } },
      h('th', { scope: 'row', 'data-label': 'Add-on' }, ADDON_LABELS[name] || name, h('div', { class: 'muted mono' }, name)),
      h('td', { 'data-label': 'Outcome' }, outcome),
      h('td', { 'data-label': 'Details' }, addonDetails(a))));
  }
  if (!rows.length) return h('p', { class: 'muted' }, 'No add-ons were requested, or the job has no result yet.');
  return h('div', { class: 'table-wrap' }, h('table', { class: 'cards', id: 'addons' },
    h('caption', { class: 'visually-hidden' }, 'Add-on results'),
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Add-on'), h('th', { scope: 'col' }, 'Outcome'), h('th', { scope: 'col' }, 'Details'))),
    h('tbody', {}, rows)));
}

/** The name shown for speaker n: its name in names (the read API's object, keys in decimal), else "Speaker n+1". */
function nameOf(names, n) {
  return (names && names[String(n)]) || speakerName(n);
}

function transcriptList(tr, names) {
  const utts = (tr && tr.utterances) || [];
  if (!utts.length) return h('p', { class: 'muted' }, 'No utterances.');
  return h('ol', { class: 'utterances', id: 'transcript' }, utts.map((u) => h('li', { dataset: { start: String(u.start), end: String(u.end) } },
    h('span', { class: 'when' }, `${fmtClock(u.start)} – ${fmtClock(u.end)}`, u.channel ? ` · ch ${u.channel}` : ''),
    h('span', {},
      u.speaker !== undefined && u.speaker !== null
        ? h('span', { class: `speaker spk-${u.speaker % 4}`, dataset: { speaker: String(u.speaker) } }, `${nameOf(names, u.speaker)}:`) : null,
      h('span', { lang: u.language || undefined }, u.text)))));
}

/** The distinct speaker numbers of a transcription's utterances, ascending: [[n, utterances]]. */
function speakersOf(tr) {
  const counts = new Map();
  for (const u of (tr && tr.utterances) || []) {
    if (u.speaker === undefined || u.speaker === null) continue;
    counts.set(u.speaker, (counts.get(u.speaker) || 0) + 1);
  }
  return [...counts.entries()].sort((a, b) => a[0] - b[0]);
}

// validation_errors of PUT /v1/jobs/:id/speakers name the speaker: `speaker "0" must not be empty`.
const SPEAKER_ERROR = /^speaker "(\d+)" (.+)$/;

/**
 * The form that names a job's speakers (GET and PUT /v1/jobs/:id/speakers): a field per speaker
 * of the transcript with its current name, the subtitles' revision, the rule each refused name
 * breaks next to its field. onSaved runs after a save, to show the names in the transcript.
 */
function speakersForm(job, speakers, onSaved) {
  const enc = encodeURIComponent(job.id);
  const hasSubtitles = ((job.local && job.local.artifacts) || []).some((a) => a.name.startsWith('subtitles'));
  const revision = h('dd', { id: 'speakers-revision' }, '…');
  const status = h('div', { role: 'status', id: 'speakers-status' });
  const problem = h('div', { role: 'alert', id: 'speakers-problem' });
  const fields = new Map(); // speaker → {input, error}
  const rows = speakers.map(([n, count]) => {
    const id = `spk-name-${n}`;
    const input = h('input', {
      id, name: String(n), type: 'text', autocomplete: 'off', spellcheck: 'false',
      'aria-describedby': `spk-hint-${n} spk-err-${n}`,
    });
    const error = h('p', { id: `spk-err-${n}`, class: 'field-error', hidden: true });
    fields.set(n, { input, error });
    return h('div', { class: 'field', dataset: { speaker: String(n) } },
      h('label', { for: id }, speakerName(n)),
      h('p', { id: `spk-hint-${n}`, class: 'hint' }, `Speaker ${n} in the API · ${count} utterance${count === 1 ? '' : 's'}`),
      input,
      error);
  });
  const save = h('button', { type: 'submit' }, 'Save names');
  const form = h('form', { class: 'filters speakers', id: 'speakers-form', 'aria-labelledby': 'h-speakers-section', novalidate: true },
    rows, h('div', { class: 'actions wide' }, save));

  const showRevision = (r) => {
    revision.textContent = r > 0 ? String(r) : (hasSubtitles ? '1 (as first rendered)' : 'none: the job has no subtitles yet');
  };
  const clearErrors = () => {
    for (const { input, error } of fields.values()) {
      input.removeAttribute('aria-invalid');
      error.hidden = true;
      error.textContent = '';
    }
    fill(problem);
  };
  const load = async () => {
    try {
      const v = await get(`/v1/jobs/${enc}/speakers`);
      for (const [n, { input }] of fields) input.value = (v.names && v.names[String(n)]) || '';
      showRevision(v.revision);
    } catch (e) {
      if (e instanceof APIError && e.status === 401) return;
      fill(problem, h('p', { class: 'notice error' }, `The speakers' names could not be read: ${e.message}`));
    }
  };

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors();
    fill(status);
    // A blank field leaves its speaker unnamed: PUT replaces every name, so it is left out.
    const names = {};
    for (const [n, { input }] of fields) if (input.value.trim()) names[String(n)] = input.value;
    save.disabled = true;
    save.textContent = 'Saving…';
    try {
      const r = await put(`/v1/jobs/${enc}/speakers`, names);
      let msg;
      if (!r.changed) msg = `No change: the speakers already have these names. Subtitles revision ${r.revision || 1}.`;
      else if (r.event_id) {
        // The kit's own renderings; the service's files (service.*) go along in the event unchanged.
        const files = (r.files || []).filter((f) => f.startsWith('subtitles'));
        msg = `Names saved. The subtitles were rendered again as revision ${r.revision}${files.length ? ` (${files.join(', ')})` : ''}, and subtitles.ready was queued for the sinks.`;
      }
      else msg = 'Names saved. The job has no subtitles to render again.';
      fill(status, h('p', { class: 'notice ok' }, msg));
      announce(msg);
      await load();
      onSaved();
    } catch (e) {
      if (e instanceof APIError && e.status === 401) return;
      const other = [];
      let first = null;
      for (const d of e.details || []) {
        const m = SPEAKER_ERROR.exec(d);
        const f = m && fields.get(Number(m[1]));
        if (!f) { other.push(d); continue; }
        f.input.setAttribute('aria-invalid', 'true');
        f.error.textContent = `⚠ Name ${m[2]}.`;
        f.error.hidden = false;
        first ||= f.input;
      }
      const refused = (e.details || []).length - other.length;
      fill(problem, h('div', { class: 'notice error' },
        e.status === 400 && refused ? `Not saved: ${refused} name${refused === 1 ? ' breaks' : 's break'} a rule.` : `Saving the names failed: ${e.message}`,
        other.length ? h('ul', {}, other.map((d) => h('li', {}, d))) : null));
      if (first) first.focus();
    } finally {
      save.disabled = false;
      save.textContent = 'Save names';
    }
  });

  load();
  return h('div', {},
    h('p', { class: 'hint' }, 'Names for the speakers that diarization numbered. Saving shows them in the transcript, renders the job\'s subtitles again with them (WebVTT voices, a label at each turn in the other formats) as a new revision, and sends subtitles.ready to the sinks again. A blank field leaves its speaker unnamed ("Speaker N"), or named by the job\'s custom_metadata.'),
    h('dl', { class: 'facts' }, h('dt', {}, 'Subtitles revision'), revision),
    form, status, problem);
}

function artifactsTable(job) {
  const arts = (job.local && job.local.artifacts) || [];
  if (!arts.length) return h('p', { class: 'muted' }, 'No artifacts: subtitles are rendered when a job succeeds and subtitles are configured.');
  const service = (job.result && job.result.transcription && job.result.transcription.subtitles) || [];
  const lang = job.result && job.result.transcription && (job.result.transcription.languages || [])[0];
  const blobs = [];
  const rows = arts.map((a) => {
    let link = h('span', { class: 'muted' }, 'no download route');
    if (a.name.startsWith('subtitles')) {
      const q = a.language ? `?lang=${encodeURIComponent(a.language)}` : '';
      link = h('a', { href: apiURL(`/v1/jobs/${encodeURIComponent(job.id)}/subtitles.${encodeURIComponent(a.format)}${q}`), download: a.name }, `Download ${a.name}`);
    } else if (a.name.startsWith('service.')) {
      // The service's own subtitles are in the record itself.
      const s = service.find((x) => x.format === a.format);
      if (s && (!a.language || a.language === lang)) {
        const url = URL.createObjectURL(new Blob([s.subtitles], { type: 'text/plain' }));
        blobs.push(url);
        link = h('a', { href: url, download: a.name }, `Download ${a.name}`);
      }
    }
    // a.path stays out of the page: where the server keeps its files is none of the browser's business.
    return h('tr', {},
      h('td', { 'data-label': 'Name' }, h('code', {}, a.name)),
      h('td', { 'data-label': 'Format' }, a.format),
      h('td', { 'data-label': 'Language' }, a.language || '—'),
      h('td', { 'data-label': 'Size', class: 'num' }, fmtBytes(a.size)),
      h('td', { 'data-label': 'Download' }, link));
  });
  const el = h('div', { class: 'table-wrap' }, h('table', { class: 'cards', id: 'artifacts' },
    h('caption', { class: 'visually-hidden' }, 'Artifacts'),
    h('thead', {}, h('tr', {}, ['Name', 'Format', 'Language', 'Size', 'Download'].map((t) => h('th', { scope: 'col', class: t === 'Size' ? 'num' : '' }, t)))),
    h('tbody', {}, rows)));
  el.revoke = () => blobs.forEach((u) => URL.revokeObjectURL(u));
  return el;
}

/** The job's audio source: a link only for http and https, other schemes as plain text. */
function audioSource(source) {
  if (!source) return '—';
  const href = webURL(source);
  return href ? h('a', { href, rel: 'noreferrer', class: 'id', id: 'audio-source' }, source)
    : h('span', { class: 'id', id: 'audio-source' }, source);
}

/**
 * Marks the utterance of list playing at t seconds (or the first after it) and scrolls to it:
 * a search hit's link opens the job page so (#/jobs/ID?t=12.5).
 */
function markAt(list, t, scroll) {
  const items = [...list.querySelectorAll('li[data-start]')];
  const at = items.find((li) => Number(li.dataset.start) <= t && t < Number(li.dataset.end))
    || items.find((li) => Number(li.dataset.start) >= t) || items[items.length - 1];
  if (!at) return false;
  at.classList.add('at');
  at.setAttribute('aria-current', 'true');
  if (scroll) at.scrollIntoView({ block: 'center' });
  return true;
}

export function jobPage(id, q = new URLSearchParams()) {
  const at = q.has('t') ? Number(q.get('t')) : NaN;
  let marked = false;
  const enc = encodeURIComponent(id);
  const status = h('span');
  const links = h('div', { class: 'links' });
  const problem = h('div', { role: 'alert' });
  const [overview, overviewBody] = section('Overview', 'overview');
  const [transcript, transcriptBody] = section('Transcript', 'transcript-section');
  const [speakersSec, speakersBody] = section('Speakers', 'speakers-section');
  const [addons, addonsBody] = section('Add-ons', 'addons-section');
  const [artifacts, artifactsBody] = section('Artifacts', 'artifacts-section');
  const [deliveries, deliveriesBody] = section('Deliveries', 'deliveries-section');
  const [params, paramsBody] = section('Request parameters', 'params-section');
  const [meta, metaBody] = section('Custom metadata', 'metadata-section');
  const el = h('div', {},
    h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' }, h('ol', {}, h('li', {}, h('a', { href: '#/jobs' }, 'Jobs')), h('li', { 'aria-current': 'page' }, shortId(id)))),
    h('h1', {}, 'Job ', h('span', { class: 'id' }, id)),
    h('p', {}, 'Status: ', status, ' ', h('span', { class: 'muted', id: 'job-refresh' }, '')),
    problem, links, overview, transcript, speakersSec, addons, artifacts, deliveries, params, meta);

  let last = '';
  let stop = () => {};
  let artifactsEl = null;
  let speakersKey = null; // the speakers the form was built for

  function render(job) {
    fill(status, statusBadge(job.status));
    const local = job.local || {};
    fill(links,
      job.kind === 'pre-recorded' && (local.artifacts || []).some((a) => a.name.startsWith('subtitles') && a.format === 'vtt')
        ? h('a', { class: 'button', href: `#/jobs/${enc}/subtitles` }, 'Subtitle preview') : null,
      job.kind === 'live' ? h('a', { class: 'button', href: `#/live/${enc}` }, 'Follow the live session') : null,
      h('a', { class: 'button quiet', href: `#/sinks?job=${enc}` }, 'Dead letters of this job'),
      h('a', { class: 'button quiet', href: apiURL(`/v1/jobs/${enc}`), target: '_blank', rel: 'noopener' }, 'Raw JSON'));
    const file = job.file || {};
    const md = (job.result && job.result.metadata) || {};
    const facts = [
      ['Kind', job.kind],
      ['Created', timeEl(job.created_at)],
      ['Completed', timeEl(job.completed_at)],
      ['Request id', job.request_id || '—'],
      ['Audio', file.filename ? `${file.filename}, ${fmtSeconds(file.audio_duration)}, ${file.number_of_channels} channel(s)` : '—'],
      ['Audio source', audioSource(file.source)],
      ['Languages', ((job.result && job.result.transcription && job.result.transcription.languages) || []).join(', ') || '—'],
      ['Transcription time', md.transcription_time !== undefined ? fmtSeconds(md.transcription_time) : '—'],
    ];
    if (job.error_code || local.error_message) facts.push(['Error', `${job.error_code ?? ''} ${local.error_message || ''}`.trim()]);
    if (local.resolution) facts.push(['Resolution', local.resolution]);
    fill(overviewBody, h('dl', { class: 'facts' }, facts.map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)])));
    const tr = job.result && job.result.transcription;
    fill(transcriptBody, job.result ? transcriptList(tr, local.speakers) : h('p', { class: 'muted' }, job.status === 'error' ? 'The job failed: no transcript.' : 'No result yet.'));
    // The form is built once per set of speakers: a re-render after its save keeps its messages.
    const speakers = speakersOf(tr);
    const key = `${job.result ? 'r' : ''}:${speakers.map(([n]) => n).join(',')}:${(local.artifacts || []).length > 0}`;
    if (key !== speakersKey) {
      speakersKey = key;
      fill(speakersBody, speakers.length ? speakersForm(job, speakers, () => { last = ''; refresh(); })
        : h('p', { class: 'muted' }, job.result ? 'The transcript has no speaker numbers: names apply to diarized jobs.' : 'No result yet.'));
    }
    if (!Number.isNaN(at)) {
      // Marked again on every render (the list is rebuilt), scrolled to once.
      const list = transcriptBody.querySelector('#transcript');
      if (list && markAt(list, at, !marked)) marked = true;
    }
    fill(addonsBody, addonsTable(job.result));
    if (artifactsEl && artifactsEl.revoke) artifactsEl.revoke();
    artifactsEl = artifactsTable(job);
    fill(artifactsBody, artifactsEl);
    fill(paramsBody, h('pre', { id: 'request-params' }, json(redactCallbacks(job.request_params))),
      h('p', { class: 'hint' }, 'Callback tokens are hidden: they authenticate deliveries.'));
    fill(metaBody, job.custom_metadata ? h('pre', {}, json(job.custom_metadata)) : h('p', { class: 'muted' }, 'None.'));
    fill(deliveriesBody,
      h('dl', { class: 'facts' },
        h('dt', {}, 'Callbacks applied'), h('dd', { id: 'local-deliveries' }, String(local.deliveries ?? 0)),
        h('dt', {}, 'Known through'), h('dd', {}, local.source || '—'),
        h('dt', {}, 'First received'), h('dd', {}, timeEl(local.received_at)),
        h('dt', {}, 'Last updated'), h('dd', {}, timeEl(local.updated_at))),
      h('h3', {}, 'Per sink'),
      h('div', { id: 'sink-deliveries' }, h('p', { class: 'muted' }, 'Loading dead letters…')),
      h('p', { class: 'hint' }, 'What fails for good shows as dead letters; each sink\'s deliveries are on the Sinks page.'));
    loadDeadLetters(job.id);
  }

  async function loadDeadLetters(jobId) {
    const target = el.querySelector('#sink-deliveries');
    if (!target) return;
    try {
      const dls = (await get('/v1/deadletters?limit=1000')).filter((d) => d.job_id === jobId);
      if (!target.isConnected) return;
      if (!dls.length) { fill(target, h('p', {}, 'No dead letters: every sink took this job\'s events, or is still retrying.')); return; }
      const bySink = {};
      for (const d of dls) bySink[d.sink] = (bySink[d.sink] || 0) + 1;
      fill(target, h('ul', {}, Object.entries(bySink).map(([s, n]) => h('li', {},
        h('strong', {}, s), `: ${n} dead letter${n === 1 ? '' : 's'} · `,
        h('a', { href: `#/sinks?job=${encodeURIComponent(jobId)}&sink=${encodeURIComponent(s)}` }, `review and replay`)))));
    } catch (e) {
      if (target.isConnected) fill(target, h('p', { class: 'notice error' }, `Dead letters: ${e.message}`));
    }
  }

  async function refresh() {
    try {
      const job = await get(`/v1/jobs/${enc}`);
      fill(problem);
      const key = JSON.stringify(job);
      if (key !== last) {
        const was = last ? JSON.parse(last).status : null;
        last = key;
        render(job);
        if (was && was !== job.status) announce(`The job is now ${job.status}.`);
      }
      el.querySelector('#job-refresh').textContent = job.status === 'done' || job.status === 'error'
        ? '' : `· checking every 2 s (${new Date().toLocaleTimeString()})`;
      if (job.status === 'done' || job.status === 'error') stop();
    } catch (e) {
      if (e instanceof APIError && e.status === 401) return;
      fill(problem, h('p', { class: 'notice error' }, e.status === 404 ? `No job ${id} in the local store (yet).` : e.message));
    }
  }
  refresh();
  stop = every(POLL_MS, refresh);
  // Dead letters keep coming after the job is final (retries take their time).
  const stopDead = every(5000, () => (last ? loadDeadLetters(id) : null));
  return {
    el, title: `Job ${shortId(id)}`,
    cleanup: () => { stop(); stopDead(); if (artifactsEl && artifactsEl.revoke) artifactsEl.revoke(); },
  };
}
