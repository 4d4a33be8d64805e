// The plugin in the real OpenClaw (openclaw@2026.9.6 from npm, installed by tests/openclaw-env.sh),
// isolated in temp dirs: the loader accepts it, the config schema rejects bad values, and a real
// gateway runs the tools against a real daemon.

import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";

import { HOOKS } from "../hooks.ts";
import { Daemon, REPO_ROOT, STUB_DIR, sleep, tempDir, until } from "./helpers.mjs";

const run = promisify(execFile);
const OPENCLAW_VERSION = "2026.9.6";
const OPENCLAW_DIR =
  process.env.KNOWHUB_OPENCLAW || path.join(REPO_ROOT, ".cache", "openclaw-env", `openclaw-${OPENCLAW_VERSION}`, "node_modules", "openclaw");
const OPENCLAW = path.join(OPENCLAW_DIR, "openclaw.mjs");

function checkEnvironment() {
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
class OpenClawHome {
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

  async inspect() {
    const { code, stdout, stderr } = await this.cli(["plugins", "inspect", "knowhub", "--runtime", "--json"]);
    assert.equal(code, 0, `inspect failed:\n${stderr}\n${stdout}`);
    return JSON.parse(stdout.slice(stdout.indexOf("{")));
  }

  dispose() {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

function assertLoaded(report, { source }) {
  const plugin = report.plugin;
  assert.equal(plugin.status, "loaded", `status ${plugin.status}: ${plugin.error ?? ""}`);
  assert.equal(plugin.source, source);
  assert.deepEqual([...plugin.toolNames].sort(), ["kb_content", "kb_search", "kb_submit"]);
  assert.deepEqual(report.typedHooks.map((hook) => hook.name).sort(), Object.keys(HOOKS).sort());
  const errors = report.diagnostics.filter((diagnostic) => diagnostic.level === "error");
  assert.deepEqual(errors, [], "no error diagnostics");
  const blocked = report.diagnostics.filter((diagnostic) => /blocked|unknown typed hook/.test(diagnostic.message));
  assert.deepEqual(blocked, [], "no hook is blocked or unknown");
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Stops the gateway and everything it spawned: SIGTERM to its process group, then SIGKILL. */
async function stopGateway(child) {
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

// The steps run two at a time (each OpenClaw CLI run is mostly one busy core); the gateway test
// waits for the install test, whose OpenClaw home it reuses.
describe("openclaw@2026.9.6", { concurrency: 2 }, () => {
  let daemon;
  let home;
  let markInstalled;
  const installed = new Promise((resolve, reject) => {
    markInstalled = { resolve, reject };
  });
  installed.catch(() => undefined);
  before(async () => {
    checkEnvironment();
    daemon = await Daemon.start();
    home = new OpenClawHome("pstub-oc-");
  });
  after(async () => {
    await daemon?.stop();
    home?.dispose();
  });

  test("openclaw plugins install -l, then inspect --runtime: loaded, three tools, every hook, no errors", async () => {
    try {
      const install = await home.cli(["plugins", "install", "-l", STUB_DIR, "--force", "--accept-capabilities"]);
      assert.equal(install.code, 0, `install failed:\n${install.stderr}\n${install.stdout}`);
      const config = home.config();
      assert.ok(config.plugins.load.paths.includes(STUB_DIR), JSON.stringify(config.plugins));
      assert.equal(config.plugins.entries.knowhub.enabled, true);

      home.configure({ socketPath: daemon.socket, submittedBy: "oc-test@example.com", reminderMode: "minimal" });
      const report = await home.inspect();
      // Local installs load the compiled peer when dist/ exists (OpenClaw prefers built JS).
      assertLoaded(report, { source: path.join(STUB_DIR, "dist", "index.js") });
      assert.equal(report.plugin.id, "knowhub");
      markInstalled.resolve();
    } catch (error) {
      markInstalled.reject(error);
      throw error;
    }
  });

  test("the TypeScript entry loads by itself, without a build step", async () => {
    const copy = tempDir("pstub-ts-");
    const tsHome = new OpenClawHome("pstub-octs-");
    try {
      for (const name of ["index.ts", "client.ts", "hooks.ts", "tools.ts", "package.json", "openclaw.plugin.json"]) {
        cpSync(path.join(STUB_DIR, name), path.join(copy, name));
      }
      // An explicit local load path, as `install -l` writes it (minus the install record).
      tsHome.writeConfig({ plugins: { load: { paths: [copy] } } });
      tsHome.configure({ socketPath: daemon.socket });
      assertLoaded(await tsHome.inspect(), { source: path.join(copy, "index.ts") });
    } finally {
      tsHome.dispose();
      rmSync(copy, { recursive: true, force: true });
    }
  });

  test("the npm package installs and loads its compiled entry", async () => {
    const packDir = tempDir("pstub-pack-");
    const pkgHome = new OpenClawHome("pstub-ocpkg-");
    try {
      const { stdout } = await run("npm", ["pack", "--silent", "--pack-destination", packDir], { cwd: STUB_DIR, env: pkgHome.env });
      const tarball = path.join(packDir, stdout.trim().split("\n").pop());
      const installed = await pkgHome.cli(["plugins", "install", tarball, "--force", "--accept-capabilities"]);
      assert.equal(installed.code, 0, `install failed:\n${installed.stderr}\n${installed.stdout}`);
      pkgHome.configure({ socketPath: daemon.socket });
      const report = await pkgHome.inspect();
      assert.equal(report.plugin.origin, "global");
      assertLoaded(report, { source: path.join(pkgHome.dir, "state", "extensions", "knowhub", "dist", "index.js") });
    } finally {
      pkgHome.dispose();
      rmSync(packDir, { recursive: true, force: true });
    }
  });

  test("OpenClaw's validation rejects bad config values for the plugin", async () => {
    const bad = new OpenClawHome("pstub-ocbad-");
    try {
      bad.writeConfig({
        plugins: {
          load: { paths: [STUB_DIR] },
          entries: { knowhub: { enabled: true, config: { reminderMode: "sometimes", hookTimeoutMs: "fast", bogus: 1 } } },
        },
      });
      const { code, stdout } = await bad.cli(["config", "validate", "--json"]);
      assert.notEqual(code, 0);
      const report = JSON.parse(stdout.slice(stdout.indexOf("{")));
      assert.equal(report.valid, false);
      const issues = report.issues.map((issue) => `${issue.path}: ${issue.message}`).join("\n");
      assert.match(issues, /plugins\.entries\.knowhub\.config\.reminderMode: .*allowed values/);
      assert.match(issues, /plugins\.entries\.knowhub\.config\.hookTimeoutMs: .*integer/);
      assert.match(issues, /plugins\.entries\.knowhub\.config: .*additional properties.*bogus/);
    } finally {
      bad.dispose();
    }
  });

  test("a real gateway runs kb_submit then kb_search through POST /tools/invoke", async (t) => {
    await installed;
    const port = await freePort();
    const token = `knowhub-test-${process.pid}-${Date.now()}`;
    home.configure(
      { socketPath: daemon.socket, submittedBy: "oc-test@example.com" },
      { gateway: { mode: "local", port, bind: "loopback", auth: { mode: "token", token } } },
    );
    const log = [];
    const gateway = spawn(process.execPath, [OPENCLAW, "gateway", "run"], {
      env: home.env,
      detached: true, // its own process group, so stopping it stops its workers too
      stdio: ["ignore", "pipe", "pipe"],
    });
    t.after(() => stopGateway(gateway));
    gateway.stdout.on("data", (chunk) => log.push(chunk.toString()));
    gateway.stderr.on("data", (chunk) => log.push(chunk.toString()));

    const invoke = async (tool, args) => {
      const response = await fetch(`http://127.0.0.1:${port}/tools/invoke`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ tool, args }),
        signal: AbortSignal.timeout(20_000),
      });
      return { status: response.status, body: await response.json().catch(() => null) };
    };

    await until(
      async () => {
        if (gateway.exitCode !== null) throw new Error(`the gateway exited (${gateway.exitCode}):\n${log.join("")}`);
        return /\[gateway\] ready$/m.test(log.join(""));
      },
      90_000,
      "the gateway to be ready",
    );

    const submitted = await invoke("kb_submit", {
      task: "Start the OpenClaw gateway for a test",
      resource: "openclaw gateway run",
      result: "Ready in seconds with a loopback bind and token auth",
      score: 5,
    });
    const why = () =>
      `${JSON.stringify(submitted.body)}\nsocket ${daemon.socket} exists: ${existsSync(daemon.socket)}\n` +
      `daemon log:\n${daemon.logText().slice(-2_000)}\ngateway log:\n${log.join("").slice(-4_000)}`;
    assert.equal(submitted.status, 200, why());
    assert.equal(submitted.body.ok, true, why());
    const id = submitted.body.result.details.id;
    assert.ok(id, why());
    assert.match(submitted.body.result.content[0].text, /Experience submitted/);

    const found = await invoke("kb_search", { query: "openclaw gateway loopback" });
    assert.equal(found.status, 200, JSON.stringify(found.body));
    assert.equal(found.body.result.details.results[0].id, id, JSON.stringify(found.body));
    assert.match(found.body.result.content[0].text, /Start the OpenClaw gateway for a test/);

    // The tool factory gave kb_submit the agent and session; the config gave submitted_by.
    const stored = (await daemon.call("kb.get", { experience_id: id })).result;
    assert.equal(stored.submitted_by, "oc-test@example.com");
    assert.equal(stored.agent_id, "main");
    assert.ok(stored.session_key, JSON.stringify(stored));

    // Real hooks reached the daemon through the stub.
    const status = (await daemon.call("status", {})).result;
    if (status.hooks) {
      await until(async () => ((await daemon.call("status", {})).result.hooks.events.gateway_start ?? 0) > 0, 10_000, "gateway_start");
      const events = (await daemon.call("status", {})).result.hooks.events;
      assert.ok(events.before_tool_call >= 2, JSON.stringify(events));
    }
    assert.doesNotMatch(log.join(""), /knowhub.*(not reachable|error)/i, "the plugin logged no errors");
  });
});
