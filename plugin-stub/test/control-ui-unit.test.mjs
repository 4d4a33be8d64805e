// Unit tests of the Control UI tab's backend (ui.ts) and the page's text rendering (ui/dom.ts):
// which scope each gateway method demands, requests refused before the daemon sees them, a
// daemon that is down as a state rather than an error, and the characters the page writes out.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";

import { KnowhubClient } from "../client.ts";
import { register } from "../index.ts";
import { visibleControls } from "../tools.ts";
import { UI_METHODS, errorShape, uiHandlers } from "../ui.ts";
import { UNSAFE_TO_SHOW, shownLogin, visible } from "../ui/dom.ts";
import { RecordingServer, STUB_DIR, fakeApi, tempDir } from "./helpers.mjs";

/** The fake api with OpenClaw's gateway-method and Control UI registrars, recorded. */
function uiApi(config = {}) {
  const api = fakeApi(config);
  api.methods = new Map();
  api.descriptors = [];
  api.registerGatewayMethod = (method, handler, opts) => api.methods.set(method, { handler, scope: opts?.scope });
  api.session = { controls: { registerControlUiDescriptor: (descriptor) => api.descriptors.push(descriptor) } };
  return api;
}

/** Calls a registered method as the gateway would; resolves to {ok, payload, error}. */
function invoke(api, method, params) {
  return new Promise((resolve) => {
    api.methods.get(method).handler({ params, respond: (ok, payload, error) => resolve({ ok, payload, error }) });
  });
}

test("the tab is a read-scoped tab; every method that changes something needs operator.write", () => {
  const api = uiApi({ socketPath: "/nonexistent/knowhubd.sock" });
  register(api);
  assert.deepEqual(api.descriptors.map((d) => [d.surface, d.id, d.label, d.requiredScopes]), [["tab", "knowhub", "KnowHub", ["operator.read"]]]);
  const scopes = Object.fromEntries([...api.methods].map(([method, { scope }]) => [method, scope]));
  assert.deepEqual(scopes, {
    "knowhub.ui.overview": "operator.read",
    "knowhub.ui.pending": "operator.read",
    "knowhub.ui.search": "operator.read",
    "knowhub.ui.experience": "operator.read",
    "knowhub.ui.approve": "operator.write",
    "knowhub.ui.reject": "operator.write",
    "knowhub.ui.retry": "operator.write",
    "knowhub.ui.sync": "operator.write",
  });
  assert.deepEqual(Object.keys(UI_METHODS).sort(), [...api.methods.keys()].sort());
});

test("the manifest declares the page's bundle, and the build puts it there", () => {
  const manifest = JSON.parse(readFileSync(path.join(STUB_DIR, "openclaw.plugin.json"), "utf8"));
  assert.deepEqual(manifest.controlUi, { entry: "dist/control-ui/knowhub.js", styles: ["dist/control-ui/knowhub.css"] });
  const entry = readFileSync(path.join(STUB_DIR, manifest.controlUi.entry), "utf8");
  assert.match(entry, /from "\.\/dom\.js"/, "browser imports point at the built .js files");
  // No module of the page turns a string into markup (comments aside, which name what is avoided).
  for (const name of ["knowhub", "dom", "review", "search", "health"]) {
    const code = readFileSync(path.join(STUB_DIR, "dist", "control-ui", `${name}.js`), "utf8")
      .replace(/\/\*[\s\S]*?\*\//g, "")
      .replace(/^\s*\/\/.*$/gm, "");
    assert.doesNotMatch(code, /innerHTML|insertAdjacentHTML|outerHTML|document\.write|\beval\(|new Function/, name);
  }
});

test("a malformed request is refused with the field it got wrong, and never reaches the daemon", async () => {
  const server = new RecordingServer(() => ({ result: { changed: [] } }));
  await server.listen();
  try {
    const api = uiApi({ socketPath: server.socket });
    register(api);
    const refused = [
      ["knowhub.ui.approve", {}, /invalid `ids`/],
      ["knowhub.ui.approve", { ids: ["../../etc/passwd"] }, /not an experience id/],
      ["knowhub.ui.approve", { ids: ["01A", "01B"], edit: { result: "x" } }, /exactly one experience/],
      ["knowhub.ui.approve", { ids: ["01A"], edit: { status: "active" } }, /unknown field `status`/],
      ["knowhub.ui.approve", { ids: ["01A"], edit: { score: 9 } }, /edit\.score/],
      ["knowhub.ui.reject", { ids: "01A" }, /invalid `ids`/],
      ["knowhub.ui.approve", { ids: ["01A", "01B"], versions: ["0123abcd"] }, /one version per id/],
      ["knowhub.ui.approve", { ids: ["01A", "01A"], versions: ["0123abcd", "0123abcd"] }, /each id once/],
      ["knowhub.ui.reject", { ids: ["01A"], versions: ["'; DROP"] }, /not a version/],
      ["knowhub.ui.retry", { ids: ["1; DROP TABLE"] }, /job numbers/],
      ["knowhub.ui.search", { query: "  " }, /invalid `query`/],
      ["knowhub.ui.search", { query: "x", mode: "sql" }, /invalid `mode`/],
      ["knowhub.ui.search", { query: "x", origin: "everyone" }, /invalid `origin`/],
      ["knowhub.ui.experience", { id: "<script>" }, /not an experience id/],
    ];
    for (const [method, params, message] of refused) {
      const answer = await invoke(api, method, params);
      assert.equal(answer.ok, false, `${method} ${JSON.stringify(params)}`);
      assert.equal(answer.error.code, "INVALID_REQUEST");
      assert.match(answer.error.message, message);
    }
    assert.deepEqual(server.requests, [], "nothing was sent to the daemon");

    const approved = await invoke(api, "knowhub.ui.approve", { ids: ["01A", "01A", "01B"], edit: undefined });
    assert.equal(approved.ok, true);
    assert.deepEqual(server.requests.map((r) => [r.method, r.params]), [["kb.approve", { ids: ["01A", "01B"] }]]);
    // The versions the page showed go with the decision, for the daemon to refuse a stale one.
    await invoke(api, "knowhub.ui.reject", { ids: ["01C"], versions: ["00ff00ff00ff00ff"] });
    assert.deepEqual(server.requests.at(-1).params, { ids: ["01C"], versions: ["00ff00ff00ff00ff"] });
  } finally {
    await server.dispose();
  }
});

test("a daemon that is down is a state the page shows, with how to start it; a write says the same", async () => {
  const socketPath = path.join(tempDir("pstub-ui-"), "knowhubd.sock");
  const handlers = uiHandlers(new KnowhubClient({ socketPath }));
  const overview = await handlers["knowhub.ui.overview"]({});
  assert.equal(overview.daemon, "down");
  assert.match(overview.message, /not reachable/);
  assert.match(overview.hint, /kbctl service install.*knowhubd/);
  const error = await handlers["knowhub.ui.approve"]({ ids: ["01A"] }).then(() => null, errorShape);
  assert.equal(error.code, "UNAVAILABLE");
  assert.equal(error.details.daemon, "down");
  assert.match(error.message, /not reachable.*kbctl service install/);
});

test("the page shows exactly the characters the tools show as \\u{…}, and keeps all others", () => {
  const unsafe = [];
  const codes = [...Array(0x3000).keys(), 0xfeff, 0x1f3f4, ...Array.from({ length: 0xa0 }, (_, n) => 0xdfff0 + n)];
  for (const code of codes) {
    const ch = String.fromCodePoint(code);
    assert.equal(visible(ch), visibleControls(ch), `U+${code.toString(16)}`);
    if (visible(ch) !== ch) unsafe.push(code);
  }
  assert.ok(unsafe.includes(0x1b) && unsafe.includes(0x202e) && unsafe.includes(0x2066) && unsafe.includes(0x9b));
  assert.ok(!unsafe.includes(0x0a) && !unsafe.includes(0x09), "newline and tab stay");
  // Invisible carriers of text: tag characters (ASCII smuggling), zero-width space, word joiner, BOM.
  assert.ok([0xe0000, 0xe0041, 0xe007f, 0x200b, 0x2060, 0xfeff].every((code) => unsafe.includes(code)), String(unsafe));
  assert.ok(![0x200c, 0x200d, 0x1f3f4, 0xe0080].some((code) => unsafe.includes(code)), "joiners, emoji and other planes stay");
  assert.equal(visible("运行测试 <b>x</b>\u001b[31m"), "运行测试 <b>x</b>\\u{1b}[31m");
  assert.equal(visible("ok\u{e0049}\u{e0067}"), "ok\\u{e0049}\\u{e0067}");
  assert.equal(UNSAFE_TO_SHOW.flags, "gu");
});

test("a teammate's login that mixes ASCII letters with look-alikes is shown spelled out, as kbctl shows it", () => {
  assert.equal(shownLogin("bob"), "bob");
  assert.equal(shownLogin("b\u043eb"), "b\\u{43e}b", "a Cyrillic о cannot pass for bob");
  assert.equal(shownLogin("Bob"), "Bob");
  assert.equal(shownLogin("张三"), "张三", "a login in one script stays as it is");
  assert.equal(shownLogin("bob\u202e"), "bob\\u{202e}");
  assert.equal(shownLogin(undefined), "");
});
