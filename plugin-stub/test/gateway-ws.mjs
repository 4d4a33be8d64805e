// A bare client of the OpenClaw gateway's WebSocket protocol (Node's own WebSocket), for tests
// that call gateway methods the way a stranger would: without credentials, with a wrong token,
// from another origin, or without the scopes a method needs.

/** Opens a connection and sends `connect`; resolves to {hello} or {error}, and the connection. */
export async function gatewayConnect(port, { token, scopes = ["operator.read", "operator.write"], origin, client } = {}) {
  const socket = new WebSocket(`ws://127.0.0.1:${port}/`, origin ? { headers: { origin } } : undefined);
  const conn = new GatewayConnection(socket);
  const opened = await new Promise((resolve) => {
    socket.addEventListener("open", () => resolve(true), { once: true });
    socket.addEventListener("error", () => resolve(false), { once: true });
    socket.addEventListener("close", () => resolve(false), { once: true });
  });
  if (!opened) return { conn, error: { message: "the WebSocket was refused" } };
  await conn.challenge.catch(() => undefined);
  try {
    const hello = await conn.request("connect", {
      minProtocol: 4,
      maxProtocol: 4,
      client: client ?? { id: "cli", version: "0.0.0", platform: "linux", mode: "cli" },
      role: "operator",
      scopes,
      caps: [],
      ...(token === undefined ? {} : { auth: { token } }),
    });
    return { conn, hello };
  } catch (error) {
    return { conn, error };
  }
}

export class GatewayConnection {
  constructor(socket) {
    this.socket = socket;
    this.nextId = 1;
    this.waiting = new Map();
    this.closed = false;
    this.challenge = new Promise((resolve, reject) => {
      this.onChallenge = resolve;
      setTimeout(() => reject(new Error("no connect.challenge")), 5_000);
    });
    socket.addEventListener("message", (event) => {
      let frame;
      try {
        frame = JSON.parse(event.data);
      } catch {
        return;
      }
      if (frame.type === "event" && frame.event === "connect.challenge") this.onChallenge(frame.payload);
      if (frame.type === "res") {
        const pending = this.waiting.get(frame.id);
        this.waiting.delete(frame.id);
        if (frame.ok) pending?.resolve(frame.payload);
        else pending?.reject(Object.assign(new Error(frame.error?.message ?? "refused"), { gateway: frame.error }));
      }
    });
    socket.addEventListener("close", (event) => {
      this.closed = true;
      for (const pending of this.waiting.values()) pending.reject(Object.assign(new Error(`connection closed (${event.code} ${event.reason})`), { closed: true }));
      this.waiting.clear();
    });
  }

  /** One request; rejects with the gateway's error, or when the connection closes first. */
  request(method, params = {}, timeoutMs = 20_000) {
    if (this.closed) return Promise.reject(Object.assign(new Error("connection closed"), { closed: true }));
    const id = `t${this.nextId++}`;
    const answer = new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      setTimeout(() => {
        if (this.waiting.delete(id)) reject(new Error(`no answer to ${method} in ${timeoutMs} ms`));
      }, timeoutMs);
    });
    this.socket.send(JSON.stringify({ type: "req", id, method, params }));
    return answer;
  }

  close() {
    this.socket.close();
  }
}
