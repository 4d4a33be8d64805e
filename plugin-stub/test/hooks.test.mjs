// Hook forwarding through the registered handlers against a recording JSON-RPC server on a
// temp Unix socket: every hook is forwarded as the envelope, answers are mapped, and a dead or
// hanging daemon costs nothing beyond the deadline.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { HOOKS } from "../hooks.ts";
import { register } from "../index.ts";
import { RecordingServer, fakeApi, sleep, timed, until } from "./helpers.mjs";

const CTX = {
  agentId: "main",
  sessionKey: "agent:main:main",
  sessionId: "s-1",
  config: { gateway: { auth: { token: "do-not-forward" } } },
  abortSignal: new AbortController().signal,
};

let server;
before(async () => {
  server = new RecordingServer((request) => {
    const hook = request.params?.hook;
    if (hook === "before_prompt_build") return { result: { action: "allow", prependContext: `intro for ${request.params.event.prompt}` } };
    if (hook === "before_agent_run" && request.params.event.prompt === "forbidden") return { result: { action: "block", reason: "no" } };
    if (hook === "before_tool_call" && request.params.event.toolName === "rm") return { result: { action: "block", reason: "dangerous" } };
    if (hook === "before_dispatch") return { result: { action: "allow", handled: true, text: "claimed" } };
    if (hook === "inbound_claim") return { result: { action: "allow", handled: false } };
    return { result: { action: "allow" } };
  });
  await server.listen();
});
after(async () => {
  await server.dispose();
});

function plugin(config = {}) {
  const api = fakeApi({ socketPath: server.socket, ...config });
  register(api);
  return api;
}

test("every hook is forwarded as hook.event {hook, timestamp, event, ctx, config}, without config or signals", async () => {
  const api = plugin({ reminderMode: "aggressive", autoRecall: false, submittedBy: "me" });
  server.requests.length = 0;
  const results = {};
  for (const hook of Object.keys(HOOKS)) {
    const value = api.hooks.get(hook)({ marker: hook, prompt: "p" }, CTX);
    if (HOOKS[hook] === "sync") assert.equal(value, undefined, `${hook} returns synchronously`);
    results[hook] = await value;
  }
  await until(() => server.events.length >= Object.keys(HOOKS).length, 5_000, "all hooks to arrive");
  const seen = server.events.map((event) => event.hook).sort();
  assert.deepEqual(seen, Object.keys(HOOKS).sort());
  for (const params of server.events) {
    assert.deepEqual(Object.keys(params).sort(), ["config", "ctx", "event", "hook", "timestamp"]);
    assert.equal(params.event.marker, params.hook);
    assert.equal(typeof params.timestamp, "number");
    assert.deepEqual(params.ctx, { agentId: "main", sessionKey: "agent:main:main", sessionId: "s-1" });
    assert.deepEqual(params.config, {
      reminderMode: "aggressive",
      autoRecall: false,
      privacyMode: "strict",
      enableServerExtraction: false,
      extractionTrigger: "agent_end",
      requireApproval: true,
      submittedBy: "me",
    });
  }
  assert.ok(!JSON.stringify(server.requests).includes("do-not-forward"));
  // The answers come back mapped per kind.
  assert.deepEqual(results.before_prompt_build, { prependContext: "intro for p" });
  assert.deepEqual(results.before_dispatch, { handled: true, text: "claimed" });
  assert.equal(results.inbound_claim, undefined);
  assert.equal(results.before_agent_run, undefined);
  assert.equal(results.before_tool_call, undefined);
  for (const [hook, kind] of Object.entries(HOOKS)) if (kind === "observe") assert.equal(results[hook], undefined, hook);
});

test("gates block only when the daemon says block", async () => {
  const api = plugin();
  assert.deepEqual(await api.hooks.get("before_agent_run")({ prompt: "forbidden" }, CTX), { outcome: "block", reason: "no" });
  assert.equal(await api.hooks.get("before_agent_run")({ prompt: "fine" }, CTX), undefined);
  assert.deepEqual(await api.hooks.get("before_tool_call")({ toolName: "rm", params: {} }, CTX), { block: true, blockReason: "dangerous" });
  assert.equal(await api.hooks.get("before_tool_call")({ toolName: "ls", params: {} }, CTX), undefined);
});

test("a hanging daemon: waiting hooks return nothing within their deadline, observers return at once", async () => {
  const hanging = new RecordingServer(() => ({ hang: true }));
  await hanging.listen();
  try {
    const api = fakeApi({ socketPath: hanging.socket, hookTimeoutMs: 150 });
    register(api);
    for (const hook of ["before_prompt_build", "before_agent_run", "before_tool_call", "before_dispatch", "message_sending"]) {
      const { value, ms } = await timed(api.hooks.get(hook)({ prompt: "p", toolName: "x" }, CTX));
      assert.equal(value, undefined, hook);
      assert.ok(ms >= 140 && ms < 600, `${hook} took ${ms.toFixed(0)} ms, deadline 150 ms`);
    }
    for (const hook of ["after_tool_call", "agent_end", "llm_output", "tool_result_persist", "before_message_write"]) {
      const { ms } = await timed(Promise.resolve(api.hooks.get(hook)({}, CTX)));
      assert.ok(ms < 20, `${hook} took ${ms.toFixed(1)} ms`);
    }
    const warnings = api.warnings();
    assert.equal(warnings.length, 1, `one warning, not one per event: ${JSON.stringify(warnings)}`);
    assert.match(warnings[0], /did not answer hook\.event within 150 ms/);
  } finally {
    await hanging.dispose();
  }
});

test("fire-and-forget events in flight are bounded while the daemon hangs", async () => {
  const hanging = new RecordingServer(() => ({ hang: true }));
  await hanging.listen();
  try {
    const api = fakeApi({ socketPath: hanging.socket });
    register(api);
    for (let i = 0; i < 500; i++) api.hooks.get("after_tool_call")({ i }, CTX);
    await sleep(300);
    assert.ok(hanging.requests.length <= 64, `${hanging.requests.length} requests reached the daemon`);
  } finally {
    await hanging.dispose();
  }
});

test("a dead daemon: hooks return nothing at once, one warning, and the stub reconnects when it is back", async () => {
  const flaky = new RecordingServer((request) =>
    request.params?.hook === "before_prompt_build" ? { result: { action: "allow", prependContext: "back" } } : { result: { action: "allow" } },
  );
  await flaky.listen();
  try {
    const api = fakeApi({ socketPath: flaky.socket, hookTimeoutMs: 1_000 });
    register(api);
    const build = api.hooks.get("before_prompt_build");
    assert.deepEqual(await build({ prompt: "p" }, CTX), { prependContext: "back" });
    await flaky.close();
    for (let i = 0; i < 20; i++) {
      const { value, ms } = await timed(build({ prompt: "p" }, CTX));
      assert.equal(value, undefined);
      assert.ok(ms < 200, `took ${ms.toFixed(0)} ms with the daemon down`);
      api.hooks.get("after_tool_call")({ i }, CTX);
    }
    await sleep(50);
    const warnings = api.warnings();
    assert.equal(warnings.length, 1, JSON.stringify(warnings));
    assert.match(warnings[0], /not reachable at .*rec\.sock.*kbctl service install.*knowhubd.*reconnects by itself/);
    await flaky.listen();
    assert.deepEqual(await build({ prompt: "p" }, CTX), { prependContext: "back" });
    assert.ok(api.logs.some(([level, message]) => level === "info" && /answering again/.test(message)));
    assert.equal(api.warnings().length, 1);
  } finally {
    await flaky.dispose();
  }
});

test("a daemon without hook.event: hooks return nothing and one warning says to update it", async () => {
  const old = new RecordingServer(() => ({ error: { code: -32601, message: "Method not found" } }));
  await old.listen();
  try {
    const api = fakeApi({ socketPath: old.socket });
    register(api);
    assert.equal(await api.hooks.get("before_prompt_build")({ prompt: "p" }, CTX), undefined);
    api.hooks.get("after_tool_call")({}, CTX);
    assert.equal(await api.hooks.get("before_agent_run")({ prompt: "p" }, CTX), undefined);
    await sleep(50);
    const warnings = api.warnings();
    assert.equal(warnings.length, 1, JSON.stringify(warnings));
    assert.match(warnings[0], /older than this plugin.*update it/);
  } finally {
    await old.dispose();
  }
});

test("a huge agent_end history is capped before it leaves the process", async () => {
  server.requests.length = 0;
  const api = plugin();
  const messages = Array.from({ length: 2_000 }, (_, i) => ({ role: i % 2 ? "assistant" : "user", content: "z".repeat(20_000) + i }));
  api.hooks.get("agent_end")({ messages, success: true }, CTX);
  const [params] = await until(() => server.events.length > 0 && server.events, 5_000, "agent_end to arrive");
  assert.equal(params.hook, "agent_end");
  assert.equal(params.event.messages.length, 200);
  const size = JSON.stringify(params).length;
  assert.ok(size < 1_300_000, `${size} bytes`);
});
