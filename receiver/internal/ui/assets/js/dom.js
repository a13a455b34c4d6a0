// Small DOM helpers: every text goes through textContent, never innerHTML.

/** h('a', {href: '#/x', class: 'y'}, 'text', child…) builds an element. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'text') el.textContent = v;
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

/** Replaces the children of el. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

let announceTimer;
/** Says msg to screen readers through the page's polite live region. */
export function announce(msg) {
  const region = document.getElementById('announcer');
  if (!region) return;
  clearTimeout(announceTimer);
  region.textContent = '';
  // A new text node in a fresh task is announced even when it repeats the last one.
  announceTimer = setTimeout(() => { region.textContent = msg; }, 50);
}

/**
 * s as a link target when it is an absolute http or https URL, else null. Job fields come from
 * the service and the job's submitter: any other scheme (javascript:, data:, file:) must never
 * become a link, whatever the page's Content-Security-Policy would stop. The parsed form is
 * returned, so the link goes exactly where the check looked.
 */
export function webURL(s) {
  if (typeof s !== 'string' || !s) return null;
  let u;
  try { u = new URL(s); } catch { return null; }
  return u.protocol === 'http:' || u.protocol === 'https:' ? u.href : null;
}

export function fmtTime(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return d.toLocaleString(undefined, { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

export function timeEl(iso) {
  return iso ? h('time', { datetime: iso }, fmtTime(iso)) : '—';
}

/** 83.5 → "1:23.5" */
export function fmtClock(seconds, digits = 1) {
  if (seconds === undefined || seconds === null || Number.isNaN(seconds)) return '—';
  const neg = seconds < 0;
  const s = Math.abs(seconds);
  const m = Math.floor(s / 60);
  const rest = (s - m * 60).toFixed(digits).padStart(digits ? 3 + digits : 2, '0');
  return `${neg ? '-' : ''}${m}:${rest}`;
}

export function fmtSeconds(s) {
  if (s === undefined || s === null) return '—';
  return `${Number(s).toFixed(s < 10 ? 2 : 1)} s`;
}

export function fmtBytes(n) {
  if (n === undefined || n === null) return '—';
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

export function shortId(id) {
  return id && id.length > 13 ? `${id.slice(0, 8)}…` : id || '';
}

export function statusBadge(status) {
  const label = { queued: 'Queued', processing: 'Processing', done: 'Done', error: 'Error' }[status] || status || 'unknown';
  return h('span', { class: `badge ${status || ''}`, dataset: { status: status || '' } }, label);
}

export function json(v) {
  return JSON.stringify(v, null, 2);
}

/** Speaker n (0-based) as people count them, as the WebVTT voice tags do. */
export function speakerName(n) {
  return n === undefined || n === null ? '' : `Speaker ${n + 1}`;
}

/** A section with a heading; returns [section, body]. */
export function section(title, id) {
  const hid = `h-${id}`;
  const body = h('div');
  const s = h('section', { 'aria-labelledby': hid, id }, h('h2', { id: hid }, title), body);
  return [s, body];
}

/** Runs fn every ms while the page is visible, at once when it becomes visible again. */
export function every(ms, fn) {
  let timer;
  let stopped = false;
  const tick = async () => {
    if (stopped) return;
    if (!document.hidden) {
      try { await fn(); } catch (e) { console.error(e); }
    }
    if (!stopped) timer = setTimeout(tick, ms);
  };
  const onVisible = () => { if (!document.hidden) { clearTimeout(timer); tick(); } };
  document.addEventListener('visibilitychange', onVisible);
  timer = setTimeout(tick, ms);
  return () => { stopped = true; clearTimeout(timer); document.removeEventListener('visibilitychange', onVisible); };
}

const ENTITIES = { '&lt;': '<', '&gt;': '>', '&amp;': '&', '&#39;': "'", '&#34;': '"', '&quot;': '"' };

/**
 * A search hit's highlight (the read API's: its text escaped for HTML, the matched words in
 * <mark>…</mark>) as nodes, without parsing HTML: the text between the marks is unescaped and
 * added as text, so nothing the transcript says can become markup.
 */
export function marked(highlight) {
  const nodes = [];
  const unescape = (s) => s.replace(/&(lt|gt|amp|#39|#34|quot);/g, (e) => ENTITIES[e]);
  String(highlight || '').split(/(<mark>[\s\S]*?<\/mark>)/).forEach((part) => {
    if (!part) return;
    const m = /^<mark>([\s\S]*)<\/mark>$/.exec(part);
    nodes.push(m ? h('mark', {}, unescape(m[1])) : document.createTextNode(unescape(part)));
  });
  return nodes;
}
