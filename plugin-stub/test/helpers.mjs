// Test helpers: the real knowhubd on a temp home, a recording JSON-RPC server on a temp socket,
// and a stand-in for OpenClaw's plugin API that records what the plugin registers.

import { spawn } from "node:child_process";
import { createHmac, randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdtempSync, rmSync, openSync, readFileSync, writeFileSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const STUB_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const REPO_ROOT = path.resolve(STUB_DIR, "..");

/** A temp directory under /tmp (short: Unix socket paths are limited to ~100 bytes). */
export function tempDir(prefix) {
  return mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** The built daemon binary; fails with what to do when it is not built. */
export function knowhubdPath() {
  // Cargo's target directory, relocated like cargo does by CARGO_TARGET_DIR.
  const targetDir = path.resolve(REPO_ROOT, process.env.CARGO_TARGET_DIR || "target");
  const binary = process.env.KNOWHUBD_BIN || path.join(targetDir, "debug", "knowhubd");
  if (!existsSync(binary)) {
    throw new Error(`${binary} is not built: run \`cargo build -p knowhubd\` (tests/run does) before the plugin-stub tests`);
  }
  return binary;
}

/** One raw JSON-RPC call over a socket, without the plugin's client. */
export function rawCall(socketPath, method, params = {}, timeoutMs = 2_000) {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method, params });
    const req = http.request(
      { socketPath, method: "POST", path: "/", headers: { "content-type": "application/json" }, timeout: timeoutMs },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk) => (text += chunk));
        res.on("end", () => {
          try {
            resolve(JSON.parse(text));
          } catch (error) {
            reject(error);
          }
        });
      },
    );
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", reject);
    req.end(body);
  });
}

/** The real daemon on a fresh temp home. `stop()` always cleans up. */
export class Daemon {
  constructor(home = tempDir("pstub-daemon-")) {
    this.home = home;
    this.socket = path.join(home, "knowhubd.sock");
    this.log = path.join(home, "daemon.log");
    this.child = null;
  }

  static async start() {
    const daemon = new Daemon();
    await daemon.spawn();
    return daemon;
  }

  /** Starts (or restarts) the process on this home and waits until `status` answers. */
  async spawn() {
    const log = openSync(this.log, "a");
    const env = { ...process.env, KNOWHUB_HOME: this.home, KNOWHUB_LOG: process.env.KNOWHUB_LOG || "info" };
    delete env.KNOWHUB_SOCKET;
    this.child = spawn(knowhubdPath(), [], { env, stdio: ["ignore", "ignore", log] });
    const child = this.child;
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new Error(`knowhubd exited (${child.exitCode ?? child.signalCode}) before answering; log:\n${this.logText()}`);
      }
      try {
        const answer = await rawCall(this.socket, "status", {}, 1_000);
        if (answer.result) return answer.result;
      } catch {
        // not up yet
      }
      if (Date.now() > deadline) throw new Error(`knowhubd did not answer within 30 s; log:\n${this.logText()}`);
      await sleep(25);
    }
  }

  logText() {
    try {
      return readFileSync(this.log, "utf8");
    } catch {
      return "";
    }
  }

  /** SIGKILL and wait: like a crash. */
  async kill() {
    const child = this.child;
    this.child = null;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGKILL");
    await exited;
  }

  /** SIGSTOP: the process keeps its socket but answers nothing (a hanging daemon). */
  pause() {
    this.child?.kill("SIGSTOP");
  }

  resume() {
    this.child?.kill("SIGCONT");
  }

  call(method, params) {
    return rawCall(this.socket, method, params);
  }

  async stop() {
    this.resume();
    await this.kill();
    rmSync(this.home, { recursive: true, force: true });
  }
}

/** The daemon's answer to a proof (crates/kb-proto/src/identity.rs), in hex. */
export function proofFor(key, nonceHex) {
  return createHmac("sha256", key).update("knowhub daemon proof v1\0", "latin1").update(Buffer.from(nonceHex, "hex")).digest("hex");
}

/** Writes `key` as the daemon's key file beside `socket` (`<socket>.key`, 0600). */
export function writeKeyFile(socket, key) {
  const file = `${socket}.key`;
  rmSync(file, { force: true });
  writeFileSync(file, key, { mode: 0o600 });
  chmodSync(file, 0o600);
  return file;
}

/**
 * A JSON-RPC server on a temp Unix socket that records every request and answers with
 * `respond(request)`: a result object, `{hang: true}` to never answer, `{delayMs, result}`, or
 * `{raw}` for a body as it is; `status` for an HTTP status other than 200.
 *
 * It proves itself like the daemon: at `listen()` it writes a random key to `<socket>.key`
 * and answers `daemon.prove` with it. `options.key` gives the key (`null`: none, so it answers
 * the proof with "method not found"), `options.writeKey: false` leaves the key file alone, and
 * `options.prove(request, server)` answers the proof instead (a hostile listener). Proof
 * requests are in `received` (everything that arrived) but not in `requests`.
 */
export class RecordingServer {
  constructor(respond = () => ({ result: { action: "allow" } }), options = {}) {
    this.dir = options.dir ?? tempDir("pstub-rec-");
    this.socket = path.join(this.dir, options.name ?? "rec.sock");
    this.key = options.key === undefined ? randomBytes(32) : options.key;
    this.writeKey = options.writeKey ?? true;
    this.prove = options.prove;
    this.requests = [];
    this.received = [];
    this.respond = respond;
    this.hanging = new Set();
    this.server = http.createServer((req, res) => {
      let text = "";
      req.setEncoding("utf8");
      req.on("data", (chunk) => (text += chunk));
      req.on("end", () => {
        const request = JSON.parse(text);
        this.received.push(request);
        let answer;
        if (request.method === "daemon.prove") {
          answer = this.prove ? this.prove(request, this) : this.answerProof(request);
        } else {
          this.requests.push(request);
          answer = this.respond(request) ?? { result: { action: "allow" } };
        }
        if (answer.hang) {
          this.hanging.add(res);
          res.on("close", () => this.hanging.delete(res));
          return;
        }
        const send = () => {
          const status = answer.status ?? 200;
          if (answer.raw !== undefined) return res.writeHead(status, { "content-type": "application/json" }).end(answer.raw);
          const body = JSON.stringify({ jsonrpc: "2.0", id: request.id, ...("error" in answer ? { error: answer.error } : { result: answer.result }) });
          res.writeHead(status, { "content-type": "application/json" }).end(body);
        };
        if (answer.delayMs) setTimeout(send, answer.delayMs);
        else send();
      });
    });
  }

  /** The proof a daemon holding this server's key gives. */
  answerProof(request) {
    if (!this.key) return { error: { code: -32601, message: "Method not found" } };
    return { result: { proof: proofFor(this.key, request.params.nonce) } };
  }

  listen() {
    if (this.writeKey && this.key) writeKeyFile(this.socket, this.key);
    return new Promise((resolve) => this.server.listen(this.socket, resolve));
  }

  /** What arrived that was not a proof request: must stay empty for a refused listener. */
  get payloads() {
    return this.received.filter((request) => request.method !== "daemon.prove");
  }

  /** Requests of `hook.event`, as their params. */
  get events() {
    return this.requests.filter((request) => request.method === "hook.event").map((request) => request.params);
  }

  /** Stops listening and drops every connection (a dead daemon). */
  async close() {
    for (const res of this.hanging) res.destroy();
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  async dispose() {
    if (this.server.listening) await this.close();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A stand-in for OpenClaw's `api` that records tools, hooks and log lines. */
export function fakeApi(pluginConfig = {}) {
  const api = {
    id: "knowhub",
    pluginConfig,
    tools: new Map(),
    hooks: new Map(),
    logs: [],
    logger: {
      debug: (message) => api.logs.push(["debug", message]),
      info: (message) => api.logs.push(["info", message]),
      warn: (message) => api.logs.push(["warn", message]),
      error: (message) => api.logs.push(["error", message]),
    },
    resolvePath: (input) => input,
    registerTool(factory, opts) {
      api.tools.set(opts.name, factory);
    },
    on(hookName, handler) {
      api.hooks.set(hookName, handler);
    },
    /** The tool `name` as OpenClaw would build it for a run with `ctx`. */
    tool(name, ctx = {}) {
      return api.tools.get(name)(ctx);
    },
    warnings() {
      return api.logs.filter(([level]) => level === "warn").map(([, message]) => message);
    },
  };
  return api;
}

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Waits until `check()` is truthy, polling; fails after `timeoutMs`. */
export async function until(check, timeoutMs = 5_000, what = "condition") {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

/** Milliseconds `promise` takes, with its value. */
export async function timed(promise) {
  const start = performance.now();
  const value = await promise;
  return { value, ms: performance.now() - start };
}
