// Benchmark: the hook round trip from Node through the stub to a running knowhubd and back,
// for before_prompt_build (a waiting hook) and after_tool_call (fire-and-forget; here timed to
// the daemon's answer). Prints p50/p90/p99/max in microseconds. Not a test.
//
//   KNOWHUB_SOCKET=/path/to/knowhubd.sock node plugin-stub/bench/hooks.mjs [events=10000]
//
// Runs with Node >= 22.18 (it imports the TypeScript sources); the goal is p50 <= 100 µs and
// p99 <= 500 µs for hooks that need no embedding (auto-recall is off here).

import { performance } from "node:perf_hooks";

import { KnowhubClient, resolveSocketPath } from "../client.ts";
import { envelope, hookHandler } from "../hooks.ts";
import { hookConfigOf, resolveConfig } from "../index.ts";

const events = Number(process.argv[2] ?? 10_000);
const socketPath = resolveSocketPath(process.env.KNOWHUB_SOCKET);
const config = resolveConfig({ autoRecall: false, reminderMode: "normal" });
const hookConfig = hookConfigOf(config);
const client = new KnowhubClient({ socketPath, logger: console });
const options = { client, config: hookConfig, hookTimeoutMs: 1_000, logger: console };

const ctx = {
  runId: "run-1",
  agentId: "main",
  sessionKey: "agent:main:bench",
  sessionId: "8d1f6c1e-bench",
  workspaceDir: "/home/user/project",
  modelProviderId: "openai",
  modelId: "gpt-5",
  trigger: "user",
};
const messages = [
  { role: "user", content: "Set up vitest so the tests run once in CI." },
  { role: "assistant", content: "I will check the package.json scripts first." },
  { role: "toolResult", toolName: "read", content: '{ "scripts": { "test": "vitest" } }' },
];
const promptEvent = { prompt: "Set up vitest so the tests run once in CI.", currentUserMessage: messages[0], messages };
const toolEvent = {
  toolName: "exec",
  toolCallId: "call-1",
  params: { command: "npx vitest --run" },
  result: { exitCode: 0, stdout: "Test Files  12 passed (12)\n     Tests  148 passed (148)" },
  durationMs: 2140,
};

function summary(name, micros) {
  micros.sort((a, b) => a - b);
  const at = (q) => micros[Math.min(micros.length - 1, Math.floor(q * micros.length))].toFixed(1);
  console.log(
    `${name.padEnd(44)} n=${micros.length}  p50=${at(0.5)} µs  p90=${at(0.9)} µs  p99=${at(0.99)} µs  max=${micros[micros.length - 1].toFixed(1)} µs`,
  );
}

async function measure(name, once) {
  for (let i = 0; i < Math.min(1_000, events); i++) await once(i); // warm up: JIT, pooled socket
  const micros = new Array(events);
  for (let i = 0; i < events; i++) {
    const start = performance.now();
    await once(i);
    micros[i] = (performance.now() - start) * 1_000;
  }
  summary(name, micros);
}

try {
  await client.call("status", {}, { timeoutMs: 2_000 });
} catch (error) {
  console.error(`no daemon answering at ${socketPath}: ${error.message}`);
  process.exit(1);
}
const probe = await client.call("hook.event", envelope("session_start", {}, ctx, hookConfig), { timeoutMs: 2_000 }).catch((error) => error);
if (probe instanceof Error) console.error(`note: hook.event answered an error (${probe.message}); timing the error path`);

console.log(`knowhubd at ${socketPath}, ${events} events each, one at a time`);
const beforePromptBuild = hookHandler("before_prompt_build", "modify", options);
await measure("before_prompt_build (handler, awaited)", () => beforePromptBuild(promptEvent, ctx));
await measure("after_tool_call (envelope + call, to answer)", () =>
  client.call("hook.event", envelope("after_tool_call", toolEvent, ctx, hookConfig), { timeoutMs: 1_000 }).catch(() => undefined),
);
client.close();
