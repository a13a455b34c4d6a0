// What both end-to-end tests (e2e/sdk/test.mjs, e2e/ui/test.mjs) do to start their Go
// launcher: run it (a built binary, or `go run` of its package), read the one line of JSON it
// prints, and stop it at the end. Node's own modules only, so that it needs neither test's npm
// dependencies.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/**
 * Starts the launcher of e2e/<name>: the binary $<envVar>, else e2e/<name>/.bin/launch if it
 * was built, else `go run ./e2e/<name>/launch`. Returns { info, stop }: info resolves to its
 * line of JSON (rejects if it exits first or says nothing within 180 s); stop closes its
 * standard input, which stops it, and sends SIGTERM if it lingers.
 */
export function startLauncher(name, envVar) {
  const bin = process.env[envVar] || path.join(root, 'e2e', name, '.bin', 'launch');
  const [cmd, args] = fs.existsSync(bin) ? [bin, []] : ['go', ['run', '-tags', 'sqlite_fts5', `./e2e/${name}/launch`]];
  const child = spawn(cmd, args, { cwd: root, stdio: ['pipe', 'pipe', 'inherit'] });
  const info = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the launcher printed nothing within 180 s')), 180_000);
    readline.createInterface({ input: child.stdout }).once('line', (line) => {
      clearTimeout(timer);
      try { resolve(JSON.parse(line)); } catch { reject(new Error(`launcher said: ${line}`)); }
    });
    child.once('exit', (code) => reject(new Error(`the launcher exited with ${code}`)));
  });
  const stop = () => new Promise((resolve) => {
    if (child.exitCode !== null) { resolve(); return; }
    child.once('exit', resolve);
    child.stdin.end();
    setTimeout(() => child.kill('SIGTERM'), 5000).unref();
  });
  return { info, stop };
}
