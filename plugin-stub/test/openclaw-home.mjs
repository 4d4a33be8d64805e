// The real OpenClaw (openclaw@2026.9.6 from npm, installed by tests/openclaw-env.sh) for tests:
// an isolated home (its own state, config, temp dir and HOME), the CLI, the plugin installed
// with `plugins install -l`, a scripted model as a custom provider, and real agent turns run
// with `openclaw agent --local` or through a gateway.

import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { promisify } from "node:util";

import { REPO_ROOT, STUB_DIR, sleep, tempDir, until } from "./helpers.mjs";

const run = promisify(execFile);
export const OPENCLAW_VERSION = "2026.9.6";
export const OPENCLAW_DIR =
  process.env.KNOWHUB_OPENCLAW || path.join(REPO_ROOT, ".cache", "openclaw-env", `openclaw-${OPENCLAW_VERSION}`, "node_modules", "openclaw");
export const OPENCLAW = path.join(OPENCLAW_DIR, "openclaw.mjs");

/** Fails with what to do when the OpenClaw under test or its Node is missing. */
export function checkEnvironment() {
  if (!existsSync(OPENCLAW)) {
    throw new Error(`openclaw@${OPENCLAW_VERSION} is not installed at ${OPENCLAW_DIR}: run tests/openclaw-env.sh first`);
  }
  const [major, minor] = process.versions.node.split(".").map(Number);
  if (!(major === 24 && minor >= 16) && !(major === 26 && minor >= 1) && !(major > 26)) {
    throw new Error(`OpenClaw needs Node >=24.16; this is ${process.version}: run the tests with the Node tests/openclaw-env.sh prints`);
  }
  const version = JSON.parse(readFileSync(path.join(OPENCLAW_DIR, "package.json"), "utf8")).version;
  assert.equal(version, OPENCLAW_VERSION);
}

/** An isolated OpenClaw: its own home, state, config, temp dir and HOME. */
export class OpenClawHome {
  constructor(prefix) {
    this.dir = tempDir(prefix);
    this.configPath = path.join(this.dir, "openclaw.json");
    mkdirSync(path.join(this.dir, "tmp"));
    this.env = {
      ...process.env,
      HOME: this.dir,
      TMPDIR: path.join(this.dir, "tmp"),
      OPENCLAW_HOME: this.dir,
      OPENCLAW_STATE_DIR: path.join(this.dir, "state"),
      OPENCLAW_CONFIG_PATH: this.configPath,
      NO_COLOR: "1",
    };
    delete this.env.KNOWHUB_SOCKET;
    delete this.env.KNOWHUB_HOME;
  }

  /** Runs the CLI; resolves to {code, stdout, stderr} whatever the exit code. */
  async cli(args, timeout = 90_000) {
    try {
      const { stdout, stderr } = await run(process.execPath, [OPENCLAW, ...args], { env: this.env, timeout, maxBuffer: 64 << 20 });
      return { code: 0, stdout, stderr };
    } catch (error) {
      if (typeof error.code !== "number") throw error;
      return { code: error.code, stdout: error.stdout, stderr: error.stderr };
    }
  }

  config() {
    return existsSync(this.configPath) ? JSON.parse(readFileSync(this.configPath, "utf8")) : {};
  }

  writeConfig(config) {
    writeFileSync(this.configPath, JSON.stringify(config, null, 2));
  }

  /** Adds the knowhub entry's hook policy and plugin config to what `install` wrote. */
  configure(pluginConfig, extra = {}) {
    const config = this.config();
    config.plugins ??= {};
    config.plugins.entries ??= {};
    config.plugins.entries.knowhub = {
      ...config.plugins.entries.knowhub,
      enabled: true,
      hooks: { allowConversationAccess: true },
      config: pluginConfig,
    };
    config.logging = { ...config.logging, file: path.join(this.dir, "openclaw.log") };
    this.writeConfig({ ...config, ...extra });
  }

  /** `openclaw plugins install -l` of the plugin stub. */
  async install(stubDir = STUB_DIR) {
    const install = await this.cli(["plugins", "install", "-l", stubDir, "--force", "--accept-capabilities"]);
    assert.equal(install.code, 0, `install failed:\n${install.stderr}\n${install.stdout}`);
  }

  async inspect() {
    const { code, stdout, stderr } = await this.cli(["plugins", "inspect", "knowhub", "--runtime", "--json"]);
    assert.equal(code, 0, `inspect failed:\n${stderr}\n${stdout}`);
    return JSON.parse(stdout.slice(stdout.indexOf("{")));
  }

  logText() {
    try {
      return readFileSync(path.join(this.dir, "openclaw.log"), "utf8");
    } catch {
      return "";
    }
  }

  dispose() {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * The config pieces that make the scripted model at `baseUrl` the agent's only model:
 * a custom `openai-completions` provider and the default agent pointed at it.
 * `toolSearch` is written to `tools.toolSearch` unless undefined (OpenClaw's default).
 */
export function scriptedModelConfig(baseUrl, { toolSearch } = {}) {
  const config = {
    models: {
      mode: "merge",
      providers: {
        scripted: {
          api: "openai-completions",
          baseUrl,
          apiKey: "sk-scripted",
          models: [
            {
              id: "scripted-model",
              name: "Scripted",
              reasoning: false,
              input: ["text"],
              cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
              contextWindow: 128_000,
              maxTokens: 4_096,
            },
          ],
        },
      },
    },
    agents: { defaults: { model: { primary: "scripted/scripted-model" }, skipBootstrap: true } },
  };
  if (toolSearch !== undefined) config.tools = { toolSearch };
  return config;
}

/**
 * An OpenClaw home with the plugin installed and configured, talking to `socketPath`, whose
 * model is the scripted server at `baseUrl`. `pluginConfig` adds to the plugin's config.
 */
export async function agentHome({ prefix = "pstub-agent-", socketPath, baseUrl, pluginConfig = {}, toolSearch, stubDir } = {}) {
  const home = new OpenClawHome(prefix);
  await home.install(stubDir);
  home.configure({ socketPath, ...pluginConfig }, scriptedModelConfig(baseUrl, { toolSearch }));
  return home;
}

/**
 * One real agent turn: `openclaw agent --local --agent main --session-id S --message M --json`.
 * Resolves to {code, json, stdout, stderr}; `json` is the parsed result when stdout holds one.
 */
export async function agentTurn(home, { sessionId, message, timeout = 120_000 }) {
  const result = await home.cli(["agent", "--local", "--agent", "main", "--session-id", sessionId, "--message", message, "--json"], timeout);
  let json;
  const start = result.stdout.indexOf("{");
  if (start >= 0) {
    try {
      json = JSON.parse(result.stdout.slice(start));
    } catch {
      json = undefined;
    }
  }
  return { ...result, json };
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** How long a gateway may take to start (a loaded 2-core machine has needed over 90 s). */
const GATEWAY_READY_MS = 240_000;

/** A gateway of `home` on a free loopback port with token auth; `stop()` ends it and its workers. */
export async function startGateway(home, pluginConfig, extra = {}) {
  const port = await freePort();
  const token = `knowhub-test-${process.pid}-${Date.now()}`;
  // The OpenAI-compatible endpoint runs agent turns over HTTP, without a CLI process per turn.
  const http = { endpoints: { chatCompletions: { enabled: true } } };
  // `extra.gateway` adds to the gateway's settings (the Control UI's, say); the rest are fixed.
  const gatewayConfig = { ...extra.gateway, mode: "local", port, bind: "loopback", auth: { mode: "token", token }, http };
  home.configure(pluginConfig, { ...extra, gateway: gatewayConfig });
  const log = [];
  const child = spawn(process.execPath, [OPENCLAW, "gateway", "run"], {
    env: home.env,
    detached: true, // its own process group, so stopping it stops its workers too
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout.on("data", (chunk) => log.push(chunk.toString()));
  child.stderr.on("data", (chunk) => log.push(chunk.toString()));
  const gateway = { child, port, token, log, stop: () => stopGateway(child), text: () => log.join("") };
  try {
    await until(
      async () => {
        if (child.exitCode !== null) throw new Error(`the gateway exited (${child.exitCode}):\n${gateway.text()}`);
        return /\[gateway\] ready$/m.test(gateway.text());
      },
      GATEWAY_READY_MS,
      "the gateway to be ready",
    );
  } catch (error) {
    await gateway.stop();
    throw error;
  }
  return gateway;
}

/** Stops a gateway and everything it spawned: SIGTERM to its process group, then SIGKILL. */
export async function stopGateway(child) {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  try {
    process.kill(-child.pid, "SIGTERM");
  } catch {
    // already gone
  }
  const timeout = sleep(15_000).then(() => "timeout");
  if ((await Promise.race([exited, timeout])) === "timeout") {
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      // already gone
    }
    await exited;
  }
}
