// Contract test of the sandbox: the service's official JavaScript SDK (@gladiaio/sdk, pinned in
// package-lock.json) against `scribehook sandbox`, with serve receiving the sandbox's callbacks,
// all on loopback (./launch). Plain Node, no test runner; every check asserts values.
//
//   node e2e/sdk/test.mjs      (scripts/sdk-test.sh installs what it needs and runs this)
//
// Environment: SDK_LAUNCHER (a built ./launch; default e2e/sdk/.bin/launch, else
// `go run ./e2e/sdk/launch`).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { GladiaClient } from '@gladiaio/sdk';

import { startLauncher } from '../launcher.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');
const samplePath = path.join(root, 'cmd', 'scribehook', 'demodata', 'sample.wav');
const sample = fs.readFileSync(samplePath);
const sidecar = JSON.parse(fs.readFileSync(samplePath + '.json', 'utf8'));
const fmt = parseWAV(sample);
// Jobs of this run carry it in their metadata, so that lists see only them.
const RUN = `run-${process.pid}-${Date.now()}`;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const REQUEST_ID = /^G-[0-9a-f]{8}$/;

// ------------------------------------------------------------------ helpers

/** The format and samples of a PCM WAV file, from its chunks. */
function parseWAV(buf) {
  assert.equal(buf.toString('ascii', 0, 4), 'RIFF');
  assert.equal(buf.toString('ascii', 8, 12), 'WAVE');
  let off = 12;
  let f;
  while (off + 8 <= buf.length) {
    const id = buf.toString('ascii', off, off + 4);
    const size = buf.readUInt32LE(off + 4);
    if (id === 'fmt ') {
      f = { channels: buf.readUInt16LE(off + 10), sampleRate: buf.readUInt32LE(off + 12), bitDepth: buf.readUInt16LE(off + 22) };
    } else if (id === 'data') {
      const pcm = buf.subarray(off + 8, off + 8 + size);
      return { ...f, pcm, duration: pcm.length / (f.sampleRate * f.channels * (f.bitDepth / 8)) };
    }
    off += 8 + size + (size % 2);
  }
  throw new Error('no data chunk');
}

const round3 = (x) => Math.round(x * 1000) / 1000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const expectedTranscript = sidecar.utterances.map((u) => u.text ?? u.words.map((w) => w.word).join(' ')).join(' ');

/** Runs fn and returns the error it throws, failing when it does not. */
async function rejection(fn, what) {
  try {
    await fn();
  } catch (err) {
    return err;
  }
  assert.fail(`${what}: expected an error`);
}

/** The SDK's HttpError (not exported: checked by name and fields) with the service's envelope. */
function assertEnvelope(err, status, pathname, message) {
  assert.equal(err.name, 'HttpError', `${pathname}: ${err}`);
  assert.equal(err.status, status);
  const body = err.responseBody;
  assert.equal(typeof body, 'object', `${pathname}: body parsed as JSON`);
  assert.equal(body.statusCode, status);
  assert.equal(body.path, pathname);
  assert.match(body.request_id, REQUEST_ID);
  assert.equal(err.requestId, body.request_id);
  assert.ok(Math.abs(Date.parse(body.timestamp) - Date.now()) < 60_000, `timestamp ${body.timestamp}`);
  if (message instanceof RegExp) assert.match(body.message, message);
  else if (message) assert.equal(body.message, message);
  assert.ok(err.message.startsWith(body.message), `SDK message ${err.message}`);
  return body;
}

async function callbackURL(info, kind) {
  const res = await fetch(`${info.control}/callback-url?kind=${kind}`, { method: 'POST' });
  assert.equal(res.status, 200);
  return (await res.json()).url;
}

/** Waits until serve's read API has the job in a final state. */
async function serveJob(info, id, timeout = 30_000) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const res = await fetch(`${info.serve}/v1/jobs/${id}`, { headers: { authorization: `Bearer ${info.read_token}` } });
    if (res.status === 200) {
      const job = await res.json();
      if (job.status === 'done' || job.status === 'error') return job;
    } else {
      assert.equal(res.status, 404, `serve GET /v1/jobs/${id}`);
    }
    if (Date.now() > deadline) assert.fail(`job ${id} did not reach serve as finished within ${timeout} ms`);
    await sleep(100);
  }
}

/** The WAV of a live session carries the streamed samples unchanged (16-bit PCM). */
function assertLiveWAV(buf, pcm) {
  const got = parseWAV(Buffer.from(buf));
  assert.deepEqual({ sr: got.sampleRate, ch: got.channels, bits: got.bitDepth }, { sr: fmt.sampleRate, ch: fmt.channels, bits: 16 });
  assert.equal(got.pcm.length, pcm.length, 'bytes of the live recording');
  assert.ok(Buffer.compare(got.pcm, pcm) === 0, 'the live recording is what was streamed');
}

/** A TCP proxy in front of the sandbox that can cut its WebSocket connections. */
function startProxy(target) {
  const { hostname, port } = new URL(target);
  const sockets = [];
  let webSockets = 0;
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(port), hostname);
    const pair = { client, upstream, ws: false };
    sockets.push(pair);
    client.once('data', (first) => {
      if (first.toString('latin1').startsWith('GET /v2/live?token=')) {
        pair.ws = true;
        webSockets++;
      }
    });
    client.pipe(upstream);
    upstream.pipe(client);
    const end = () => { client.destroy(); upstream.destroy(); };
    client.on('error', end);
    upstream.on('error', end);
    client.on('close', end);
    upstream.on('close', end);
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => resolve({
      url: `http://127.0.0.1:${server.address().port}`,
      webSockets: () => webSockets,
      /** Drops every open WebSocket connection as a network failure would: no close frame. */
      dropWebSockets() {
        let n = 0;
        for (const p of sockets) {
          if (p.ws && !p.client.destroyed) { p.client.destroy(); p.upstream.destroy(); n++; }
        }
        return n;
      },
      close: () => new Promise((r) => { for (const p of sockets) { p.client.destroy(); p.upstream.destroy(); } server.close(r); }),
    }));
  });
}

// ------------------------------------------------------------------ pre-recorded

async function preRecorded(info) {
  const gladia = new GladiaClient({ apiKey: info.api_key, apiUrl: info.sandbox });
  const pr = gladia.preRecorded();
  const started = new Date(Date.now() - 1000).toISOString();

  // Upload: the SDK's type of audio_metadata, every member with its value.
  const up = await pr.uploadFile(samplePath);
  assert.ok(up.audio_url.startsWith(`${info.sandbox}/v2/files/`), up.audio_url);
  assert.match(up.audio_metadata.id, UUID);
  assert.deepEqual({ ...up.audio_metadata, id: 'x' }, {
    id: 'x', filename: 'sample.wav', extension: 'wav', size: sample.length,
    audio_duration: round3(fmt.duration), number_of_channels: fmt.channels,
  });

  // Create from the file server (its sidecar fixes the words) with add-ons and a callback into
  // serve; then from the upload.
  const cb = await callbackURL(info, 'pre-recorded');
  const created = await pr.create({
    audio_url: info.sample_url,
    subtitles: true, subtitles_config: { formats: ['srt', 'vtt'] },
    diarization: true, sentences: true, summarization: true, summarization_config: { type: 'bullet_points' },
    custom_metadata: { run: RUN, n: 1, source: 'files' },
    callback: true, callback_config: { url: cb, method: 'POST' },
  });
  assert.match(created.id, UUID);
  assert.equal(created.result_url, `${info.sandbox}/v2/pre-recorded/${created.id}`);
  const early = await pr.get(created.id);
  assert.equal(early.status, 'queued', 'right after creation (the launcher holds jobs 300 ms in each state)');
  assert.equal(early.kind, 'pre-recorded');

  const fromUpload = await pr.create({ audio_url: up.audio_url, custom_metadata: { run: RUN, n: 2, source: 'upload' } });

  const done = await pr.poll(created.id, { interval: 100, timeout: 30_000 });
  assert.equal(done.id, created.id);
  assert.equal(done.status, 'done');
  assert.equal(done.version, 2);
  assert.match(done.request_id, REQUEST_ID);
  assert.deepEqual(done.custom_metadata, { run: RUN, n: 1, source: 'files' });
  assert.ok(Date.parse(done.completed_at) >= Date.parse(done.created_at));
  assert.deepEqual({ ...done.file, id: 'x' }, {
    id: 'x', filename: 'sample.wav', source: info.sample_url,
    audio_duration: round3(fmt.duration), number_of_channels: fmt.channels,
  });
  assert.equal(done.request_params.audio_url, info.sample_url);
  assert.equal(done.request_params.subtitles, true);
  assert.equal(done.request_params.custom_metadata, undefined, 'metadata is at the top of the record');
  const r = done.result;
  assert.equal(r.transcription.full_transcript, expectedTranscript);
  assert.equal(r.transcription.utterances.length, sidecar.utterances.length);
  assert.equal(r.transcription.utterances[0].words[0].word, sidecar.utterances[0].words[0].word);
  assert.equal(r.metadata.audio_duration, round3(fmt.duration));
  assert.deepEqual(r.transcription.subtitles.map((s) => s.format), ['srt', 'vtt']);
  assert.ok(r.transcription.subtitles[0].subtitles.startsWith('1\n00:00:0'), r.transcription.subtitles[0].subtitles.slice(0, 40));
  assert.ok(r.transcription.subtitles[1].subtitles.startsWith('WEBVTT'));
  assert.equal(r.summarization.success, true);
  assert.equal(typeof r.summarization.results, 'string');
  assert.ok(r.summarization.results.length > 0);
  assert.equal(r.sentences.success, true);
  assert.ok(r.sentences.results.length >= 1 && r.sentences.results.join(' ').includes(sidecar.utterances[0].words[0].word));
  assert.equal(r.diarization.success, true);
  assert.equal(r.diarization.results.length, sidecar.utterances.length);

  const done2 = await pr.poll(fromUpload.id, { interval: 100, timeout: 30_000 });
  assert.equal(done2.file.filename, 'sample.wav', 'a job from an upload keeps the uploaded name');
  assert.equal(done2.file.id, up.audio_metadata.id);
  assert.equal(done2.file.source, up.audio_url);

  // getFile: the original bytes, both from the fetched URL and from the upload.
  for (const id of [created.id, fromUpload.id]) {
    const file = Buffer.from(await pr.getFile(id));
    assert.equal(file.length, sample.length);
    assert.ok(Buffer.compare(file, sample) === 0, `getFile(${id}) is the sample`);
  }

  // Lists: every filter, and paging by the links.
  const ids = (page) => page.items.map((j) => j.id);
  const mine = { custom_metadata: { run: RUN } };
  let page = await pr.list(mine);
  assert.deepEqual(ids(page), [fromUpload.id, created.id], 'newest first');
  assert.equal(page.next, null);
  assert.ok(page.first.includes('custom_metadata%5Brun%5D='), page.first);
  page = await pr.list({ custom_metadata: { run: RUN, n: 1 } }); // the SDK sends custom_metadata[n]=1
  assert.deepEqual(ids(page), [created.id]);
  page = await pr.list({ custom_metadata: { run: RUN, source: 'upload' } });
  assert.deepEqual(ids(page), [fromUpload.id]);
  page = await pr.list({ custom_metadata: { run: 'nobody' } });
  assert.deepEqual(page.items, []);
  page = await pr.list({ ...mine, status: ['done'] });
  assert.deepEqual(ids(page), [fromUpload.id, created.id]);
  page = await pr.list({ ...mine, status: ['queued', 'processing', 'error'] });
  assert.deepEqual(page.items, []);
  const today = new Date(done.created_at).toISOString().slice(0, 10);
  page = await pr.list({ ...mine, date: today });
  assert.deepEqual(ids(page), [fromUpload.id, created.id]);
  page = await pr.list({ ...mine, date: '2001-01-01' });
  assert.deepEqual(page.items, []);
  page = await pr.list({ ...mine, after_date: started, before_date: new Date(Date.now() + 60_000).toISOString() });
  assert.deepEqual(ids(page), [fromUpload.id, created.id]);
  page = await pr.list({ ...mine, before_date: done.created_at });
  assert.deepEqual(page.items, [], 'before_date is exclusive');
  page = await pr.list({ ...mine, after_date: done2.created_at });
  assert.deepEqual(page.items, [], 'after_date is exclusive');
  page = await pr.list({ ...mine, limit: 1 });
  assert.deepEqual(ids(page), [fromUpload.id]);
  assert.ok(page.next && page.next.includes('offset=1') && page.next.includes('limit=1') && page.next.includes('custom_metadata%5Brun%5D='), page.next);
  const second = await pr.list({ url: page.next });
  assert.deepEqual(ids(second), [created.id]);
  assert.equal(second.next, null);
  page = await pr.list({ ...mine, offset: 1, limit: 5 });
  assert.deepEqual(ids(page), [created.id]);

  // Errors, parsed into the SDK's error: 400 with validation errors, 401, 404.
  let err = await rejection(() => pr.create({ audio_url: info.sample_url, subtitles: true, subtitles_config: { formats: ['doc'] } }), 'bad subtitle format');
  let body = assertEnvelope(err, 400, '/v2/pre-recorded', 'invalid request parameters');
  assert.deepEqual(body.validation_errors, ['subtitles_config.formats[0] must be one of srt, vtt (got "doc")']);
  err = await rejection(() => pr.list({ limit: 0 }), 'limit 0');
  body = assertEnvelope(err, 400, '/v2/pre-recorded', 'invalid request parameters');
  assert.deepEqual(body.validation_errors, ['limit must be between 1 and 100 (got 0)']);
  const stranger = new GladiaClient({ apiKey: 'not-the-key', apiUrl: info.sandbox }).preRecorded();
  err = await rejection(() => stranger.get(created.id), 'wrong key');
  assertEnvelope(err, 401, `/v2/pre-recorded/${created.id}`, 'invalid API key');
  err = await rejection(() => pr.get('no-such-job'), 'unknown id');
  assertEnvelope(err, 404, '/v2/pre-recorded/no-such-job', 'pre-recorded job no-such-job not found');
  err = await rejection(() => pr.getFile('no-such-job'), 'file of an unknown id');
  assertEnvelope(err, 404, '/v2/pre-recorded/no-such-job/file', 'pre-recorded job no-such-job not found');

  // Delete: true (202), then 404 everywhere.
  assert.equal(await pr.delete(fromUpload.id), true);
  err = await rejection(() => pr.get(fromUpload.id), 'deleted job');
  assertEnvelope(err, 404, `/v2/pre-recorded/${fromUpload.id}`);
  err = await rejection(() => pr.getFile(fromUpload.id), 'file of a deleted job');
  assertEnvelope(err, 404, `/v2/pre-recorded/${fromUpload.id}/file`);
  err = await rejection(() => pr.delete(fromUpload.id), 'deleted twice');
  assertEnvelope(err, 404, `/v2/pre-recorded/${fromUpload.id}`);
  page = await pr.list(mine);
  assert.deepEqual(ids(page), [created.id]);

  // The callback reached serve: the job is there, finished.
  const served = await serveJob(info, created.id);
  assert.equal(served.status, 'done');
  assert.equal(served.kind, 'pre-recorded');
  assert.equal(served.result.transcription.full_transcript, expectedTranscript);
  console.log(`ok pre-recorded: upload, create, poll, get, list (${RUN}), getFile, delete, errors, callback into serve`);
  return created.id;
}

// ------------------------------------------------------------------ live

const chunkBytes = () => (fmt.sampleRate * fmt.channels * (fmt.bitDepth / 8)) / 10; // 100 ms

/**
 * Listens to a session from the moment it is made: the SDK emits 'started' and its own
 * start_session as soon as POST /v2/live answers, before any await of the caller returns.
 */
function watch(session) {
  const w = { session, messages: [], events: [], errors: [], acked: 0 };
  session.on('message', (m) => {
    w.messages.push(m);
    if (m.type === 'audio_chunk' && m.acknowledged) w.acked = m.data.byte_range[1];
  });
  for (const ev of ['started', 'connecting', 'connected', 'ending']) session.on(ev, (e) => w.events.push([ev, e]));
  session.on('error', (e) => w.errors.push(e));
  w.ended = new Promise((resolve) => session.once('ended', resolve));
  return w;
}

/**
 * Streams the sample to a watched session: chunks of 100 ms, a few milliseconds apart, then
 * stop; resolves with every message, the events and the bytes sent once the session has ended.
 * hooks.middle, when given, runs halfway, after the sandbox acknowledged everything sent so far.
 */
async function stream(w, hooks = {}) {
  const { session, messages, events, errors, ended } = w;
  const pcm = fmt.pcm;
  const step = chunkBytes();
  let sent = 0;
  for (let off = 0; off < pcm.length; off += step) {
    if (hooks.middle && off >= pcm.length / 2 && !hooks.done) {
      const deadline = Date.now() + 10_000;
      while (w.acked < sent) {
        assert.ok(Date.now() < deadline, `acks stopped at ${w.acked} of ${sent}`);
        await sleep(10);
      }
      hooks.done = true;
      await hooks.middle();
    }
    const chunk = pcm.subarray(off, Math.min(off + step, pcm.length));
    session.sendAudio(chunk);
    sent += chunk.length;
    await sleep(5);
  }
  session.stopRecording();
  let timer;
  const end = await Promise.race([ended, new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error('the session did not end within 60 s')), 60_000);
  })]);
  clearTimeout(timer);
  assert.deepEqual(errors, []);
  return { messages, events, end, sent };
}

function checkAcks(messages, total) {
  const acks = messages.filter((m) => m.type === 'audio_chunk');
  assert.ok(acks.length > 0);
  let at = 0;
  for (const a of acks) {
    assert.equal(a.acknowledged, true);
    assert.equal(a.error, null);
    assert.equal(a.data.byte_range[0], at, 'byte ranges are contiguous');
    assert.ok(a.data.byte_range[1] > at);
    at = a.data.byte_range[1];
  }
  assert.equal(at, total, 'acknowledgments cover every byte sent, once');
  const last = acks[acks.length - 1];
  assert.equal(round3(last.data.time_range[1]), round3(fmt.duration));
}

function checkTranscripts(messages, id) {
  const ts = messages.filter((m) => m.type === 'transcript');
  const partials = ts.filter((m) => !m.data.is_final);
  const finals = ts.filter((m) => m.data.is_final);
  assert.ok(partials.length > 0, 'partials');
  assert.ok(finals.length > 0, 'finals');
  for (const m of ts) {
    assert.equal(m.session_id, id);
    assert.ok(m.data.utterance.text.trim().length > 0);
  }
  for (const p of partials) assert.ok(finals.some((f) => f.data.id === p.data.id), 'a partial shares its final\'s id');
  return finals;
}

async function live(info) {
  const gladia = new GladiaClient({ apiKey: info.api_key, apiUrl: info.sandbox });
  const lv = gladia.liveV2();
  const ids = [];

  // 1. SDK defaults (no model: the service's default) with lifecycle events on the socket and
  //    everything to serve by callback.
  const cb = await callbackURL(info, 'live');
  const s1 = lv.startSession({
    sample_rate: fmt.sampleRate, endpointing: 0.3,
    messages_config: { receive_partial_transcripts: true, receive_lifecycle_events: true },
    custom_metadata: { run: RUN, n: 1 },
    callback: true,
    callback_config: { url: cb, receive_partial_transcripts: true, receive_lifecycle_events: true },
  });
  const w1 = watch(s1);
  const id1 = await s1.getSessionId();
  assert.match(id1, UUID);
  const r1 = await stream(w1);
  assert.deepEqual(r1.end, { code: 1000, reason: 'session ended' });
  const types = r1.messages.map((m) => m.type);
  // One start_session: the SDK's own, made from the answer to POST /v2/live.
  assert.equal(types.filter((t) => t === 'start_session').length, 1, types.join(','));
  assert.equal(types[0], 'start_session');
  assert.equal(r1.messages[0].session_id, id1);
  assert.equal(types[1], 'start_recording');
  assert.equal(types.at(-1), 'end_session');
  for (const t of ['speech_start', 'speech_end', 'end_recording', 'post_transcript', 'post_final_transcript']) assert.ok(types.includes(t), t);
  assert.ok(types.indexOf('end_recording') < types.indexOf('post_final_transcript'));
  // Acknowledgments not asked for: the SDK asks for them anyway (it resumes with them) and keeps
  // them to itself.
  assert.ok(!r1.messages.some((m) => 'acknowledged' in m), types.join(','));
  const finals1 = checkTranscripts(r1.messages, id1);
  // The SDK's first 'connecting' fires before its handler is set: only reconnections show it.
  assert.deepEqual(r1.events.map(([e]) => e), ['started', 'connected', 'ending']);

  // 2. The README's example: solaria-1, with acknowledgments.
  const s2 = lv.startSession({
    model: 'solaria-1', encoding: 'wav/pcm', sample_rate: fmt.sampleRate, bit_depth: 16, channels: 1,
    language_config: { languages: ['en'] }, endpointing: 0.3,
    messages_config: { receive_partial_transcripts: true, receive_acknowledgments: true },
    custom_metadata: { run: RUN, n: 2 },
  });
  const w2 = watch(s2);
  const id2 = await s2.getSessionId();
  const r2 = await stream(w2);
  assert.equal(r2.end.code, 1000);
  assert.ok(!r2.messages.some((m) => m.type === 'start_session' || m.type === 'start_recording'), 'no lifecycle events asked for');
  checkAcks(r2.messages, r2.sent);
  const stop = r2.messages.find((m) => m.type === 'stop_recording');
  assert.equal(stop.acknowledged, true);
  assert.equal(round3(stop.data.recording_duration), round3(fmt.duration));
  checkTranscripts(r2.messages, id2);

  // 3. Resume: a proxy drops the first WebSocket halfway; the SDK reconnects to the same URL and
  //    sends what was not acknowledged; the session goes on as one.
  const proxy = await startProxy(info.sandbox);
  const viaProxy = new GladiaClient({ apiKey: info.api_key, apiUrl: proxy.url }).liveV2();
  const s3 = viaProxy.startSession({
    sample_rate: fmt.sampleRate, endpointing: 0.3,
    messages_config: { receive_acknowledgments: true, receive_lifecycle_events: true },
    custom_metadata: { run: RUN, n: 3 },
  });
  const w3 = watch(s3);
  const id3 = await s3.getSessionId();
  const r3 = await stream(w3, { middle: async () => { assert.equal(proxy.dropWebSockets(), 1); } });
  assert.equal(r3.end.code, 1000);
  // At least one reconnection: on a loaded machine the SDK may give up on an attempt (its own
  // connect timeout) and try once more; what matters is that the session resumes as one.
  assert.ok(proxy.webSockets() >= 2, `reconnected through the proxy (${proxy.webSockets()} WebSocket connections)`);
  const connected = r3.events.filter(([e]) => e === 'connected').map(([, v]) => v.attempt);
  assert.equal(connected[0], 1, 'the first connection is attempt 1');
  assert.ok(connected.length >= 2 && connected.every((a, i) => i === 0 || a > connected[i - 1]),
    `connected again after the drop, attempts increasing: ${connected}`);
  checkAcks(r3.messages, r3.sent);
  assert.equal(r3.messages.filter((m) => m.type === 'start_recording').length, 1, 'the session was resumed, not restarted');
  assert.equal(r3.messages.filter((m) => m.type === 'start_session').length, 1);
  await proxy.close();

  // get, list, getFile, delete.
  for (const [id, n] of [[id1, 1], [id2, 2], [id3, 3]]) {
    const job = await lv.get(id);
    assert.equal(job.status, 'done');
    assert.equal(job.kind, 'live');
    assert.deepEqual(job.custom_metadata, { run: RUN, n });
    assert.equal(job.request_params.model, 'solaria-1', 'the model, default or asked for, is in the record');
    assert.equal(job.request_params.sample_rate, fmt.sampleRate);
    assert.equal(job.file.filename, `live-${id}.wav`);
    assert.equal(round3(job.result.metadata.audio_duration), round3(fmt.duration));
    const msgs = job.result.messages.map((s) => JSON.parse(s));
    assert.equal(msgs[0].type, 'start_session');
    assert.equal(msgs.filter((m) => m.type === 'start_session').length, 1);
    assert.equal(msgs.at(-1).type, 'end_session');
    assertLiveWAV(await lv.getFile(id), fmt.pcm);
    ids.push(id);
  }
  assert.equal((await lv.get(id1)).result.transcription.utterances.length, finals1.length);

  let page = await lv.list({ custom_metadata: { run: RUN } });
  assert.deepEqual(page.items.map((j) => j.id), [id3, id2, id1]);
  page = await lv.list({ custom_metadata: { run: RUN, n: 2 }, status: ['done'] });
  assert.deepEqual(page.items.map((j) => j.id), [id2]);
  page = await lv.list({ custom_metadata: { run: RUN }, limit: 2 });
  assert.deepEqual(page.items.map((j) => j.id), [id3, id2]);
  page = await lv.list({ url: page.next });
  assert.deepEqual(page.items.map((j) => j.id), [id1]);
  assert.equal(page.next, null);

  let err = await rejection(() => lv.get('nope'), 'unknown session');
  assertEnvelope(err, 404, '/v2/live/nope', 'live session nope not found');
  err = await rejection(() => lv.getFile('nope'), 'file of an unknown session');
  assertEnvelope(err, 404, '/v2/live/nope/file', 'live session nope not found');

  // A refused session: the SDK reports the 400 through 'error' and ends it.
  const bad = lv.startSession({ sample_rate: 22050 });
  const badErr = await new Promise((resolve) => bad.once('error', resolve));
  const badBody = assertEnvelope(badErr, 400, '/v2/live', 'invalid request parameters');
  assert.deepEqual(badBody.validation_errors, ['sample_rate must be one of 8000, 16000, 32000, 44100, 48000 (got 22050)']);

  assert.equal(await lv.delete(id2), true);
  err = await rejection(() => lv.get(id2), 'deleted session');
  assertEnvelope(err, 404, `/v2/live/${id2}`);
  err = await rejection(() => lv.getFile(id2), 'file of a deleted session');
  assertEnvelope(err, 404, `/v2/live/${id2}/file`);
  page = await lv.list({ custom_metadata: { run: RUN } });
  assert.deepEqual(page.items.map((j) => j.id), [id3, id1]);

  // Session 1's callbacks reached serve: the session is there, finished, with its messages.
  const served = await serveJob(info, id1);
  assert.equal(served.kind, 'live');
  assert.equal(served.status, 'done');
  const res = await fetch(`${info.serve}/v1/live/${id1}/messages?limit=1000`, { headers: { authorization: `Bearer ${info.read_token}` } });
  assert.equal(res.status, 200);
  const stored = await res.json();
  const storedTypes = stored.map((m) => m.type);
  // callback_config asked for lifecycle events, partials and (by default) finals.
  assert.equal(storedTypes[0], 'start_session', JSON.stringify(stored[0]).slice(0, 200));
  assert.equal(storedTypes.at(-1), 'end_session');
  assert.equal(storedTypes.filter((t) => t === 'start_session').length, 1);
  assert.ok(storedTypes.includes('transcript'));
  assert.ok(stored.every((m) => m.payload.session_id === id1));
  console.log('ok live: defaults and solaria-1, partials, finals, lifecycle, acknowledgments, stop, resume, get, list, getFile, delete, callbacks into serve');
}

// ------------------------------------------------------------------ main

const launcher = startLauncher('sdk', 'SDK_LAUNCHER');
let failed = false;
try {
  const info = await launcher.info;
  await preRecorded(info);
  await live(info);
} catch (err) {
  failed = true;
  console.error(err);
} finally {
  await launcher.stop();
}
if (failed) process.exit(1);
console.log('sdk-test: all checks passed');
