// Benchmark: what KnowHub adds to a 10-turn agent session with tool use, per reminderMode, and
// what its hooks cost per turn. The plugin's real hook handlers talk to a running knowhubd and
// replay the hook sequence OpenClaw 2026.9.6 fires for a turn (recorded from real
// `openclaw agent` runs): before_agent_reply, before_model_resolve, agent_turn_prepare,
// before_prompt_build, before_agent_run, llm_input, then per model call model_call_started /
// model_call_ended and per tool call before_tool_call / after_tool_call, then
// before_agent_finalize, agent_end (with the whole history) and llm_output. Each turn makes two
// model calls around one exec call; one turn in the middle submits. Not a test.
//
// "Before" is the behaviour issue 11 found: the session reset at every agent_end, so intro and
// auto-recall came with every turn. It is reproduced by ending the session after each turn
// (before_reset), which the new daemon treats as the end of the session.
//
//   KNOWHUB_SOCKET=/path/to/knowhubd.sock node plugin-stub/bench/session.mjs
//
// Prints characters (and tokens estimated at 4 characters each) injected per session and the
// hook cost per turn (all handlers of a turn, awaited ones waited for, observers to their answer).

import { performance } from "node:perf_hooks";

import { KnowhubClient, resolveSocketPath } from "../client.ts";
import { hookHandler, HOOKS } from "../hooks.ts";
import { hookConfigOf, resolveConfig } from "../index.ts";

const TURNS = 10;
const socketPath = resolveSocketPath(process.env.KNOWHUB_SOCKET);
const client = new KnowhubClient({ socketPath, logger: console });

try {
  await client.call("status", {}, { timeoutMs: 2_000 });
} catch (error) {
  console.error(`no daemon answering at ${socketPath}: ${error.message}`);
  process.exit(1);
}

// Experiences for auto-recall to find, as a store in use would hold.
const seed = [
  ["Run the vitest suite once in CI", "vitest --run", "Exits when done instead of watching"],
  ["Cache the pnpm store in GitHub Actions", "actions/cache with pnpm store path", "Install time halved"],
  ["Fix flaky vitest timers", "vi.useFakeTimers()", "Deterministic timeouts in tests"],
];
for (const [task, resource, result] of seed) {
  await client.call("kb.submit", { task, resource, result, score: 4, source: "tool" }, { timeoutMs: 10_000 });
}

const PROMPTS = [
  "Set up vitest so the tests run once in CI",
  "Now make the flaky timer test deterministic",
  "Cache dependencies in the GitHub Actions workflow",
  "Add a coverage report",
  "Fix the lint errors",
  "Rename the test helpers",
  "Update the README",
  "Run the whole suite again",
  "Bump the dependencies",
  "Summarize what changed",
];

function handlers(reminderMode) {
  const config = hookConfigOf(resolveConfig({ reminderMode, autoRecall: true }));
  const options = { client, config, hookTimeoutMs: 2_000, notifyTimeoutMs: 2_000 };
  const waiting = {};
  for (const [hook, kind] of Object.entries(HOOKS)) waiting[hook] = hookHandler(hook, kind, options);
  return { config, waiting };
}

/** An observer's envelope, waited for (the real handler returns at once; here its cost is timed). */
function observe(hook, event, ctx, config) {
  return client.call("hook.event", { hook, timestamp: Date.now(), event, ctx, config }, { timeoutMs: 2_000 });
}

async function session(reminderMode, { resetEachTurn }) {
  const { config, waiting } = handlers(reminderMode);
  const sessionKey = `agent:main:bench-${reminderMode}-${resetEachTurn ? "before" : "after"}-${Date.now()}`;
  const ctx = { runId: "run", agentId: "main", sessionKey, sessionId: `${sessionKey}-id`, trigger: "user" };
  const history = [];
  let chars = 0;
  let intros = 0;
  let reminders = 0;
  let recalls = 0;
  const turnMs = [];
  for (let turn = 0; turn < TURNS; turn++) {
    const prompt = PROMPTS[turn];
    const started = performance.now();
    await waiting.before_agent_reply({ cleanedBody: prompt }, ctx);
    await waiting.before_model_resolve({ prompt }, ctx);
    await waiting.agent_turn_prepare({ prompt, messages: history, queuedInjections: [] }, ctx);
    const built = await waiting.before_prompt_build({ prompt, messages: history }, ctx);
    const injected = built?.prependContext ?? "";
    chars += injected.length;
    intros += injected.includes("KnowHub is available") ? 1 : 0;
    reminders += injected.includes("KnowHub reminder") ? 1 : 0;
    recalls += injected.includes("<knowhub-experiences>") ? 1 : 0;
    await waiting.before_agent_run({ prompt, messages: history, systemPrompt: "s".repeat(30_000) }, ctx);
    await observe("llm_input", { prompt, model: "m" }, ctx, config);
    history.push({ role: "user", content: prompt });
    const tool = turn === 5 ? "kb_submit" : "exec";
    for (let call = 0; call < 2; call++) {
      await observe("model_call_started", { runId: "run", callId: `run:model:${call}`, sessionKey }, ctx, config);
      await observe("model_call_ended", { runId: "run", callId: `run:model:${call}`, durationMs: 900 }, ctx, config);
      if (call === 0) {
        const params = tool === "exec" ? { command: "npx vitest --run" } : { task: "t", resource: "r", result: "x" };
        await waiting.before_tool_call({ toolName: tool, params, toolCallId: `call-${turn}` }, ctx);
        const result = { content: [{ type: "text", text: "Test Files 12 passed (12)\n".repeat(20) }] };
        await observe("after_tool_call", { toolName: tool, params, toolCallId: `call-${turn}`, result, durationMs: 2_000 }, ctx, config);
        history.push({ role: "assistant", content: [{ type: "toolCall", name: tool, arguments: params }] }, { role: "toolResult", content: result.content });
      }
    }
    history.push({ role: "assistant", content: [{ type: "text", text: "Done: the suite runs once and exits." }] });
    await waiting.before_agent_finalize({ sessionId: ctx.sessionId, messages: history }, ctx);
    await observe("agent_end", { runId: "run", messages: history, success: true, durationMs: 5_000 }, ctx, config);
    await observe("llm_output", { assistantTexts: ["Done"], usage: { input: 1000, output: 50 } }, ctx, config);
    turnMs.push(performance.now() - started);
    if (resetEachTurn) await observe("before_reset", { reason: "bench: the old per-turn reset" }, ctx, config);
  }
  turnMs.sort((a, b) => a - b);
  return { chars, intros, reminders, recalls, p50: turnMs[Math.floor(TURNS / 2)], max: turnMs.at(-1) };
}

const line = (label, r) =>
  `${label.padEnd(30)} ${String(r.chars).padStart(6)} chars ~${String(Math.round(r.chars / 4)).padStart(5)} tokens` +
  `  intros ${r.intros}  reminders ${r.reminders}  recalls ${r.recalls}` +
  `  hook cost per turn p50 ${r.p50.toFixed(1)} ms, max ${r.max.toFixed(1)} ms`;

console.log(`knowhubd at ${socketPath}; a ${TURNS}-turn session, 2 model calls and 1 tool call per turn, kb_submit in turn 6`);
const before = await session("normal", { resetEachTurn: true });
console.log(line("before (reset every turn)", before));
const perTurnBefore = before.chars / TURNS;
for (const mode of ["off", "minimal", "normal", "aggressive"]) {
  const result = await session(mode, { resetEachTurn: false });
  console.log(
    `${line(`now, reminderMode ${mode}`, result)}  = ${(result.chars / perTurnBefore).toFixed(2)} turns of before`,
  );
}
client.close();
