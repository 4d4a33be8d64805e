// Extraction in real agent turns: `openclaw agent --local` with the plugin (extraction on), a
// real knowhubd whose `[extraction]` endpoint is the same scripted model server, which tells the
// extraction request (the daemon's instructions) from the agent's. A session with tool use ends,
// the daemon extracts from what OpenClaw's agent_end carried, the proposal waits in
// `kbctl pending`, `kbctl approve` makes it active, and a new session's first prompt recalls it.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";

import { Daemon, knowhubdPath, until } from "./helpers.mjs";
import { ModelServer, stepOf, turnText } from "./model-server.mjs";
import { agentHome, agentTurn, checkEnvironment, scriptedModelConfig, startGateway } from "./openclaw-home.mjs";

const EXTRACTOR = "You extract reusable experiences";
const RECALL_BLOCK = "<knowhub-experiences>";
const TOKEN = "ghp_16C7e42F292c6912E7710c838347Ae178B4a";

function isExtraction(request) {
  // From the daemon: its instructions are the system message. Through OpenClaw's
  // subagent.complete: they are part of OpenClaw's system prompt.
  return (request.messages ?? []).some((message) => message.role === "system" && JSON.stringify(message.content).includes(EXTRACTOR));
}

/** The agent runs one command (its output holds a token), then answers; the extractor proposes. */
function script(request) {
  if (isExtraction(request)) {
    const proposal = {
      task: "Find which process holds the quokka build lock",
      resource: "lsof /tmp/quokka.lock",
      result: "lsof names the stale quokka daemon holding the lock; killing it lets the build start",
      score: 4,
      outcome: "success",
      confidence: 0.85,
      content: "lsof /tmp/quokka.lock\nkill <pid>",
      evidence: [2, 3],
    };
    return { text: JSON.stringify({ experiences: [proposal] }) };
  }
  if (stepOf(request) === 0) {
    return { toolCalls: [{ name: "exec", arguments: { command: `echo quokka lock held by pid 4242 GITHUB_TOKEN=${TOKEN}` } }] };
  }
  return { text: "The stale quokka daemon holds the lock." };
}

function kbctl(socket, args) {
  const kbctlPath = path.join(path.dirname(knowhubdPath()), "kbctl");
  const result = spawnSync(kbctlPath, args, { env: { ...process.env, KNOWHUB_SOCKET: socket }, encoding: "utf8" });
  assert.equal(result.status, 0, `kbctl ${args.join(" ")}: ${result.stderr}`);
  return result.stdout;
}

const PLUGIN_CONFIG = { enableServerExtraction: true, privacyMode: "strict", requireApproval: true, reminderMode: "off" };

/**
 * A scripted model, a daemon whose config.toml gets `extraction` as its [extraction] section
 * (given the model's base URL), and an OpenClaw home with the plugin, extraction on.
 */
async function setUp(prefix, extraction) {
  checkEnvironment();
  const model = await new ModelServer(script).listen();
  const daemon = new Daemon();
  writeFileSync(path.join(daemon.home, "config.toml"), `[embedding]\nenabled = false\n\n[extraction]\n${extraction(model.baseUrl)}`);
  await daemon.spawn();
  const home = await agentHome({ prefix, socketPath: daemon.socket, baseUrl: model.baseUrl, pluginConfig: PLUGIN_CONFIG });
  return { model, daemon, home };
}

async function tearDown({ model, daemon, home } = {}) {
  await model?.close();
  await daemon?.stop();
  home?.dispose();
}

describe("extraction in real agent turns (openclaw@2026.9.6)", { concurrency: 1 }, () => {
  let daemon;
  let model;
  let home;
  let setup;

  before(async () => {
    setup = await setUp("pstub-extract-", (baseUrl) => `base_url = "${baseUrl}"\nmodel = "scripted-extractor"\n`);
    ({ daemon, model, home } = setup);
  });
  after(() => tearDown(setup));

  test("a session with tool use is extracted, reviewed, approved, and recalled in a new session", { timeout: 900_000 }, async () => {
    const turn = await agentTurn(home, { sessionId: "extract-1", message: "why does the quokka build hang on its lock?", timeout: 600_000 });
    assert.equal(turn.code, 0, `the turn failed:\n${turn.stderr.slice(-3_000)}`);

    const status = async () => (await daemon.call("status", {})).result.extraction;
    await until(async () => (await status()).pending_proposals >= 1, 60_000, "a proposal to wait for review");
    const extraction = model.requests.filter(isExtraction);
    assert.equal(extraction.length, 1, "one extraction call for the session");
    const sent = JSON.stringify(extraction[0]);
    assert.ok(sent.includes("echo quokka lock held by pid 4242"), `the tool call OpenClaw recorded reached the extractor: ${sent}`);
    assert.ok(sent.includes("The stale quokka daemon holds the lock."), sent);
    assert.ok(!sent.includes(TOKEN), "strict mode redacts the conversation before it is sent");
    assert.equal(extraction[0].stream, false);

    const pending = kbctl(daemon.socket, ["pending"]);
    assert.match(pending, /extracted \(success, 0\.85\).*quokka build lock/, pending);
    const held = (await daemon.call("kb.pending", {})).result.experiences[0];
    assert.equal(held.source, "extraction");
    assert.equal(held.agent_id, "main");
    assert.equal(held.session_key, "agent:main:explicit:extract-1");
    kbctl(daemon.socket, ["approve", held.id]);

    // A new session's first prompt about the same thing carries it in auto-recall.
    const before = model.calls.length;
    const recall = await agentTurn(home, { sessionId: "extract-2", message: "the quokka build lock again: who holds it?", timeout: 600_000 });
    assert.equal(recall.code, 0, `the recall turn failed:\n${recall.stderr.slice(-3_000)}`);
    const first = model.calls.slice(before).find((request) => !isExtraction(request));
    const text = turnText(first);
    assert.ok(text.includes(RECALL_BLOCK) && text.includes(held.id), text);
    assert.ok(text.includes("lsof /tmp/quokka.lock"), text);
  });
});

describe("extraction on OpenClaw's own model, through the plugin (no endpoint in the daemon)", { concurrency: 1 }, () => {
  let daemon;
  let model;
  let home;
  let gateway;
  let setup;

  before(async () => {
    // No endpoint: the jobs run on OpenClaw's model (route auto), through the plugin, at the
    // start of a turn: api.runtime.llm.complete. (After a run ended, and from a gateway timer,
    // openclaw 2026.9.6 refuses background work: "Gateway is draining; new tasks are not accepted".)
    setup = await setUp("pstub-extract-oc-", () => "timeout_seconds = 30\n");
    ({ daemon, model, home } = setup);
    gateway = await startGateway(home, { socketPath: daemon.socket, ...PLUGIN_CONFIG }, scriptedModelConfig(model.baseUrl));
  });
  after(async () => {
    await gateway?.stop();
    await tearDown(setup);
  });

  /** One turn through the gateway's /v1/chat/completions. */
  async function turn(sessionKey, message) {
    const response = await fetch(`http://127.0.0.1:${gateway.port}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${gateway.token}`, "content-type": "application/json", "x-openclaw-session-key": sessionKey },
      body: JSON.stringify({ model: "openclaw", messages: [{ role: "user", content: message }] }),
      signal: AbortSignal.timeout(180_000),
    });
    assert.equal(response.status, 200, `${await response.text()}\n${gateway.text().slice(-3_000)}`);
  }

  test("a gateway turn with tool use is extracted on the agent's own model (api.runtime.llm.complete) at the start of the next turn",  { timeout: 600_000 }, async () => {
    await turn("extract-gw", "why does the quokka build hang on its lock?");
    await until(async () => (await daemon.call("status", {})).result.extraction.queued >= 1, 30_000, "the session to be queued");
    assert.equal(model.calls.filter(isExtraction).length, 0, "nothing runs after the turn: OpenClaw refuses it then");
    // The next turn (any session) runs the queued job beside it.
    await turn("extract-gw-2", "hello again");
    const status = async () => (await daemon.call("status", {})).result.extraction;
    await until(
      async () => {
        const now = await status();
        return now.pending_proposals >= 1 || now.failed >= 1;
      },
      120_000,
      "the job to be run through OpenClaw",
    ).catch((error) => {
      const lines = gateway.text().split("\n").filter((line) => /knowhub|llm|admission|drain|error/i.test(line));
      throw new Error(`${error.message}\n${lines.slice(-30).join("\n")}\n${daemon.logText().slice(-1_500)}`);
    });
    const now = await status();
    assert.equal(now.route, "openclaw");
    const extraction = model.calls.filter(isExtraction);
    assert.equal(now.pending_proposals, 1, JSON.stringify(now));
    // Charged the larger of OpenClaw's usage (the scripted model says 15) and the daemon's own
    // count of what was sent and received: a model cannot report its way past the cap.
    assert.ok(now.tokens_today > 100, `the daemon's own count, not the 15 reported: ${now.tokens_today}`);
    assert.equal(extraction.length, 1, "one completion on the agent's own model");
    // The daemon's instructions as the system prompt, its schema as the response format.
    assert.ok(extraction[0].stream, "OpenClaw's transport streams");
    const sent = JSON.stringify(extraction[0]);
    assert.ok(sent.includes("echo quokka lock held by pid 4242"), sent);
    assert.ok(!sent.includes(TOKEN), "redacted before it reached OpenClaw");
    const held = (await daemon.call("kb.pending", {})).result.experiences[0];
    assert.equal(held.source, "extraction");
    assert.match(held.task, /quokka build lock/);
  });
});

describe("extraction on OpenClaw's own model in `openclaw agent --local` runs", { concurrency: 1 }, () => {
  let daemon;
  let model;
  let home;
  let setup;

  before(async () => {
    setup = await setUp("pstub-extract-local-", () => "timeout_seconds = 30\n");
    ({ daemon, model, home } = setup);
  });
  after(() => tearDown(setup));

  test("the next --local turn runs the job the previous one queued, on the agent's model", { timeout: 900_000 }, async () => {
    const first = await agentTurn(home, { sessionId: "local-x1", message: "why does the quokka build hang on its lock?", timeout: 600_000 });
    assert.equal(first.code, 0, first.stderr.slice(-3_000));
    const status = async () => (await daemon.call("status", {})).result.extraction;
    await until(async () => (await status()).queued >= 1, 30_000, "the session to be queued");
    assert.equal(model.calls.filter(isExtraction).length, 0);
    const second = await agentTurn(home, { sessionId: "local-x2", message: "thanks, that was it", timeout: 600_000 });
    assert.equal(second.code, 0, second.stderr.slice(-3_000));
    await until(async () => (await status()).pending_proposals >= 1, 60_000, "the proposal");
    const now = await status();
    assert.equal((await daemon.call("kb.pending", {})).result.experiences[0].session_key, "agent:main:explicit:local-x1");
    assert.equal(now.done, 1, JSON.stringify(now));
    const extraction = model.calls.filter(isExtraction);
    assert.equal(extraction.length, 1);
    assert.ok(!JSON.stringify(extraction[0]).includes(TOKEN));
  });
});
