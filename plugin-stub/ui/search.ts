// The Search view: the same search as the kb_search tool, by origin (mine, team) and mode, each
// result with its rating and provenance, and its full record and details on demand.

import { button, el, errorText, facts, replace, stars, shownLogin, visible, when } from "./dom.ts";

export function searchView(app) {
  const root = el("section", { className: "khub-view", "aria-labelledby": "khub-tab-search" });
  const select = (id, label, options) =>
    el("div", { className: "khub-field" }, el("label", { for: id, text: label }),
      el("select", { id, name: id.replace("khub-search-", "") }, options.map(([value, text]) => el("option", { value }, text))));
  const query = el("input", { id: "khub-search-query", name: "query", type: "search", placeholder: "What are you about to do? (any language)", autocomplete: "off" });
  const form = el("form", { className: "khub-search", role: "search" },
    el("div", { className: "khub-field khub-grow" }, el("label", { for: query.id, text: "Search experiences" }), query),
    select("khub-search-origin", "Whose", [["all", "All"], ["mine", "Mine"], ["team", "Team"]]),
    select("khub-search-mode", "Mode", [["hybrid", "Hybrid"], ["bm25", "Keywords (BM25)"], ["vector", "Meaning (vector)"]]),
    select("khub-search-min", "Rated at least", [["1", "1"], ["2", "2"], ["3", "3"], ["4", "4"], ["5", "5"]]),
    el("button", { type: "submit", className: "khub-button khub-primary" }, "Search"));
  const summary = el("p", { className: "khub-muted", role: "status" });
  const results = el("ol", { className: "khub-results" });
  root.append(form, summary, results);

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const data = new FormData(form);
    if (!String(data.get("query") ?? "").trim()) {
      summary.textContent = "Type what you want to find.";
      return;
    }
    summary.textContent = "Searching…";
    try {
      const answer = await app.request("knowhub.ui.search", {
        query: String(data.get("query")), origin: data.get("origin"), mode: data.get("mode"), min_score: Number(data.get("min")), top_k: 20,
      });
      const hits = answer?.results ?? [];
      summary.textContent = `${hits.length} experience${hits.length === 1 ? "" : "s"} found (${visible(answer?.mode ?? "")})${answer?.note ? `: ${visible(answer.note)}` : ""}.`;
      replace(results, hits.map(hitView));
    } catch (error) {
      summary.textContent = `Search failed: ${errorText(error)}`;
      replace(results);
      app.failed(error);
    }
  });

  function hitView(hit) {
    const more = el("div", { className: "khub-more", hidden: true });
    const toggle = button("Details", async () => {
      if (!more.hidden) {
        more.hidden = true;
        toggle.setAttribute("aria-expanded", "false");
        return;
      }
      try {
        const answer = await app.request("knowhub.ui.experience", { id: hit.id });
        replace(more, details(answer));
      } catch (error) {
        replace(more, el("p", { className: "khub-card-error", text: `Could not read it: ${errorText(error)}` }));
      }
      more.hidden = false;
      toggle.setAttribute("aria-expanded", "true");
    }, { "aria-expanded": "false", "aria-label": `Details of: ${visible(hit.task)}` });
    return el("li", { className: "khub-card khub-hit", dataset: { id: hit.id } },
      el("header", { className: "khub-card-head" }, el("h3", { className: "khub-title", text: hit.task }), stars(hit.score)),
      facts([
        ["Resource", el("code", { text: hit.resource })],
        ["Result", el("span", { className: "khub-pre", text: hit.result })],
      ]),
      facts([
        ["Source", hit.source],
        ["Origin", hit.provenance],
        ["Agent", hit.agent_id],
        ["Added", when(hit.created_at)],
        ["Relevance", typeof hit.relevance === "number" ? hit.relevance.toFixed(3) : ""],
        ["Id", el("code", { text: hit.id })],
      ], "khub-facts khub-inline"),
      el("div", { className: "khub-actions" }, toggle), more);
  }
  return { root, refresh: async () => undefined, focus: () => query.focus() };
}

/** An experience's whole record: provenance, how often it was merged and recalled, its variants and content. */
function details(answer) {
  const record = answer?.record ?? {};
  const origins = (record.origins ?? []).map((o) => `${shownLogin(o.author)} on ${visible(o.machine)}${o.conflict ? ` (conflict: ${visible(o.conflict)})` : ""}`).join("; ");
  const parts = [facts([
    ["Submitted by", record.submitted_by],
    ["Session", record.session_key],
    ["Shared by", origins],
    ["Status", record.status],
    ["Flags", (record.flags ?? []).join(", ")],
    ["Updated", when(record.updated_at)],
    ["Merged", record.merge_count ? `${record.merge_count} time(s)` : ""],
    ["Recalled", record.recall_count ? `${record.recall_count} time(s)` : ""],
  ], "khub-facts khub-inline")];
  if ((record.variants ?? []).length > 0) {
    parts.push(el("h4", { text: `Variants merged into it (${record.variants.length})` }),
      el("ul", {}, record.variants.map((v) => el("li", {}, el("span", { text: `${v.result} ` }), stars(v.score)))));
  }
  if (answer?.content?.content) {
    parts.push(el("h4", { text: `Details (${visible(answer.content.content_type ?? "text")})` }), el("pre", { className: "khub-content", text: answer.content.content }));
  }
  return parts;
}
