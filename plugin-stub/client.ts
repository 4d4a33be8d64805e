// The socket client: JSON-RPC 2.0 over HTTP on knowhubd's Unix socket, with Node built-ins only.
//
// One keep-alive agent reuses connections, so a call costs one request on an open socket.
// The client tracks whether the daemon answers: it warns once when the daemon goes away (not
// once per call), says so once when it is back, and reconnects by itself because every call
// simply tries again. Before every call it checks that the socket is the user's own (owner and
// private directory), and every new connection must first prove that the daemon on it is the
// user's own (proof.ts: it can read a key only the user can read), so a socket another user
// planted, or another user's listener behind a socket file that passes those checks, gets
// nothing but a random nonce.

import { lstatSync, statSync } from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";

import { PROVE_METHOD, ProofBusy, ProofFailure, ProofTimeout, proveConnection } from "./proof.ts";

/** The socket's file name inside its directory, as in crates/kb-proto/src/paths.rs. */
const SOCKET_FILE_NAME = "knowhubd.sock";

/** The protocol version this stub speaks; the daemon reports its own in `status.protocol`. */
export const PROTOCOL_VERSION = 1;

/** How to get a daemon running, for messages to users and models. */
export const START_HINT = "start it with `kbctl service install` (systemd/launchd), or run `knowhubd` in a terminal";

export type Logger = {
  debug?: (message: string) => void;
  info: (message: string) => void;
  warn: (message: string) => void;
  error: (message: string) => void;
};

/**
 * Where the daemon listens, resolved like every other KnowHub client: the configured path,
 * else KNOWHUB_SOCKET, else $KNOWHUB_HOME/knowhubd.sock, else $XDG_RUNTIME_DIR/knowhub/
 * knowhubd.sock (Linux), else the data directory ($XDG_DATA_HOME/knowhub, ~/.local/share/knowhub),
 * never a shared temp dir where another user could create it first; on macOS the data
 * directory, ~/Library/Application Support/knowhub/knowhubd.sock, which survives reboots.
 */
export function resolveSocketPath(
  configured?: string,
  env: NodeJS.ProcessEnv = process.env,
  platform: string = process.platform,
): string {
  if (configured && configured.trim() !== "") return expandHome(configured.trim(), env);
  if (env.KNOWHUB_SOCKET) return env.KNOWHUB_SOCKET;
  if (env.KNOWHUB_HOME) return path.join(env.KNOWHUB_HOME, SOCKET_FILE_NAME);
  if (platform === "darwin") {
    return path.join(env.HOME || os.homedir(), "Library", "Application Support", "knowhub", SOCKET_FILE_NAME);
  }
  const runtimeDir = env.XDG_RUNTIME_DIR;
  if (platform !== "win32" && runtimeDir && path.isAbsolute(runtimeDir)) {
    return path.join(runtimeDir, "knowhub", SOCKET_FILE_NAME);
  }
  const dataHome = env.XDG_DATA_HOME && path.isAbsolute(env.XDG_DATA_HOME)
    ? env.XDG_DATA_HOME
    : path.join(env.HOME || os.homedir(), ".local", "share");
  return path.join(dataHome, "knowhub", SOCKET_FILE_NAME);
}

function expandHome(p: string, env: NodeJS.ProcessEnv): string {
  if (p === "~" || p.startsWith("~/")) return path.join(env.HOME || os.homedir(), p.slice(1));
  return p;
}

/** The daemon could not be reached: no socket, nobody listening, or the connection dropped. */
export class UnreachableError extends Error {
  readonly kind = "unreachable";
  readonly socketPath: string;
  readonly code: string | undefined;
  constructor(socketPath: string, cause: NodeJS.ErrnoException) {
    super(`the KnowHub daemon is not reachable at ${socketPath} (${cause.code ?? cause.message})`);
    this.name = "UnreachableError";
    this.socketPath = socketPath;
    this.code = cause.code;
  }
}

/** What to do about a socket whose files are wrong, and about a daemon that did not prove itself. */
const FIX_FILES = "If it is yours, fix it (the directory must be yours and 0700, the socket yours) or restart knowhubd, which creates it so";
const FIX_PROOF =
  "If it is yours, restart knowhubd, which writes a new key at each start (`kbctl status` says whether it could), " +
  "and upgrade it if it is older than this plugin";

/**
 * The socket is not the user's own: its directory or the socket belongs to another user, or
 * the directory is open to others, or the process listening did not prove that it is the
 * user's daemon. Nothing was sent (beyond the proof's random nonce).
 */
export class UntrustedSocketError extends Error {
  readonly kind = "untrusted";
  readonly socketPath: string;
  constructor(socketPath: string, why: string, fix: string = FIX_FILES) {
    super(`refusing to talk to ${socketPath}: ${why}; it may be another user's fake daemon. ${fix}`);
    this.name = "UntrustedSocketError";
    this.socketPath = socketPath;
  }
}

/**
 * Checks that `socketPath` is the user's own before anything is sent to it: its directory
 * belongs to `uid` and is closed to group and others (0700), and the socket is a socket that
 * belongs to `uid`. Throws UntrustedSocketError when not; UnreachableError when there is no
 * socket (the daemon is not running). No check where there are no uids (Windows). Returns the
 * socket file's identity (device, inode, change time): when it changes, the file was replaced.
 * These checks cannot tell whose process listens; the proof on each connection does.
 */
export function verifySocket(socketPath: string, uid: number | undefined = process.getuid?.()): string | undefined {
  if (uid === undefined) return undefined;
  const dir = path.dirname(socketPath);
  let dirStat;
  let socketStat;
  try {
    dirStat = statSync(dir);
    socketStat = lstatSync(socketPath, { bigint: true });
  } catch (error) {
    throw new UnreachableError(socketPath, error as NodeJS.ErrnoException);
  }
  if (dirStat.uid !== uid) {
    throw new UntrustedSocketError(socketPath, `its directory ${dir} belongs to uid ${dirStat.uid}, not to you (uid ${uid})`);
  }
  const mode = dirStat.mode & 0o777;
  if ((mode & 0o077) !== 0) {
    throw new UntrustedSocketError(
      socketPath,
      `its directory ${dir} is open to other users (mode ${mode.toString(8).padStart(4, "0")}, must be 0700)`,
    );
  }
  if (!socketStat.isSocket()) throw new UntrustedSocketError(socketPath, "it is not a socket");
  if (socketStat.uid !== BigInt(uid)) {
    throw new UntrustedSocketError(socketPath, `the socket belongs to uid ${socketStat.uid}, not to you (uid ${uid})`);
  }
  return `${socketStat.dev}:${socketStat.ino}:${socketStat.ctimeNs}`;
}

/**
 * A keep-alive agent whose every new connection proves the daemon before the HTTP client gets
 * it (proof.ts). A request's `proofTimeoutMs` bounds the proof (its deadline, named after the
 * call `proofFor`); a proof still running when the request gave up ends at its own.
 */
class ProvingAgent extends http.Agent {
  createConnection(
    options: { socketPath?: string; path?: string; proofTimeoutMs?: number; proofFor?: string },
    callback: (error: Error | null, socket?: net.Socket) => void,
  ): undefined {
    const socketPath = options.socketPath ?? options.path ?? "";
    const timeoutMs = options.proofTimeoutMs ?? DEFAULT_PROOF_TIMEOUT_MS;
    const socket = net.connect({ path: socketPath });
    proveConnection(socket, socketPath, timeoutMs).then(
      () => callback(null, socket),
      (error: Error) => {
        socket.destroy();
        if (error instanceof ProofFailure) {
          callback(new UntrustedSocketError(socketPath, `the process listening there did not prove that it is your knowhubd: ${error.message}`, FIX_PROOF));
        } else if (error instanceof ProofBusy) {
          callback(new RpcError(ERROR_CODES.unavailable, error.message, undefined));
        } else if (error instanceof ProofTimeout) {
          // A listener that accepts and never answers is a hanging daemon: said as the call's.
          callback(new DeadlineError(options.proofFor ?? PROVE_METHOD, error.timeoutMs, socketPath));
        } else {
          callback(error);
        }
      },
    );
    return undefined;
  }
}

/** The longest a proof may take when the request names no deadline. */
const DEFAULT_PROOF_TIMEOUT_MS = 5_000;

/** The daemon accepted the call but did not answer in time. */
export class DeadlineError extends Error {
  readonly kind = "timeout";
  readonly timeoutMs: number;
  constructor(method: string, timeoutMs: number, socketPath: string) {
    super(`the KnowHub daemon at ${socketPath} did not answer ${method} within ${timeoutMs} ms`);
    this.name = "DeadlineError";
    this.timeoutMs = timeoutMs;
  }
}

/** The daemon answered with a JSON-RPC error. */
export class RpcError extends Error {
  readonly kind = "rpc";
  readonly code: number;
  readonly data: unknown;
  constructor(code: number, message: string, data: unknown) {
    super(message);
    this.name = "RpcError";
    this.code = code;
    this.data = data;
  }
}

/** The answer was not a JSON-RPC response (wrong HTTP status, not JSON, no result). */
export class ProtocolError extends Error {
  readonly kind = "protocol";
  constructor(message: string) {
    super(message);
    this.name = "ProtocolError";
  }
}

export type KnowhubError = UnreachableError | UntrustedSocketError | DeadlineError | RpcError | ProtocolError;

/** JSON-RPC error codes the daemon uses. */
export const ERROR_CODES = {
  methodNotFound: -32601,
  invalidParams: -32602,
  notFound: -32004,
  unavailable: -32005,
  refused: -32006,
} as const;

/** Errors on a reused keep-alive socket that mean it was closed under us: retried once. */
const STALE_SOCKET_CODES = new Set(["ECONNRESET", "EPIPE", "ECONNABORTED"]);

export type CallOptions = {
  /** Give up after this many milliseconds (the request is aborted). */
  timeoutMs: number;
  /** Abort when this signal fires (e.g. the tool call was cancelled). */
  signal?: AbortSignal;
};

export type ClientOptions = {
  socketPath: string;
  logger?: Logger;
  /** Fire-and-forget requests in flight at most; more are dropped, not queued. */
  maxInFlightNotifications?: number;
};

type Health = "unknown" | "up" | "down" | "untrusted";

export class KnowhubClient {
  readonly socketPath: string;
  private readonly agent: http.Agent;
  private readonly logger: Logger | undefined;
  private readonly maxInFlight: number;
  private nextId = 1;
  private health: Health = "unknown";
  /** The socket file's identity at the last call: connections to a replaced file are dropped. */
  private socketIdentity: string | undefined;
  private inFlightNotifications = 0;
  /** Fire-and-forget events dropped because too many were in flight (a hanging daemon). */
  dropped = 0;

  constructor(options: ClientOptions) {
    this.socketPath = options.socketPath;
    this.logger = options.logger;
    this.maxInFlight = options.maxInFlightNotifications ?? 64;
    // Idle keep-alive sockets are unref'd by the agent, so they never hold the process open.
    this.agent = new ProvingAgent({ keepAlive: true, keepAliveMsecs: 10_000, maxFreeSockets: 8 });
  }

  /** Whether the last call reached the daemon. */
  get reachable(): boolean {
    return this.health === "up";
  }

  /** Calls `method` with named `params` and resolves to its result; rejects with a KnowhubError. */
  async call(method: string, params: object, options: CallOptions): Promise<unknown> {
    const body = JSON.stringify({ jsonrpc: "2.0", id: this.nextId++, method, params });
    try {
      const result = await this.send(method, body, options, false);
      this.markUp();
      return result;
    } catch (error) {
      if (error instanceof UntrustedSocketError) this.markUntrusted(error);
      else if (error instanceof UnreachableError || error instanceof DeadlineError) this.markDown(error);
      else if (error instanceof RpcError || error instanceof ProtocolError) this.markUp();
      throw error;
    }
  }

  /**
   * Sends a call whose answer nobody waits for. Never throws and never blocks the caller; when
   * too many are in flight (the daemon hangs), new ones are dropped and counted.
   */
  notify(method: string, params: object, timeoutMs: number, onError?: (error: unknown) => void): void {
    if (this.inFlightNotifications >= this.maxInFlight) {
      this.dropped++;
      return;
    }
    this.inFlightNotifications++;
    this.call(method, params, { timeoutMs })
      .catch((error) => {
        try {
          onError?.(error);
        } catch {
          // A failing error handler must not become an unhandled rejection.
        }
      })
      .finally(() => {
        this.inFlightNotifications--;
      });
  }

  /** Closes pooled connections. The client stays usable: the next call opens a new one. */
  close(): void {
    this.agent.destroy();
  }

  private dropIdleConnections(): void {
    for (const sockets of Object.values(this.agent.freeSockets)) {
      for (const socket of sockets ?? []) socket.destroy();
    }
  }

  private markUp(): void {
    const previous = this.health;
    this.health = "up";
    if (previous === "down") {
      this.logger?.info(`knowhub: the daemon at ${this.socketPath} is answering again`);
    }
    if (previous !== "up") this.checkProtocol();
  }

  private markUntrusted(error: UntrustedSocketError): void {
    if (this.health === "untrusted") return;
    this.health = "untrusted";
    this.logger?.warn(`knowhub: ${error.message}. KnowHub tools will report errors and hooks do nothing until it is fixed.`);
  }

  private markDown(error: UnreachableError | DeadlineError): void {
    if (this.health === "down") return;
    this.health = "down";
    this.logger?.warn(
      `knowhub: ${error.message}; KnowHub tools will report errors and hooks do nothing until it answers ` +
        `(${START_HINT}). The plugin reconnects by itself.`,
    );
  }

  /** Says once when the daemon speaks another protocol version than this stub. */
  private checkProtocol(): void {
    const body = JSON.stringify({ jsonrpc: "2.0", id: this.nextId++, method: "status", params: {} });
    this.send("status", body, { timeoutMs: 5_000 }, false).then(
      (status) => {
        const protocol = (status as { protocol?: unknown } | null)?.protocol;
        if (typeof protocol === "number" && protocol !== PROTOCOL_VERSION) {
          this.logger?.warn(
            `knowhub: the daemon speaks protocol ${protocol}, this plugin speaks ${PROTOCOL_VERSION}; ` +
              "update whichever is older (the daemon with ./install.sh, the plugin with `openclaw plugins update knowhub`)",
          );
        }
      },
      () => undefined,
    );
  }

  private send(method: string, body: string, options: CallOptions, retried: boolean): Promise<unknown> {
    return new Promise((resolve, reject) => {
      let settled = false;
      let gotResponse = false;
      const finish = (error: Error | null, value?: unknown) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        options.signal?.removeEventListener("abort", onAbort);
        if (error) reject(error);
        else resolve(value);
      };
      // Before the request exists, fail directly (`finish` needs the timer and listener below).
      if (options.signal?.aborted) {
        reject(abortError(options.signal));
        return;
      }
      try {
        const identity = verifySocket(this.socketPath);
        if (identity !== this.socketIdentity) {
          // The file was replaced (a restarted daemon, or someone else's): idle connections
          // lead to whatever listened before; new ones prove whoever listens now.
          this.dropIdleConnections();
          this.socketIdentity = identity;
        }
      } catch (error) {
        reject(error);
        return;
      }
      const req = http.request({
        agent: this.agent,
        socketPath: this.socketPath,
        method: "POST",
        path: "/",
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
        // Read by ProvingAgent when this request opens a connection.
        proofTimeoutMs: options.timeoutMs,
        proofFor: method,
      } as http.RequestOptions);
      const timer = setTimeout(() => {
        const error = new DeadlineError(method, options.timeoutMs, this.socketPath);
        req.destroy(error);
        finish(error);
      }, options.timeoutMs);
      // The request's socket keeps the process alive while it matters; the timer need not.
      timer.unref();
      const onAbort = () => {
        const error = abortError(options.signal!);
        req.destroy(error);
        finish(error);
      };
      options.signal?.addEventListener("abort", onAbort, { once: true });
      req.on("response", (res) => {
        gotResponse = true;
        res.setEncoding("utf8");
        let text = "";
        res.on("data", (chunk: string) => {
          text += chunk;
        });
        res.on("error", (error) => finish(new ProtocolError(`reading the daemon's answer failed: ${error.message}`)));
        res.on("end", () => {
          try {
            finish(null, parseResponse(res.statusCode ?? 0, text));
          } catch (error) {
            finish(error as Error);
          }
        });
      });
      req.on("error", (error: NodeJS.ErrnoException) => {
        if (settled) return;
        // Refused by the proof, the proof timed out, or the daemon was at its connection limit
        // (503): nothing of this call was sent.
        if (error instanceof UntrustedSocketError || error instanceof DeadlineError || error instanceof RpcError) {
          finish(error);
          return;
        }
        const code = error.code ?? "";
        // A pooled connection the daemon closed (idle timeout, restart): try once on a new one.
        if (!retried && !gotResponse && req.reusedSocket && STALE_SOCKET_CODES.has(code)) {
          settled = true;
          clearTimeout(timer);
          options.signal?.removeEventListener("abort", onAbort);
          this.send(method, body, options, true).then(resolve, reject);
          return;
        }
        // Before an answer, any failure (no socket, nobody listening, no permission, dropped
        // connection) means the daemon cannot be reached; an unparsable answer is another matter.
        if (gotResponse || code.startsWith("HPE_")) finish(new ProtocolError(`calling ${method} failed: ${error.message}`));
        else finish(new UnreachableError(this.socketPath, error));
      });
      req.end(body);
    });
  }
}

function parseResponse(status: number, text: string): unknown {
  let message: { result?: unknown; error?: { code?: unknown; message?: unknown; data?: unknown } };
  try {
    message = JSON.parse(text);
  } catch {
    throw new ProtocolError(`the daemon answered HTTP ${status} with a body that is not JSON: ${text.slice(0, 200)}`);
  }
  if (message && typeof message === "object" && message.error && typeof message.error === "object") {
    const { code, message: text_, data } = message.error;
    throw new RpcError(typeof code === "number" ? code : 0, typeof text_ === "string" ? text_ : "unknown error", data);
  }
  if (status !== 200) throw new ProtocolError(`the daemon answered HTTP ${status}`);
  if (!message || typeof message !== "object" || !("result" in message)) {
    throw new ProtocolError("the daemon's answer has neither result nor error");
  }
  return message.result;
}

function abortError(signal: AbortSignal): Error {
  const reason = signal.reason;
  if (reason instanceof Error) return reason;
  const error = new Error("the call was aborted");
  error.name = "AbortError";
  return error;
}
