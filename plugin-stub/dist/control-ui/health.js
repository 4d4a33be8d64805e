// Generated from ui/health.ts by scripts/build.mjs: do not edit.
// The Health view: what `kbctl status` knows, readable: counts, the embedding model, the index,
// extraction jobs (with retry) and today's token spend against the cap, and the team hub.

import { button, duration, el, errorText, facts, replace, shownLogin, visible, when } from "./dom.js";

export function healthView(app) {
  const root = el("section", { className: "khub-view", "aria-labelledby": "khub-tab-health" });
  const body = el("div", { className: "khub-grid" });
  root.append(el("div", { className: "khub-toolbar" }, button("Refresh", () => refresh())), body);

  async function refresh() {
    let overview;
    try {
      overview = await app.request("knowhub.ui.overview", {});
    } catch (error) {
      app.failed(error);
      replace(body, el("p", { className: "khub-card-error", text: `Could not ask the gateway: ${errorText(error)}` }));
      return;
    }
    app.daemonState(overview);
    if (overview?.daemon !== "up") {
      replace(body, el("p", { className: "khub-muted", text: "Nothing to show until the daemon answers." }));
      return;
    }
    const s = overview.status ?? {};
    replace(body, daemonCard(s), countsCard(s), embedderCard(s), indexCard(s), extractionCard(s, overview.jobs), hubCard(s.hub ?? {}));
    app.setPendingCount(s.counts?.pending ?? 0);
  }

  function card(title, ...children) {
    return el("section", { className: "khub-card khub-health", "aria-label": title }, el("h3", { className: "khub-title", text: title }), children);
  }

  function state(word, good) {
    return el("span", { className: `khub-state ${good ? "khub-good" : "khub-bad"}`, text: word });
  }

  function daemonCard(s) {
    const services = (s.services ?? []).map((service) =>
      el("li", {}, state(service.state, !service.unhealthy), ` ${visible(service.name)}${service.reason ? `: ${visible(service.reason)}` : ""}`));
    return card("Daemon",
      facts([
        ["Health", state(s.healthy ? "healthy" : "unhealthy", s.healthy)],
        ["Version", `${visible(s.version)} (protocol ${s.protocol})`],
        ["Up for", duration(s.uptime_s)],
        ["Last error", s.last_error ? `${visible(s.last_error.message)} (${when(s.last_error.at)})` : ""],
      ]),
      services.length ? el("ul", { className: "khub-services", "aria-label": "Services" }, services) : null);
  }

  function countsCard(s) {
    return card("Experiences", facts([
      ["Searchable", String(s.counts?.active ?? 0)],
      ["Held for review", String(s.counts?.pending ?? 0)],
      ["Rejected", String(s.counts?.rejected ?? 0)],
      ["From teammates", String(s.hub?.team_experiences ?? 0)],
    ]));
  }

  function embedderCard(s) {
    const e = s.embedder ?? {};
    return card("Embedding model", facts([
      ["State", state(e.state, e.state === "ready")],
      ["Model", e.model],
      ["Vectors", e.vectors !== undefined ? `${e.vectors}${e.dimensions ? ` × ${e.dimensions} dimensions` : ""}` : ""],
      ["Waiting to be embedded", e.backlog ? String(e.backlog) : ""],
      ["Detail", e.detail],
    ]));
  }

  function indexCard(s) {
    const i = s.index ?? {};
    return card("Search index", facts([
      ["State", state(i.state, i.state === "ready")],
      ["Documents", String(i.documents ?? 0)],
      ["Caught up", i.applied_seq === i.store_seq ? "yes" : `${i.applied_seq} of ${i.store_seq} changes`],
      ["Detail", i.detail],
    ]));
  }

  function extractionCard(s, jobs) {
    const x = s.extraction ?? {};
    const cap = Number(x.daily_token_cap) || 0;
    const used = Number(x.tokens_today) || 0;
    const spend = el("div", { className: "khub-spend" },
      el("progress", { max: String(cap || 1), value: String(Math.min(used, cap || 1)), "aria-label": "Tokens spent today" }),
      ` ${used.toLocaleString()} of ${cap ? cap.toLocaleString() : "no"} tokens today`);
    const rows = (jobs?.jobs ?? []).map((job) => el("tr", {},
      el("td", { text: String(job.id) }), el("td", {}, state(job.state, job.state !== "failed")),
      el("td", { text: String(job.attempts) }), el("td", { text: String(job.proposals) }),
      el("td", { text: when(job.finished_at ?? job.created_at) }), el("td", { className: "khub-pre", text: job.error ?? "" }),
      el("td", {}, job.retryable ? button("Retry", () => retry(job.id), { disabled: !app.canWrite(), "aria-label": `Retry job ${job.id}` }) : "")));
    return card("Extraction",
      facts([
        ["Enabled", x.enabled ? "yes" : "no"],
        ["LLM", x.route === "endpoint" ? `${visible(x.model ?? "")} at ${visible(x.endpoint ?? "")}` : "the agent's own model in OpenClaw"],
        ["Jobs", `${x.queued ?? 0} queued, ${x.done ?? 0} done, ${x.failed ?? 0} failed, ${x.skipped ?? 0} skipped, ${x.dropped ?? 0} dropped`],
        ["Proposals", `${x.proposed ?? 0} proposed, ${x.pending_proposals ?? 0} waiting for review, ${x.quarantined ?? 0} held as suspect, ${x.over_limit ?? 0} over the limits, ${x.low_confidence ?? 0} not confident enough`],
        ["Token spend", spend],
        ["Waiting for", x.waiting],
        ["Last error", x.last_error ? `${visible(x.last_error.message)} (${when(x.last_error.at)})` : ""],
      ]),
      rows.length ? el("table", { className: "khub-table" },
        el("caption", { text: "Recent extraction jobs" }),
        el("thead", {}, el("tr", {}, ["Job", "State", "Attempts", "Proposals", "When", "Error", ""].map((h) => el("th", { text: h })))),
        el("tbody", {}, rows)) : el("p", { className: "khub-muted", text: jobs?.error ? `Jobs could not be read: ${visible(jobs.error)}` : "No extraction jobs yet." }));
  }

  async function retry(id) {
    try {
      const answer = await app.request("knowhub.ui.retry", { ids: [id] });
      app.say(answer?.retried?.includes(id) ? `Job ${id} queued again.` : `Job ${id} was not retried (its conversation may be gone).`);
    } catch (error) {
      app.say(`Could not retry job ${id}: ${errorText(error)}`, true);
    }
    await refresh();
  }

  function hubCard(h) {
    const on = h.state && h.state !== "off";
    return card("Team hub",
      facts([
        ["State", state(h.state ?? "off", h.state === "connected" || h.state === "off")],
        ["Hub", on ? `${visible(h.target ?? "")} (team ${visible(h.team ?? "")}, TLS ${visible(h.tls ?? "")})` : "none configured ([hub] in the daemon's config.toml)"],
        ["Last sync", on ? (h.last_sync ? `${when(h.last_sync)} (${duration(h.lag_s)} ago)` : "never") : ""],
        ["To push", on ? `${h.outbox ?? 0} waiting, ${h.refused ?? 0} refused by the hub (skipped until they change)` : ""],
        ["To pull", on ? `${h.behind ?? 0} teammates' changes not applied yet` : ""],
        ["Since start", on ? `${h.pushed ?? 0} pushed, ${h.pulled ?? 0} pulled` : ""],
        ["Shares as", on && h.role ? visible(h.role) : ""],
        ["Stalled", h.stalled_since ? `no sync round has completed since ${when(h.stalled_since)}` : ""],
        ["Held back", (h.held ?? []).map((held) => `${held.changes} changes of ${shownLogin(held.author)} (over their daily allowance here)`).join("; ")],
        ["Hidden here", h.hidden ? `${h.hidden} teammates' experiences you deleted (kbctl hub hidden)` : ""],
        ["Skipped", h.skipped ? `${h.skipped} teammates' rows could not be taken` : ""],
        ["Last error", h.last_error ? `${visible(h.last_error.message)} (${when(h.last_error.at)})` : ""],
      ]),
      (h.skipped_recent ?? []).length
        ? el("ul", { className: "khub-services", "aria-label": "Skipped rows" }, (h.skipped_recent ?? []).map((skip) =>
          el("li", { text: `hub change ${skip.hub_seq} by ${shownLogin(skip.author ?? "?")} (id ${visible(skip.id ?? "?")}): ${visible(skip.reason)}` })))
        : null,
      on ? el("div", { className: "khub-actions" }, button("Sync now", async () => {
        try {
          const answer = await app.request("knowhub.ui.sync", {});
          app.say(`Synced: ${answer?.pushed ?? 0} pushed, ${answer?.pulled ?? 0} pulled.`);
        } catch (error) {
          app.say(`Sync failed: ${errorText(error)}`, true);
        }
        await refresh();
      }, { disabled: !app.canWrite() })) : null);
  }

  return { root, refresh, focus: () => root.querySelector("button")?.focus() };
}
