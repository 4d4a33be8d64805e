// Generated from index.ts by scripts/build.mjs: do not edit.
// The OpenClaw entry of the KnowHub plugin: reads the plugin config, registers the three tools,
// a forwarding handler for every typed hook, and the Control UI tab with its gateway methods.
// All state and logic live in the daemon.

import { KnowhubClient, resolveSocketPath } from "./client.js";
import { ExtractionPump } from "./extraction.js";
import { registerHooks } from "./hooks.js";
import { registerControlUi } from "./ui.js";
import { TOOL_NAMES, contentTool, searchTool, submitTool } from "./tools.js";

const ENUMS = {
  reminderMode: ["off", "minimal", "normal", "aggressive"],
  privacyMode: ["strict", "relaxed"],
  extractionTrigger: ["agent_end", "before_compaction"],
};

/**
 * The config with defaults for whatever is missing. OpenClaw validates the config against the
 * manifest's schema before this runs; this only fills in defaults and ignores what is off.
 */
/** The part of the plugin's config that travels with every hook event to the daemon. */
export function hookConfigOf(config) {
  return {
    reminderMode: config.reminderMode,
    autoRecall: config.autoRecall,
    privacyMode: config.privacyMode,
    enableServerExtraction: config.enableServerExtraction,
    extractionTrigger: config.extractionTrigger,
    requireApproval: config.requireApproval,
    submittedBy: config.submittedBy,
  };
}

export function resolveConfig(raw) {
  const value = raw ?? {};
  const choice = (key, fallback) =>
    (ENUMS[key]).includes(value[key]) ? (value[key]) : fallback;
  const flag = (key, fallback) => (typeof value[key] === "boolean" ? (value[key]) : fallback);
  const whole = (key, fallback, min, max) => {
    const n = value[key];
    return typeof n === "number" && Number.isInteger(n) && n >= min && n <= max ? n : fallback;
  };
  return {
    socketPath: typeof value.socketPath === "string" && value.socketPath.trim() !== "" ? value.socketPath : undefined,
    submittedBy: typeof value.submittedBy === "string" ? value.submittedBy : "",
    reminderMode: choice("reminderMode", "normal"),
    autoRecall: flag("autoRecall", true),
    enableServerExtraction: flag("enableServerExtraction", false),
    privacyMode: choice("privacyMode", "strict"),
    extractionTrigger: choice("extractionTrigger", "agent_end"),
    requireApproval: flag("requireApproval", true),
    hookTimeoutMs: whole("hookTimeoutMs", 1_000, 10, 15_000),
    toolTimeoutMs: whole("toolTimeoutMs", 30_000, 100, 600_000),
  };
}

/** Registers everything with OpenClaw. Opens no connection: the first tool or hook call does. */
export function register(api) {
  const config = resolveConfig(api.pluginConfig);
  const configured = config.socketPath && api.resolvePath ? api.resolvePath(config.socketPath) : config.socketPath;
  const client = new KnowhubClient({ socketPath: resolveSocketPath(configured), logger: api.logger });

  const toolOptions = { client, submittedBy: config.submittedBy, timeoutMs: config.toolTimeoutMs };
  // Factories: OpenClaw builds the tools per run, so kb_submit learns the agent and session.
  api.registerTool(() => searchTool(toolOptions), { name: TOOL_NAMES[0] });
  api.registerTool((ctx) => submitTool(toolOptions, { agentId: ctx?.agentId, sessionKey: ctx?.sessionKey }), {
    name: TOOL_NAMES[1],
  });
  api.registerTool(() => contentTool(toolOptions), { name: TOOL_NAMES[2] });

  registerHooks(api, { client, config: hookConfigOf(config), hookTimeoutMs: config.hookTimeoutMs, logger: api.logger });
  if (config.enableServerExtraction) {
    // When the daemon has no endpoint of its own, its jobs run on OpenClaw's model, here.
    const pump = new ExtractionPump(client, runtimeOf(api, "llm"), runtimeOf(api, "subagent"), api.logger);
    // OpenClaw admits a plugin's background completion only while work of the gateway is
    // running: after a run ended its worker refuses ("Gateway is draining; new tasks are not
    // accepted"), and so does a gateway timer. So the jobs queued by earlier turns run at the
    // start of a turn, beside it (one at a time, at most a few per turn).
    api.on("before_prompt_build", (_event, ctx) => {
      pump.kick((ctx)?.agentId);
      return undefined;
    });
  }
  // The "KnowHub" tab of the Control UI: its page (dist/control-ui/) calls these gateway methods.
  registerControlUi(api, client);
  api.logger.debug?.(`knowhub: daemon socket ${client.socketPath}`);
}

/** A namespace of `api.runtime`, if this OpenClaw has it (its getters may throw outside a gateway). */
function runtimeOf (api, key) {
  try {
    return api.runtime?.[key];
  } catch {
    return undefined;
  }
}

export default {
  id: "knowhub",
  name: "KnowHub",
  description: "A shared memory of experiences for agents: kb_search, kb_submit, kb_content, reminders and recall.",
  register,
};
