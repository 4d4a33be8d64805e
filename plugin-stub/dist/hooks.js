// Generated from hooks.ts by scripts/build.mjs: do not edit.
// The hook table: every typed OpenClaw hook, how it runs, and how it is forwarded to the daemon
// as the uniform envelope `hook.event {hook, timestamp, event, ctx, config}` and answered.

/** All 42 typed hooks of openclaw@2026.9.6 (src/plugins/hook-types.ts), with their kind. */
export const HOOKS = {
  before_model_resolve: "modify",
  agent_turn_prepare: "modify",
  before_prompt_build: "modify",
  before_agent_run: "gate",
  before_agent_reply: "claim",
  before_agent_finalize: "modify",
  agent_end: "observe",
  heartbeat_prompt_contribution: "modify",
  model_call_started: "observe",
  model_call_ended: "observe",
  llm_input: "observe",
  llm_output: "observe",
  before_tool_call: "modify",
  after_tool_call: "observe",
  resolve_exec_env: "modify",
  tool_result_persist: "sync",
  before_message_write: "sync",
  inbound_claim: "claim",
  before_dispatch: "claim",
  reply_dispatch: "claim",
  channel_pairing_requested: "observe",
  message_received: "observe",
  message_sending: "modify",
  reply_payload_sending: "modify",
  message_sent: "observe",
  session_start: "observe",
  session_end: "observe",
  before_reset: "observe",
  before_compaction: "observe",
  after_compaction: "observe",
  subagent_spawned: "observe",
  subagent_progress: "observe",
  subagent_ended: "observe",
  subagent_delivery_target: "modify",
  gateway_start: "observe",
  gateway_stop: "observe",
  cron_reconciled: "observe",
  cron_changed: "observe",
  before_install: "modify",
  skill_proposal_evaluate: "modify",
  skill_proposal_changed: "observe",
  skill_changed: "observe",
};

/** What a blocking answer becomes, for the hooks that can block (or cancel). */
const BLOCK_SHAPES = {
  before_agent_run: (reason, answer) => ({
    outcome: "block",
    reason,
    ...(typeof answer.message === "string" ? { message: answer.message } : {}),
  }),
  before_tool_call: (reason) => ({ block: true, blockReason: reason }),
  message_sending: (reason) => ({ cancel: true, cancelReason: reason }),
  reply_payload_sending: (reason) => ({ cancel: true, reason }),
  before_install: (reason, answer) => ({
    block: true,
    blockReason: reason,
    ...(Array.isArray(answer.findings) ? { findings: answer.findings } : {}),
  }),
};

/** Maps the daemon's answer to what the hook returns to OpenClaw (undefined: nothing). */
export function mapAnswer(hook, kind, answer) {
  if (!answer || typeof answer !== "object" || Array.isArray(answer)) return undefined;
  const reply = answer;
  const block = BLOCK_SHAPES[hook];
  if (reply.action === "block" && block) {
    const reason =
      [reply.reason, reply.blockReason, reply.cancelReason].find((text) => typeof text === "string" && text !== "") ??
      "blocked by KnowHub";
    return block(reason, reply);
  }
  if (kind === "gate") return undefined;
  const { action: _action, ...fields } = reply;
  if (kind === "claim") return fields.handled === true ? fields : undefined;
  if (kind === "modify") return Object.keys(fields).length > 0 ? fields : undefined;
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// The envelope

/** Keys never forwarded: configuration can hold secrets; signals are process-local. */
const STRIPPED_KEYS = new Set(["config", "runtimeConfig", "pluginConfig", "abortSignal"]);

/** Caps for one envelope: about 1 MB of text at most, however large the event. */
export const DEFAULT_LIMITS = { maxString: 16_384, maxArray: 200, maxKeys: 256, maxDepth: 12, budget: 1_000_000 };

/**
 * A JSON-safe copy of `value` for the envelope: functions, symbols, AbortSignals and the keys
 * in STRIPPED_KEYS are left out; dates, bigints, errors, maps, sets and binary data become plain
 * JSON; cycles, depth, long strings, long arrays and the total size are capped. Arrays keep
 * their most recent items, and recent items get the size budget first.
 */
export function sanitize(value, limits = DEFAULT_LIMITS) {
  const state = { budget: limits.budget, seen: new WeakSet () };
  return copy(value, 0, limits, state);
}

function copy(value, depth, limits, state) {
  switch (typeof value) {
    case "string":
      return capString(value, limits, state);
    case "number":
      return Number.isFinite(value) ? value : null;
    case "boolean":
      return value;
    case "bigint":
      return value.toString();
    case "undefined":
    case "function":
    case "symbol":
      return undefined;
  }
  if (value === null) return null;
  const object = value;
  if (object instanceof Date) return Number.isNaN(object.getTime()) ? null : object.toISOString();
  if (typeof AbortSignal !== "undefined" && object instanceof AbortSignal) return undefined;
  if (ArrayBuffer.isView(object) || object instanceof ArrayBuffer) return `[${object.byteLength} bytes]`;
  if (depth >= limits.maxDepth) return "[nested too deep]";
  if (state.seen.has(object)) return "[circular]";
  state.seen.add(object);
  try {
    if (object instanceof Error) {
      return { name: capString(object.name, limits, state), message: capString(object.message, limits, state) };
    }
    if (Array.isArray(object) || object instanceof Set) {
      const items = Array.isArray(object) ? object : [...object];
      const start = Math.max(0, items.length - limits.maxArray);
      const out = new Array(items.length - start);
      // Newest first, so the most recent items get the budget when it runs short.
      for (let i = items.length - 1; i >= start; i--) {
        const item = copy(items[i], depth + 1, limits, state);
        out[i - start] = item === undefined ? null : item;
      }
      return out;
    }
    const entries =
      object instanceof Map ? object.entries() : Object.entries(object);
    const out = {};
    let keys = 0;
    for (const [key, item] of entries) {
      if (typeof key !== "string" || STRIPPED_KEYS.has(key)) continue;
      if (keys >= limits.maxKeys) {
        out["…"] = "[more keys omitted]";
        break;
      }
      const copied = copy(item, depth + 1, limits, state);
      if (copied !== undefined) {
        out[key] = copied;
        keys++;
      }
    }
    return out;
  } catch {
    return "[unreadable]";
  } finally {
    state.seen.delete(object);
  }
}

function capString(text, limits, state) {
  const keep = Math.min(limits.maxString, Math.max(0, state.budget));
  if (text.length <= keep) {
    state.budget -= text.length;
    return text;
  }
  state.budget -= keep;
  return `${text.slice(0, keep)}…[truncated ${text.length - keep} chars]`;
}

/**
 * Event keys not forwarded for some hooks: the session's whole history (and the system prompt
 * and tool schemas) that OpenClaw hands to hooks fired on every turn or model call. The daemon
 * does not use them there, the turn waits for prompt hooks, and `agent_end` carries the history
 * once per turn anyway.
 */
export const OMITTED_EVENT_KEYS = {
  before_prompt_build: ["messages"],
  agent_turn_prepare: ["messages"],
  before_agent_run: ["messages", "systemPrompt"],
  llm_input: ["historyMessages", "systemPrompt", "tools"],
};

/** The `hook.event` params for one hook call. */
export function envelope(hook, event, ctx, config, limits = DEFAULT_LIMITS) {
  const state = { budget: limits.budget, seen: new WeakSet () };
  const omitted = OMITTED_EVENT_KEYS[hook];
  if (omitted && event !== null && typeof event === "object" && !Array.isArray(event)) {
    const kept = {};
    for (const [key, value] of Object.entries(event)) if (!omitted.includes(key)) kept[key] = value;
    event = kept;
  }
  return {
    hook,
    timestamp: Date.now(),
    event: asObject(copy(event, 0, limits, state)),
    ctx: asObject(copy(ctx, 0, limits, state)),
    config,
  };
}

function asObject(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value) ? value : { value: value ?? null };
}

// ---------------------------------------------------------------------------------------------
// Registration

/** A handler that forwards `hook` as its kind requires. Never throws. */
export function hookHandler(
  hook,
  kind,
  options,
  warned = new Set(),
) {
  const { client, config, hookTimeoutMs, logger } = options;
  const notifyTimeoutMs = options.notifyTimeoutMs ?? 10_000;
  // Unreachable and slow daemons are reported by the client, once; this reports the daemon
  // refusing hook events, once per error code.
  const onError = (error) => {
    const code = (error)?.kind === "rpc" ? (error).code : undefined;
    if (code === undefined || warned.has(code)) return;
    warned.add(code);
    const why = code === -32601 ? "the daemon is older than this plugin and does not take hook events; update it" : (error).message;
    logger?.warn(`knowhub: hook events are not handled (${hook}: ${why}); tools still work`);
  };
  if (kind === "observe" || kind === "sync") {
    // Not async: sync hooks must return synchronously, and observers should not wait either.
    return (event, ctx) => {
      try {
        client.notify("hook.event", envelope(hook, event, ctx, config), notifyTimeoutMs, onError);
      } catch {
        // Forwarding is best effort; the agent's work must never fail because of it.
      }
      return undefined;
    };
  }
  return async (event, ctx) => {
    try {
      const answer = await client.call("hook.event", envelope(hook, event, ctx, config), { timeoutMs: hookTimeoutMs });
      return mapAnswer(hook, kind, answer);
    } catch (error) {
      // Fail open: a gate never blocks and a prompt is never held up because KnowHub is down.
      onError(error);
      return undefined;
    }
  };
}

/** Registers a forwarding handler for every hook in HOOKS. */
export function registerHooks(api, options) {
  const names = Object.keys(HOOKS);
  const warned = new Set ();
  for (const hook of names) api.on(hook, hookHandler(hook, HOOKS[hook], options, warned));
  return names;
}
