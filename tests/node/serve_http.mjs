// Starts `toolhost ... serve --http 127.0.0.1:0` for a test and waits for
// the address it prints. Shared by the node tests.

import { spawn } from "node:child_process";

/** Runs `bin` with `args` (which end in `serve --http ADDR`); resolves to
 *  { url, log, stop } once the server says where it listens. */
export function serveHttp(bin, args, { cwd, env }) {
  const child = spawn(bin, args, { cwd, env, stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  return new Promise((resolvePromise, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server did not start:\n${log}`)), 20_000);
    child.stderr.on("data", (chunk) => {
      log += chunk;
      // Only a whole line: a chunk may end in the middle of the address.
      const match = log.match(/at (http:\/\/\S+)[ \n]/);
      if (match) {
        clearTimeout(timer);
        resolvePromise({
          url: match[1],
          log: () => log,
          stop: () =>
            new Promise((done) => {
              if (child.exitCode !== null) return done();
              child.once("exit", done);
              child.kill("SIGTERM");
            }),
        });
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`the server exited (${code}):\n${log}`));
    });
  });
}
