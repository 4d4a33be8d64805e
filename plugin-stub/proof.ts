// The daemon's proof of identity, as crates/kb-proto/src/identity.rs defines it, with Node
// built-ins only.
//
// Node cannot read the uid of the process on the other end of a Unix socket (SO_PEERCRED), and
// the file checks it can make (the socket and its directory are the user's own) pass for
// another user's listener whose socket file was put there. So on every new connection, before
// anything else is written to it, the plugin sends a fresh random nonce (`daemon.prove`) and the
// daemon answers HMAC-SHA256(key, DOMAIN ‖ nonce) with the key it wrote at its start to
// `<socket>.key`, a file only the user can read. The plugin reads that file once answered (so a
// daemon started by this very connection has written its key), after checking that it is a
// regular file of its own, closed to others, not a symbolic link, and compares in constant
// time. A connection that fails the proof is closed: the listener got a nonce and nothing else.

import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
import type net from "node:net";

/** The method that proves the daemon (kb_proto::method::DAEMON_PROVE). */
export const PROVE_METHOD = "daemon.prove";
export const KEY_BYTES = 32;
export const NONCE_BYTES = 32;
/** Prepended to the nonce before it is authenticated (kb_proto::identity::DOMAIN). */
const DOMAIN = Buffer.from("knowhub daemon proof v1\0", "latin1");
/** The most a listener may send in answer to a proof: a real answer is ~100 bytes of JSON. */
const MAX_ANSWER_BYTES = 16 * 1024;

/** Where the daemon on `socketPath` keeps its key (kb_proto::identity::key_file). */
export function keyFilePath(socketPath: string): string {
  return `${socketPath}.key`;
}

/**
 * The listener did not prove that it is the user's own daemon; `reason` says how, in words of
 * the plugin's own (never text the listener sent, which could be an injection).
 */
export class ProofFailure extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = "ProofFailure";
  }
}

/**
 * The listener answered the proof with HTTP 503: a daemon at its connection limit says so to a
 * new connection before reading it. Nothing was proved and nothing else is sent; it is reported
 * as busy, not as a stranger, since a stranger gains nothing by it either.
 */
export class ProofBusy extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = "ProofBusy";
  }
}

/** The listener accepted the connection but did not answer the proof in time. */
export class ProofTimeout extends Error {
  readonly timeoutMs: number;
  constructor(timeoutMs: number) {
    super(`no answer to ${PROVE_METHOD} within ${timeoutMs} ms`);
    this.name = "ProofTimeout";
    this.timeoutMs = timeoutMs;
  }
}

/**
 * Reads the daemon's key beside `socketPath` after checking that it is a regular file (a
 * symbolic link is refused, not followed), owned by `uid`, closed to group and others, and 32
 * bytes long. Throws ProofFailure saying what is wrong. Without uids (Windows) only the file
 * type and length are checked.
 */
export function readKeyFile(socketPath: string, uid: number | undefined = process.getuid?.()): Buffer {
  const keyPath = keyFilePath(socketPath);
  let fd: number;
  try {
    // O_NONBLOCK: a FIFO planted there must not hang the plugin.
    fd = openSync(keyPath, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") {
      throw new ProofFailure(
        `its key file ${keyPath} does not exist (knowhubd writes it at each start; an older knowhubd does not: upgrade it)`,
      );
    }
    if (code === "ELOOP" || code === "EMLINK") throw new ProofFailure(`its key file ${keyPath} is a symbolic link`);
    throw new ProofFailure(`its key file ${keyPath} cannot be read (${code ?? (error as Error).message})`);
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new ProofFailure(`its key file ${keyPath} is not a regular file`);
    if (uid !== undefined) {
      if (stat.uid !== uid) {
        throw new ProofFailure(`its key file ${keyPath} belongs to uid ${stat.uid}, not to you (uid ${uid})`);
      }
      const mode = stat.mode & 0o777;
      if ((mode & 0o077) !== 0) {
        throw new ProofFailure(
          `its key file ${keyPath} is open to other users (mode ${mode.toString(8).padStart(4, "0")}, must be 0600)`,
        );
      }
    }
    if (stat.size !== KEY_BYTES) throw new ProofFailure(`its key file ${keyPath} holds ${stat.size} bytes, not ${KEY_BYTES}`);
    const key = Buffer.alloc(KEY_BYTES);
    const read = readSync(fd, key, 0, KEY_BYTES, 0);
    if (read !== KEY_BYTES) throw new ProofFailure(`its key file ${keyPath} holds ${read} bytes, not ${KEY_BYTES}`);
    return key;
  } finally {
    closeSync(fd);
  }
}

/** The answer the daemon holding `key` gives to `nonce`. */
export function expectedProof(key: Buffer, nonce: Buffer): Buffer {
  return createHmac("sha256", key).update(DOMAIN).update(nonce).digest();
}

/**
 * Proves the listener on the connected (or connecting) `socket`: one `daemon.prove` request
 * with a fresh nonce, its answer read here, the key file read and the answer compared. Resolves
 * when the listener is the user's daemon, with the socket ready for the HTTP client; rejects
 * with ProofFailure (not the user's daemon), ProofTimeout, or the connection's own error.
 * Nothing but the nonce is written to the socket.
 */
export function proveConnection(
  socket: net.Socket,
  socketPath: string,
  timeoutMs: number,
  uid: number | undefined = process.getuid?.(),
): Promise<void> {
  return new Promise((resolve, reject) => {
    const nonce = randomBytes(NONCE_BYTES);
    const body = JSON.stringify({ jsonrpc: "2.0", id: 0, method: PROVE_METHOD, params: { nonce: nonce.toString("hex") } });
    const request =
      "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n" +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: keep-alive\r\n\r\n${body}`;
    let received = Buffer.alloc(0);
    let settled = false;
    const done = (error?: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.removeListener("data", onData);
      socket.removeListener("error", onError);
      socket.removeListener("close", onClose);
      socket.removeListener("connect", send);
      if (error) reject(error);
      else resolve();
    };
    const onData = (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (received.length > MAX_ANSWER_BYTES) {
        done(new ProofFailure(`its answer to the identity check is longer than ${MAX_ANSWER_BYTES} bytes`));
        return;
      }
      let answer;
      try {
        answer = parseHttpResponse(received);
      } catch (error) {
        done(error as Error);
        return;
      }
      if (!answer) return;
      if (answer.rest.length > 0) {
        done(new ProofFailure("it sent more than the answer to the identity check"));
        return;
      }
      try {
        checkAnswer(answer.status, answer.body, nonce, socketPath, uid);
        done();
      } catch (error) {
        done(error as Error);
      }
    };
    const onError = (error: Error) => done(error);
    const onClose = () => {
      const error: NodeJS.ErrnoException = new Error("the connection closed before the identity check was answered");
      error.code = "ECONNRESET";
      done(error);
    };
    const send = () => {
      socket.write(request);
    };
    const timer = setTimeout(() => done(new ProofTimeout(timeoutMs)), timeoutMs);
    timer.unref();
    socket.on("data", onData);
    socket.on("error", onError);
    socket.on("close", onClose);
    if (socket.connecting) socket.once("connect", send);
    else send();
  });
}

/** Checks one answer to the proof; throws ProofFailure when it does not prove the daemon. */
function checkAnswer(status: number, body: Buffer, nonce: Buffer, socketPath: string, uid: number | undefined): void {
  if (status === 503) {
    throw new ProofBusy(`the daemon at ${socketPath} is at its connection limit (HTTP 503) and took no call`);
  }
  let message: { result?: { proof?: unknown }; error?: { code?: unknown } };
  try {
    message = JSON.parse(body.toString("utf8"));
  } catch {
    throw new ProofFailure(`its answer to the identity check (HTTP ${status}) is not JSON`);
  }
  if (message && typeof message === "object" && message.error && typeof message.error === "object") {
    const code = typeof message.error.code === "number" ? message.error.code : "without a code";
    const older = code === -32601 ? ` (a knowhubd older than this plugin does not know ${PROVE_METHOD}: upgrade it)` : "";
    throw new ProofFailure(`it answered the identity check with error ${code} (HTTP ${status})${older}`);
  }
  const proof = message?.result?.proof;
  if (status !== 200 || typeof proof !== "string" || !/^[0-9a-fA-F]{64}$/.test(proof)) {
    throw new ProofFailure(`its answer to the identity check (HTTP ${status}) is not a proof`);
  }
  const key = readKeyFile(socketPath, uid);
  if (!timingSafeEqual(Buffer.from(proof, "hex"), expectedProof(key, nonce))) {
    throw new ProofFailure(`its answer to the identity check does not match the key in ${keyFilePath(socketPath)}`);
  }
}

type HttpAnswer = { status: number; body: Buffer; rest: Buffer };

/**
 * One HTTP/1.1 response from the start of `data`: undefined while incomplete; ProofFailure when
 * it is not HTTP, or its body is delimited by the connection's end (which a keep-alive daemon
 * never does).
 */
export function parseHttpResponse(data: Buffer): HttpAnswer | undefined {
  const headEnd = data.indexOf("\r\n\r\n");
  if (headEnd < 0) return undefined;
  const lines = data.subarray(0, headEnd).toString("latin1").split("\r\n");
  const statusLine = /^HTTP\/1\.[01] (\d{3})(?: .*)?$/.exec(lines[0] ?? "");
  if (!statusLine) throw new ProofFailure("its answer to the identity check is not HTTP");
  const status = Number(statusLine[1]);
  let length: number | undefined;
  let chunked = false;
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(":");
    if (colon <= 0) throw new ProofFailure("its answer to the identity check has a malformed header");
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (name === "content-length") {
      if (!/^\d{1,9}$/.test(value) || (length !== undefined && length !== Number(value))) {
        throw new ProofFailure("its answer to the identity check has a malformed Content-Length");
      }
      length = Number(value);
    } else if (name === "transfer-encoding") {
      chunked = value.toLowerCase() === "chunked";
      if (!chunked) throw new ProofFailure("its answer to the identity check has an unknown Transfer-Encoding");
    }
  }
  let offset = headEnd + 4;
  if (chunked) {
    const chunks: Buffer[] = [];
    for (;;) {
      const lineEnd = data.indexOf("\r\n", offset);
      if (lineEnd < 0) return undefined;
      const size = Number.parseInt(data.subarray(offset, lineEnd).toString("latin1").split(";")[0].trim(), 16);
      if (!Number.isSafeInteger(size) || size < 0) throw new ProofFailure("its answer to the identity check has a malformed chunk");
      offset = lineEnd + 2;
      if (size === 0) {
        // Trailers, then an empty line.
        for (;;) {
          const trailerEnd = data.indexOf("\r\n", offset);
          if (trailerEnd < 0) return undefined;
          const empty = trailerEnd === offset;
          offset = trailerEnd + 2;
          if (empty) return { status, body: Buffer.concat(chunks), rest: data.subarray(offset) };
        }
      }
      if (data.length < offset + size + 2) return undefined;
      chunks.push(data.subarray(offset, offset + size));
      offset += size + 2;
    }
  }
  if (length === undefined) throw new ProofFailure("its answer to the identity check has no length");
  if (data.length < offset + length) return undefined;
  return { status, body: data.subarray(offset, offset + length), rest: data.subarray(offset + length) };
}
