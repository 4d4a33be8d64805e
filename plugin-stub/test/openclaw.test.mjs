// The plugin in the real OpenClaw (openclaw@2026.9.6 from npm, installed by tests/openclaw-env.sh),
// isolated in temp dirs: the loader accepts it (linked, as TypeScript, as an npm package) and the
// config schema rejects bad values.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { cpSync, rmSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";

import { HOOKS } from "../hooks.ts";
import { BROWSER_SOURCES, BROWSER_STYLES, SOURCES } from "../scripts/build.mjs";
import { Daemon, STUB_DIR, tempDir } from "./helpers.mjs";
import { OpenClawHome, checkEnvironment } from "./openclaw-home.mjs";

const run = promisify(execFile);

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

// The steps run two at a time (each OpenClaw CLI run is mostly one busy core). Real agent turns
// and the gateway are in agent.test.mjs.
describe("openclaw@2026.9.6", { concurrency: 2 }, () => {
  let daemon;
  let home;
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
    await home.install();
    const config = home.config();
    assert.ok(config.plugins.load.paths.includes(STUB_DIR), JSON.stringify(config.plugins));
    assert.equal(config.plugins.entries.knowhub.enabled, true);

    home.configure({ socketPath: daemon.socket, submittedBy: "oc-tester", reminderMode: "minimal" });
    const report = await home.inspect();
    // Local installs load the compiled peer when dist/ exists (OpenClaw prefers built JS).
    assertLoaded(report, { source: path.join(STUB_DIR, "dist", "index.js") });
    assert.equal(report.plugin.id, "knowhub");
  });

  test("the TypeScript entry loads by itself, without a build step", async () => {
    const copy = tempDir("pstub-ts-");
    const tsHome = new OpenClawHome("pstub-octs-");
    try {
      // Every TypeScript module, and the Control UI's page that the manifest declares.
      for (const name of [...SOURCES, ...BROWSER_SOURCES, ...BROWSER_STYLES, "package.json", "openclaw.plugin.json", "dist/control-ui"]) {
        cpSync(path.join(STUB_DIR, name), path.join(copy, name), { recursive: true });
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
});
