// What the agent really sees: real OpenClaw agent turns (`openclaw agent --local`, and a real
// gateway's OpenAI-compatible endpoint) with the plugin installed by `plugins install -l`, a
// real knowhubd, and a scripted model that records every request. The tests assert on what the
// model received and on what the daemon stored.
//
// The scripted model acts on tags in the user's message:
//   [follow-intro]  does literally what KnowHub's intro says: the kb_search call it shows, then
//                   the kb_submit call it shows, then answers;
//   [exec]          runs `echo` with the exec tool once, then answers (two model calls);
//   [exec-submit]   runs exec, then kb_submit by name, then answers;
//   anything else   answers at once (one model call).

import assert from "node:assert/strict";
import { existsSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";

import { Daemon, sleep, until } from "./helpers.mjs";
import { ModelServer, lastToolResult, offeredTools, stepOf, turnText } from "./model-server.mjs";
import { OpenClawHome, agentTurn, checkEnvironment, scriptedModelConfig, startGateway } from "./openclaw-home.mjs";

const INTRO = "KnowHub is available";
const REMINDER = "KnowHub reminder";
const RECALL_BLOCK = "<knowhub-experiences>";
const PLUGIN_CONFIG = { reminderMode: "normal", submittedBy: "agent-tester" };

// ---------------------------------------------------------------------------------------------
// The scripted model

/**
 * Concrete values a literal-minded model puts where the intro shows `<placeholders>`, one set
 * per topic (the word after `marker-` in the message): each test submits an experience of its
 * own, which the daemon does not merge with another as a near-duplicate. The task and result
 * also get the marker, so the test finds its experience.
 */
const TOPICS = {
  local: { query: "run the vitest suite once in CI", task: "Run the vitest suite once in CI", resource: "vitest --run", result: "Exits when done instead of watching" },
  default: { query: "build the docs site", task: "Build the documentation site strictly", resource: "mkdocs build --strict", result: "Broken links fail the build" },
  directory: { query: "shrink a docker image", task: "Shrink a Docker image for a Go service", resource: "multi-stage Dockerfile FROM scratch", result: "Image went from 900 MB to 12 MB" },
  off: { query: "profile a slow postgres query", task: "Find why a Postgres query is slow", resource: "EXPLAIN (ANALYZE, BUFFERS)", result: "A sequential scan; an index on user_id fixed it" },
};

function fillPlaceholders(value, marker) {
  if (Array.isArray(value)) return value.map((item) => fillPlaceholders(item, marker));
  if (value && typeof value === "object") {
    const topic = TOPICS[marker.split("-")[1]] ?? TOPICS.local;
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) =>
        typeof item === "string" && /^<.*>$/.test(item)
          ? [key, key === "task" || key === "result" ? `${topic[key]} (${marker})` : (topic[key] ?? "none")]
          : [key, fillPlaceholders(item, marker)],
      ),
    );
  }
  return value;
}

/**
 * The call the intro shows for `tool`: on the intro's line naming it, the function name and
 * the JSON object written after it, placeholders filled in. Whatever the intro says (a name, or
 * `tool_call {"id": ..., "args": ...}`) is what the model does.
 */
function callFromIntro(intro, tool, marker) {
  const line = intro.split("\n").find((text) => text.includes(tool) && /\w+ \{.*\}\s*$/.test(text));
  if (!line) throw new Error(`the intro shows no call of ${tool}:\n${intro}`);
  const [, name, json] = line.match(/(\w+) (\{.*\})\s*$/);
  return { name, arguments: fillPlaceholders(JSON.parse(json), marker) };
}

function introOf(request) {
  const text = turnText(request);
  const start = text.indexOf(INTRO);
  return start >= 0 ? text.slice(start) : undefined;
}

/** The model: what it does for each request, from the tags in the turn's message. */
function script(request) {
  const text = turnText(request);
  const step = stepOf(request);
  // The user's own words come last: auto-recall may have put other tests' markers before them.
  const marker = [...text.matchAll(/marker-[\w-]+/g)].at(-1)?.[0] ?? "no-marker";
  if (text.includes("[follow-intro]")) {
    const intro = introOf(request);
    if (!intro) return { text: "I was told nothing about KnowHub." };
    if (step === 0) return { toolCalls: [callFromIntro(intro, "kb_search", marker)] };
    if (step === 1) return { toolCalls: [callFromIntro(intro, "kb_submit", marker)] };
    return { text: `done: ${lastToolResult(request).slice(0, 80)}` };
  }
  if (text.includes("[exec-submit]")) {
    if (step === 0) return { toolCalls: [{ name: "exec", arguments: { command: "echo knowhub-agent-test" } }] };
    if (step === 1) {
      const args = { task: "Check the echo command", resource: "exec echo", result: `It prints its argument (${marker})`, score: 4 };
      return { toolCalls: [{ name: "kb_submit", arguments: args }] };
    }
    return { text: "submitted" };
  }
  if (text.includes("[exec]")) {
    if (step === 0) return { toolCalls: [{ name: "exec", arguments: { command: "echo knowhub-agent-test" } }] };
    return { text: "ran it" };
  }
  return { text: "ok" };
}

/** The requests of one turn: those whose turn message carries `tag`'s unique text. */
function requestsOf(model, message) {
  return model.calls.filter((request) => turnText(request).endsWith(message) || turnText(request).includes(`${message}\n`));
}

// ---------------------------------------------------------------------------------------------

describe("real agent turns with KnowHub (openclaw@2026.9.6)", { concurrency: 1 }, () => {
  let daemon;
  let model;
  let home;
  let gateway;

  before(async () => {
    checkEnvironment();
    daemon = await Daemon.start();
    model = await new ModelServer(script).listen();
    home = new OpenClawHome("pstub-agent-");
    await home.install();
    home.configure({ socketPath: daemon.socket, ...PLUGIN_CONFIG }, scriptedModelConfig(model.baseUrl));
  });
  after(async () => {
    await gateway?.stop();
    await model?.close();
    await daemon?.stop();
    home?.dispose();
  });

  /** Finds the experience a turn submitted, by the marker in its result. */
  async function storedWith(marker) {
    const answer = (await daemon.call("kb.search", { query: marker, top_k: 5 })).result;
    const hit = answer?.results?.find((item) => item.result.includes(marker));
    return hit && (await daemon.call("kb.get", { experience_id: hit.id })).result;
  }

  test("openclaw agent --local: a model that does what the intro says reaches kb_search and kb_submit; the intro comes once per session", { timeout: 900_000 }, async () => {
    const marker = `marker-local-${Date.now()}`;
    const first = `[follow-intro] set up the CI tests ${marker}`;
    const turn1 = await agentTurn(home, { sessionId: "local-1", message: first, timeout: 600_000 });
    assert.equal(turn1.code, 0, `turn 1 failed:\n${turn1.stderr.slice(-3_000)}`);
    const requests1 = requestsOf(model, first);
    assert.equal(requests1.length, 3, "kb_search, kb_submit, answer");
    // OpenClaw's default Tool Search is on (tool_call offered), and KnowHub's tools are offered by name.
    const tools = offeredTools(requests1[0]);
    for (const name of ["tool_call", "kb_search", "kb_submit", "kb_content"]) assert.ok(tools.includes(name), `${name} in ${tools}`);
    assert.ok(turnText(requests1[0]).includes(INTRO), turnText(requests1[0]));
    assert.match(lastToolResult(requests1[1]), /^(No experiences found|Found \d+ experience)/, "kb_search ran");
    assert.match(lastToolResult(requests1[2]), /Experience submitted \(ID: \w+\)/, "kb_submit ran");
    const stored = await storedWith(marker);
    assert.ok(stored, `the experience is in the daemon; daemon log:\n${daemon.logText().slice(-2_000)}`);
    assert.equal(stored.task, `${TOPICS.local.task} (${marker})`);
    assert.equal(stored.agent_id, "main");
    assert.equal(stored.session_key, "agent:main:explicit:local-1");
    assert.equal(stored.submitted_by, PLUGIN_CONFIG.submittedBy);
    assert.equal(stored.source, "tool");

    // A second `openclaw agent --local` process, same session: no intro again (issue 11: every
    // turn got it, because agent_end reset the session).
    const second = `[exec] look around ${marker}`;
    const turn2 = await agentTurn(home, { sessionId: "local-1", message: second, timeout: 600_000 });
    assert.equal(turn2.code, 0, `turn 2 failed:\n${turn2.stderr.slice(-3_000)}`);
    const requests2 = requestsOf(model, second);
    assert.equal(requests2.length, 2);
    for (const request of requests2) assert.ok(!turnText(request).includes(INTRO), turnText(request));
    // The turn-1 message in the history does not keep the intro either: OpenClaw does not persist injected context.
    assert.ok(!JSON.stringify(requests2[0].messages).includes(INTRO));
  });

  test("BM25 alone (no model can load): a prompt sharing one common word with the store gets no recall block; a prompt about a stored experience gets it", { timeout: 900_000 }, async () => {
    // Issue 25: "What is the capital of Mongolia? Answer in one word." was sent a recalled
    // experience about running vitest "after one pass". A daemon of its own, embeddings off.
    const bm25 = new Daemon();
    writeFileSync(path.join(bm25.home, "config.toml"), "[embedding]\nenabled = false\n");
    await bm25.spawn();
    try {
      assert.equal((await bm25.call("status", {})).result.embedder.state, "disabled");
      home.configure({ socketPath: bm25.socket, ...PLUGIN_CONFIG, reminderMode: "off" }, scriptedModelConfig(model.baseUrl));
      const submit = (item) => bm25.call("kb.submit", { ...item, score: 5 }).then((answer) => answer.result.id);
      const vitest = await submit({ task: "Run the vitest suite exactly once in CI", resource: "vitest --run", result: "Exits after one pass instead of watching" });
      await submit({ task: "Pin the node version for the CI", resource: ".nvmrc", result: "setup-node reads it" });

      const received = async (sessionId, message) => {
        const result = await agentTurn(home, { sessionId, message, timeout: 600_000 });
        assert.equal(result.code, 0, `${message}:\n${result.stderr.slice(-3_000)}`);
        const requests = requestsOf(model, message);
        assert.equal(requests.length, 1, message);
        return turnText(requests[0]);
      };
      const mongolia = await received("bm25-gate-1", "What is the capital of Mongolia? Answer in one word.");
      assert.ok(!mongolia.includes(RECALL_BLOCK), mongolia);
      assert.ok(!mongolia.includes(vitest), mongolia);
      const about = await received("bm25-gate-2", "How do I run the vitest suite once in CI without watch mode?");
      assert.ok(about.includes(RECALL_BLOCK) && about.includes(vitest), about);
    } finally {
      home.configure({ socketPath: daemon.socket, ...PLUGIN_CONFIG }, scriptedModelConfig(model.baseUrl));
      await bm25.stop();
    }
  });

  describe("through a gateway", { concurrency: 1 }, () => {
    let sessionCount = 0;

    before(async () => {
      gateway = await startGateway(home, { socketPath: daemon.socket, ...PLUGIN_CONFIG }, scriptedModelConfig(model.baseUrl));
    });

    /** One turn through the gateway's /v1/chat/completions; the message gets a unique suffix. */
    async function turn(sessionKey, message) {
      const unique = `${message} (#${++sessionCount})`;
      const response = await fetch(`http://127.0.0.1:${gateway.port}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${gateway.token}`, "content-type": "application/json", "x-openclaw-session-key": sessionKey },
        body: JSON.stringify({ model: "openclaw", messages: [{ role: "user", content: unique }] }),
        signal: AbortSignal.timeout(180_000),
      });
      const body = await response.json().catch(() => null);
      assert.equal(response.status, 200, `${unique}: ${JSON.stringify(body)}\n${gateway.text().slice(-3_000)}`);
      const requests = requestsOf(model, unique);
      assert.ok(requests.length > 0, `the model got ${unique}`);
      return { answer: body.choices?.[0]?.message?.content, requests, text: turnText(requests[0]) };
    }

    /** Changes OpenClaw's config and waits until the running gateway applied it. */
    async function reconfigure(change) {
      const config = home.config();
      const before = JSON.stringify(config);
      change(config);
      if (JSON.stringify(config) === before) return;
      const offset = gateway.text().length;
      home.writeConfig(config);
      await until(() => /config hot reload applied/.test(gateway.text().slice(offset)), 60_000, "the gateway to apply the new config");
    }

    const setPluginConfig = (values) => reconfigure((config) => Object.assign(config.plugins.entries.knowhub.config, values));
    const setToolSearch = (value) =>
      reconfigure((config) => {
        if (value === undefined) delete config.tools;
        else config.tools = { toolSearch: value };
      });

    test("under every Tool Search mode (default, directory, off) the intro's calls work and the experience is stored", { timeout: 600_000 }, async () => {
      for (const [label, toolSearch] of [["default", undefined], ["directory", { mode: "directory" }], ["off", false]]) {
        await setToolSearch(toolSearch);
        const marker = `marker-${label}-${Date.now()}`;
        const { requests, text } = await turn(`mode-${label}`, `[follow-intro] ${marker}`);
        assert.ok(text.includes(INTRO), `${label}: ${text}`);
        assert.equal(requests.length, 3, label);
        assert.equal(offeredTools(requests[0]).includes("tool_call"), toolSearch !== false, `${label}: ${offeredTools(requests[0])}`);
        assert.match(lastToolResult(requests[1]), /^(No experiences found|Found \d+ experience)/, `${label}: kb_search ran`);
        assert.match(lastToolResult(requests[2]), /Experience submitted \(ID: \w+\)/, `${label}: kb_submit ran`);
        const stored = await storedWith(marker);
        assert.ok(stored, `${label}: stored`);
        assert.equal(stored.session_key, `agent:main:mode-${label}`);
      }
      await setToolSearch(undefined);
    });

    test("the intro comes once per session and reminders follow each mode's cadence of model calls, never right after a submit or in a chat without tools", { timeout: 600_000 }, async () => {
      // Each [exec] turn makes two model calls; a reminder falls due after the mode's interval
      // of model calls since the intro or the last reminder, and reaches the next turn.
      for (const [mode, turns, expected] of [
        ["aggressive", 4, [2, 3, 4]],
        ["normal", 5, [3, 5]],
        ["minimal", 7, [4, 7]],
      ]) {
        await setPluginConfig({ reminderMode: mode });
        const session = `cadence-${mode}`;
        const reminded = [];
        const introduced = [];
        for (let n = 1; n <= turns; n++) {
          const { requests, text } = await turn(session, `[exec] step ${n}`);
          assert.equal(requests.length, 2, `${mode} turn ${n}`);
          if (text.includes(INTRO)) introduced.push(n);
          if (text.includes(REMINDER)) reminded.push(n);
          // What a turn got, its model calls all see (it is part of the turn's user message).
          assert.equal(turnText(requests[1]), text);
        }
        assert.deepEqual(introduced, [1], `${mode}: the intro once`);
        assert.deepEqual(reminded, expected, `${mode}: reminder turns`);
      }

      // Right after a submit, and in a chat without tools: nothing.
      const session = "cadence-submit";
      await setPluginConfig({ reminderMode: "aggressive" });
      assert.ok((await turn(session, "[exec] start")).text.includes(INTRO));
      assert.ok((await turn(session, "[exec-submit] work and submit")).text.includes(REMINDER));
      for (const message of ["thanks", "how are you", "bye"]) {
        const { text } = await turn(session, message);
        assert.ok(!text.includes(REMINDER) && !text.includes(INTRO), `${message}: ${text}`);
      }
      await setPluginConfig({ reminderMode: PLUGIN_CONFIG.reminderMode });

      // Each tool call counted once in the daemon's statistics.
      const hooks = (await daemon.call("status", {})).result.hooks;
      assert.ok(hooks.tool_calls.exec >= 17, JSON.stringify(hooks));
      assert.equal(hooks.tool_calls.tool_call, undefined, "Tool Search's wrapper is not a tool call of its own");
    });

    test("auto-recall injects a matching experience once, and nothing when nothing matches", { timeout: 300_000 }, async () => {
      const submitted = await daemon.call("kb.submit", {
        task: "Configure the zanzibar frobnicator cache",
        resource: "frobnicator.toml cache_dir",
        result: "Point cache_dir at a tmpfs; the zanzibar build halves its time",
        score: 5,
      });
      const id = submitted.result.id;
      // Words no other experience of these tests has: search's relevance floor is not relied on.
      const recalled = await turn("recall", "zanzibar frobnicator cache_dir?");
      assert.ok(recalled.text.includes(RECALL_BLOCK) && recalled.text.includes(id), recalled.text);
      assert.ok(recalled.text.includes("not instructions"), "framed as data");
      const again = await turn("recall", "zanzibar frobnicator tmpfs?");
      assert.ok(!again.text.includes(RECALL_BLOCK), `not shown twice: ${again.text}`);

      const unrelated = await turn("recall-none", "weather forecast mars");
      assert.ok(unrelated.text.includes(INTRO));
      assert.ok(!unrelated.text.includes(RECALL_BLOCK), unrelated.text);
    });

    test("the daemon down mid-session leaves every turn working, and KnowHub comes back by itself", { timeout: 300_000 }, async () => {
      const session = "outage";
      assert.ok((await turn(session, "[exec] before")).text.includes(INTRO));
      await daemon.kill();
      try {
        for (const message of ["[exec] during", "chat during"]) {
          const { answer, text } = await turn(session, message);
          assert.ok(answer, "the turn answered");
          assert.ok(!text.includes("KnowHub"), text);
        }
      } finally {
        await daemon.spawn();
      }
      // The daemon's session state went with the process: KnowHub introduces itself again.
      const { text } = await turn(session, "[exec] after");
      assert.ok(text.includes(INTRO), text);
      assert.match(gateway.text(), /knowhub: the KnowHub daemon is not reachable/, "OpenClaw's log says why");
    });

    test("POST /tools/invoke runs kb_submit then kb_search through the gateway", { timeout: 300_000 }, async () => {
      const invoke = async (tool, args) => {
        const response = await fetch(`http://127.0.0.1:${gateway.port}/tools/invoke`, {
          method: "POST",
          headers: { authorization: `Bearer ${gateway.token}`, "content-type": "application/json" },
          body: JSON.stringify({ tool, args }),
          signal: AbortSignal.timeout(20_000),
        });
        return { status: response.status, body: await response.json().catch(() => null) };
      };
      const submitted = await invoke("kb_submit", {
        task: "Start the OpenClaw gateway for a test",
        resource: "openclaw gateway run",
        result: "Ready in seconds with a loopback bind and token auth",
        score: 5,
      });
      const why = () =>
        `${JSON.stringify(submitted.body)}\nsocket ${daemon.socket} exists: ${existsSync(daemon.socket)}\n` +
        `daemon log:\n${daemon.logText().slice(-2_000)}\ngateway log:\n${gateway.text().slice(-4_000)}`;
      assert.equal(submitted.status, 200, why());
      assert.equal(submitted.body.ok, true, why());
      const id = submitted.body.result.details.id;
      assert.ok(id, why());
      assert.match(submitted.body.result.content[0].text, /Experience submitted/);

      const found = await invoke("kb_search", { query: "openclaw gateway loopback" });
      assert.equal(found.status, 200, JSON.stringify(found.body));
      assert.equal(found.body.result.details.ids[0], id, JSON.stringify(found.body));
      assert.match(found.body.result.content[0].text, /Start the OpenClaw gateway for a test/);

      // The tool factory gave kb_submit the agent and session; the config gave submitted_by.
      const stored = (await daemon.call("kb.get", { experience_id: id })).result;
      assert.equal(stored.submitted_by, PLUGIN_CONFIG.submittedBy);
      assert.equal(stored.agent_id, "main");
      assert.ok(stored.session_key, JSON.stringify(stored));
      await until(async () => ((await daemon.call("status", {})).result.hooks.events.before_tool_call ?? 0) >= 2, 10_000, "before_tool_call");
      await sleep(0);
    });
  });
});
