// Generated from extraction.ts by scripts/build.mjs: do not edit.
// Extraction on OpenClaw's own model, with no second key: at the start of a turn, the plugin
// asks the daemon for queued extraction jobs (`extract.lease`), runs each as a tool-free
// completion on the agent's model (`api.runtime.llm.complete`, else
// `api.runtime.subagent.complete`), and hands the text and its token usage back (`extract.result`).
// The prompt, the parsing, the checks and the storage are the daemon's, as for its own endpoint.

/** Jobs run per turn at most; the rest wait for the next one. */
const JOBS_PER_KICK = 3;

/** Runs the daemon's queued extraction jobs on OpenClaw's model, one at a time. */
export class ExtractionPump {
  client;
  llm;
  subagent;
  logger;
  running = false;
  warned = false;

  constructor(client, llm, subagent, logger) {
    this.client = client;
    this.llm = llm;
    this.subagent = subagent;
    this.logger = logger;
  }

  /** Starts running queued jobs unless already running; returns at once. */
  kick(agentId) {
    if (this.running || !this.available()) return;
    this.running = true;
    this.pump(agentId)
      .catch(() => undefined)
      .finally(() => {
        this.running = false;
      });
  }

  available() {
    return typeof this.llm?.complete === "function" || typeof this.subagent?.complete === "function";
  }

  /** One completion on the agent's model: `llm.complete` (the daemon's schema, usage), else `subagent.complete`. */
  async complete(job, agentId) {
    if (typeof this.llm?.complete === "function") {
      const answer = await this.llm.complete.call(this.llm, {
        messages: [{ role: "user", content: job.message }],
        systemPrompt: job.system,
        ...(job.response_format ? { responseFormat: job.response_format } : {}),
        ...(job.max_tokens ? { maxTokens: job.max_tokens } : {}),
        temperature: 0,
        purpose: "knowhub.extraction",
        // No agentId: naming one needs the operator's allowAgentIdOverride; the default
        // agent's model and credentials serve.
        signal: AbortSignal.timeout(job.timeout_ms),
      });
      const usage = answer?.usage;
      const tokens = usage?.totalTokens ?? (usage?.inputTokens ?? 0) + (usage?.outputTokens ?? 0);
      return { text: typeof answer?.text === "string" ? answer.text : "", ...(tokens > 0 ? { tokens } : {}) };
    }
    const answer = await this.subagent .complete .call(this.subagent, {
      agentId,
      message: job.message,
      extraSystemPrompt: job.system,
      timeoutMs: job.timeout_ms,
    });
    return { text: typeof answer?.text === "string" ? answer.text : "" };
  }

  async pump(agentId) {
    if (!this.available()) return;
    for (let run = 0; run < JOBS_PER_KICK; run++) {
      const lease = (await this.client.call("extract.lease", {}, { timeoutMs: 5_000 }));
      const job = lease?.job;
      if (!job) return;
      let result;
      try {
        const answer = await this.complete(job, job.agent_id ?? agentId ?? "main");
        result = { job_id: job.job_id, text: answer.text, ...(answer.tokens !== undefined ? { tokens: answer.tokens } : {}) };
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        if (!this.warned) {
          this.warned = true;
          this.logger?.warn(`knowhub: extraction on OpenClaw's model failed (${message}); the daemon retries, and says why in kbctl status`);
        }
        result = { job_id: job.job_id, error: message };
      }
      await this.client.call("extract.result", result, { timeoutMs: 30_000 });
      if (result.error !== undefined) return;
    }
  }
}
