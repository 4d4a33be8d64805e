// Benchmark: what the daemon's proof costs the plugin. A new connection with its proof (connect,
// `daemon.prove`, the key file read and compared), a call on a new connection with and without
// the proof, and a call on a kept-alive connection, which pays no proof. Prints p50/p99 in ms.
// Not a test.
//
//   KNOWHUB_SOCKET=/path/to/knowhubd.sock node plugin-stub/bench/proof.mjs [rounds=300]
//
// Runs with Node >= 22.18 (it imports the TypeScript sources).

import http from "node:http";
import net from "node:net";
import { performance } from "node:perf_hooks";

import { KnowhubClient, resolveSocketPath } from "../client.ts";
import { proveConnection } from "../proof.ts";

const rounds = Number(process.argv[2] ?? 300);
const socketPath = resolveSocketPath(process.env.KNOWHUB_SOCKET);
const percentile = (values, p) => values.slice().sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))];
const summary = (values) => `p50 ${percentile(values, 0.5).toFixed(3)} ms, p99 ${percentile(values, 0.99).toFixed(3)} ms`;

async function timed(times, run) {
  const values = [];
  for (let round = 0; round < times; round++) {
    const start = performance.now();
    await run();
    values.push(performance.now() - start);
  }
  return values;
}

const proofs = await timed(rounds, async () => {
  const socket = net.connect({ path: socketPath });
  await proveConnection(socket, socketPath, 5_000);
  socket.destroy();
});
const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "kb.list", params: { limit: 1 } });
const bare = await timed(rounds, () =>
  new Promise((resolve, reject) => {
    const req = http.request({ socketPath, method: "POST", path: "/", agent: false, headers: { "content-type": "application/json" } }, (res) => {
      res.resume();
      res.on("end", resolve);
    });
    req.on("error", reject);
    req.end(body);
  }),
);
const fresh = await timed(rounds, async () => {
  const client = new KnowhubClient({ socketPath });
  await client.call("kb.list", { limit: 1 }, { timeoutMs: 5_000 });
  client.close();
});
const client = new KnowhubClient({ socketPath });
await client.call("kb.list", { limit: 1 }, { timeoutMs: 5_000 });
const kept = await timed(rounds * 3, () => client.call("kb.list", { limit: 1 }, { timeoutMs: 5_000 }));
client.close();

console.log(`connect + proof: ${summary(proofs)}`);
console.log(`kb.list on a new connection, proof included: ${summary(fresh)}`);
console.log(`kb.list on a new connection without the proof (plain http): ${summary(bare)}`);
console.log(`kb.list on a kept-alive connection (no proof): ${summary(kept)}`);
