// The read API, reached with the session cookie (same origin, so fetch sends it). Every URL is
// relative to the dashboard's own address, so serve behind a path prefix still works.

export class APIError extends Error {
  constructor(status, body) {
    super((body && body.error) || `HTTP ${status}`);
    this.status = status;
    this.details = (body && body.validation_errors) || [];
  }
}

export function apiURL(path) {
  return new URL(`..${path}`, document.baseURI).href;
}

/** Sends the browser to the sign-in page, back to the current route afterwards. */
export function signIn(reason) {
  const q = new URLSearchParams();
  if (reason) q.set('error', reason);
  if (location.hash.startsWith('#/')) q.set('next', location.hash);
  location.assign(`login?${q}`);
}

async function request(method, path, opts = {}) {
  const headers = { Accept: opts.accept || 'application/json' };
  if (opts.json !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(apiURL(path), {
    method,
    headers,
    body: opts.json !== undefined ? JSON.stringify(opts.json) : undefined,
    credentials: 'same-origin',
    cache: 'no-store',
    signal: opts.signal,
  });
  if (res.status === 401) {
    // Right after signing in, a 401 means the browser refused the cookie.
    const fresh = new URLSearchParams(location.search).get('from') === 'login';
    signIn(fresh ? 'cookie' : '');
    throw new APIError(401, { error: 'signed out' });
  }
  const text = await res.text();
  let body = null;
  if (text && (res.headers.get('Content-Type') || '').includes('json')) {
    try { body = JSON.parse(text); } catch { body = null; }
  }
  if (!res.ok) throw new APIError(res.status, body || { error: text.slice(0, 200) || res.statusText });
  return opts.text ? text : body;
}

export const get = (path, opts) => request('GET', path, opts);
export const getText = (path, opts) => request('GET', path, { ...opts, text: true, accept: '*/*' });
export const post = (path, opts) => request('POST', path, opts);
/** PUT with body as JSON. Same origin, so the server's cross-origin check lets the cookie through. */
export const put = (path, body, opts) => request('PUT', path, { ...opts, json: body });

/** Prometheus text exposition → [{name, labels, value}]. /metrics takes the session cookie, as the read API does. */
export async function metrics() {
  const res = await fetch(apiURL('/metrics'), { cache: 'no-store' });
  if (!res.ok) throw new APIError(res.status, { error: `metrics: HTTP ${res.status}` });
  return parseMetrics(await res.text());
}

export function parseMetrics(text) {
  const out = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels = {};
    const re = /(\w+)="((?:[^"\\]|\\.)*)"/g;
    let l;
    while ((l = re.exec(m[2] || ''))) labels[l[1]] = l[2].replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}
