// Generated from ui/review.ts by scripts/build.mjs: do not edit.
// The Review view: the experiences held for review, each beside the stored one it resembles,
// with why it is held and where it came from; approve, edit then approve, reject, one or many.

import { button, el, errorText, facts, replace, stars, shownLogin, visible, when } from "./dom.js";

/** Why an experience is held, in words, by flag. */
const REASONS = {
  extracted: "Extracted from a conversation by an LLM: check it before agents rely on it",
  prompt_injection: "Suspected prompt injection: it reads like instructions to an agent",
  risky_action: "Tells an agent to take a risky action (see below)",
};

/** Held experiences from the team hub wait for trust here. */
function reasonsOf(item) {
  const reasons = (item.flags ?? []).filter((flag) => flag !== "reviewed").map((flag) => REASONS[flag] ?? `Flagged: ${flag}`);
  // The daemon's reasons in words: each risky action with the words that matched, or that a
  // teammate's or an extracted experience reaches no agent until approved.
  for (const reason of item.reasons ?? []) reasons.push(String(reason));
  if (item.source === "hub") reasons.push("Shared by a teammate through the team hub, awaiting your trust");
  if (reasons.length === 0) reasons.push("Held for review");
  return reasons;
}

export function reviewView(app) {
  const root = el("section", { className: "khub-view", "aria-labelledby": "khub-tab-review" });
  const list = el("div", { className: "khub-cards" });
  const selected = new Set();
  let items = [];

  const selectAll = el("input", { type: "checkbox", id: "khub-select-all", onChange: () => {
    for (const item of items) selectAll.checked ? selected.add(item.id) : selected.delete(item.id);
    render();
  } });
  const approveMany = button("Approve selected", () => act("approve", [...selected]), { className: "khub-button khub-primary" });
  const rejectMany = button("Reject selected", () => act("reject", [...selected]), { className: "khub-button khub-danger" });
  const toolbar = el("div", { className: "khub-toolbar", role: "toolbar", "aria-label": "Review actions" },
    el("label", { className: "khub-check", for: "khub-select-all" }, selectAll, "Select all"),
    approveMany, rejectMany,
    button("Refresh", () => refresh()),
  );
  const empty = el("p", { className: "khub-empty" });
  root.append(toolbar, empty, list);

  async function refresh() {
    try {
      const answer = await app.request("knowhub.ui.pending", {});
      items = answer?.experiences ?? [];
      for (const id of [...selected]) if (!items.some((item) => item.id === id)) selected.delete(id);
      app.setPendingCount(items.length);
      render();
    } catch (error) {
      app.failed(error);
      items = [];
      app.setPendingCount(0);
      render(errorText(error));
    }
  }

  /** After a card leaves, the keyboard goes on at the card that took its place (or the toolbar). */
  function keepFocusAt(id) {
    const position = items.findIndex((item) => item.id === id);
    return () => {
      const cards = list.querySelectorAll("article.khub-card");
      const next = cards[Math.min(position, cards.length - 1)];
      (next?.querySelector("button:not([disabled])") ?? selectAll).focus();
    };
  }

  async function act(action, ids, extra = {}) {
    if (ids.length === 0) return app.say("Select at least one experience first.");
    const refocus = keepFocusAt(ids[0]);
    try {
      // The versions shown, so that nothing changed since is decided on.
      const versions = ids.map((id) => items.find((item) => item.id === id)?.version);
      const shown = versions.every((version) => typeof version === "string") ? { versions } : {};
      const answer = await app.request(`knowhub.ui.${action}`, { ids, ...shown, ...extra });
      const changed = answer?.changed?.length ?? 0;
      const merged = answer?.merged?.length ?? 0;
      const verb = action === "approve" ? "Approved" : "Rejected";
      app.say(`${verb} ${changed} experience${changed === 1 ? "" : "s"}${merged ? `, ${merged} merged into the stored one` : ""}.`);
      for (const id of ids) selected.delete(id);
      await refresh();
      refocus();
      return true;
    } catch (error) {
      app.say(`Could not ${action}: ${errorText(error)}`, true);
      app.failed(error);
      return false;
    }
  }

  function render(failure) {
    const writable = app.canWrite();
    approveMany.disabled = rejectMany.disabled = !writable || selected.size === 0;
    approveMany.textContent = `Approve selected (${selected.size})`;
    rejectMany.textContent = `Reject selected (${selected.size})`;
    selectAll.checked = items.length > 0 && selected.size === items.length;
    selectAll.disabled = items.length === 0;
    empty.textContent = failure ? (/start it with/i.test(failure) ? "The review queue cannot be read until the daemon answers." : `The review queue could not be read: ${failure}`) : items.length === 0 ? "Nothing is waiting for review." : !writable ? "Your connection can read but not write: approving and rejecting need the operator.write scope." : "";
    empty.hidden = empty.textContent === "";
    replace(list, items.map((item) => card(item, writable)));
  }

  function card(item, writable) {
    const titleId = `khub-held-${item.id}`;
    const check = el("input", { type: "checkbox", checked: selected.has(item.id), "aria-label": `Select: ${visible(item.task)}`, onChange: () => {
      check.checked ? selected.add(item.id) : selected.delete(item.id);
      render();
    } });
    const held = el("div", { className: "khub-side" }, el("h4", { text: "Held for review" }), experienceFacts(item), contentOf(item));
    const similar = item.similar
      ? el("div", { className: "khub-side khub-similar" },
          el("h4", { text: `Stored experience it resembles (${Math.round((item.similarity ?? 0) * 100)}% similar; approving merges into it when they say the same)` }),
          experienceFacts(item.similar))
      : el("div", { className: "khub-side khub-similar" }, el("h4", { text: "Stored experience it resembles" }), el("p", { className: "khub-muted", text: "Nothing stored resembles it: approving adds a new experience." }));
    const note = el("p", { className: "khub-card-error", role: "alert", hidden: true });
    const actions = el("div", { className: "khub-actions" },
      button("Approve", () => act("approve", [item.id]), { className: "khub-button khub-primary", disabled: !writable, "aria-label": `Approve: ${visible(item.task)}` }),
      button("Edit then approve…", () => editForm(), { className: "khub-button", disabled: !writable }),
      button("Reject", () => act("reject", [item.id]), { className: "khub-button khub-danger", disabled: !writable, "aria-label": `Reject: ${visible(item.task)}` }),
    );
    const body = el("div", { className: "khub-compare" }, held, similar);
    const node = el("article", { className: "khub-card", "aria-labelledby": titleId, dataset: { id: item.id } },
      el("header", { className: "khub-card-head" }, check,
        el("h3", { id: titleId, className: "khub-title", text: item.task }),
        el("span", { className: "khub-chip", text: item.source })),
      el("ul", { className: "khub-reasons", "aria-label": "Why it is held" }, reasonsOf(item).map((reason) => el("li", { text: reason }))),
      provenance(item),
      body, note, actions);

    function editForm() {
      const field = (label, name, value, multiline) => {
        const id = `khub-edit-${name}-${item.id}`;
        const input = multiline ? el("textarea", { id, name, rows: 3, value }) : el("input", { id, name, type: "text", value });
        return el("div", { className: "khub-field" }, el("label", { for: id, text: label }), input);
      };
      const score = el("select", { id: `khub-edit-score-${item.id}`, name: "score" },
        [1, 2, 3, 4, 5].map((n) => el("option", { value: String(n), selected: n === item.score }, `${n}/5`)));
      const form = el("form", { className: "khub-edit", "aria-label": "Edit before approving" },
        field("Task", "task", item.task, true),
        field("Resource", "resource", item.resource, false),
        field("Result", "result", item.result, true),
        el("div", { className: "khub-field" }, el("label", { for: score.id, text: "Rating" }), score),
        el("div", { className: "khub-actions" },
          el("button", { type: "submit", className: "khub-button khub-primary" }, "Save and approve"),
          button("Cancel", () => cancel())));
      const cancel = () => {
        form.replaceWith(held);
        actions.hidden = false;
        actions.querySelector("button")?.focus();
      };
      form.addEventListener("keydown", (event) => {
        if (event.key === "Escape") {
          event.preventDefault();
          cancel();
        }
      });
      form.addEventListener("submit", async (event) => {
        event.preventDefault();
        const data = new FormData(form);
        const edit = {};
        for (const key of ["task", "resource", "result"]) if (data.get(key) !== item[key]) edit[key] = String(data.get(key));
        if (Number(data.get("score")) !== item.score) edit.score = Number(data.get("score"));
        const submit = form.querySelector("button[type=submit]");
        submit.disabled = true;
        try {
          await app.request("knowhub.ui.approve", { ids: [item.id], edit, ...(item.version ? { versions: [item.version] } : {}) });
          app.say("Approved the edited experience.");
          const refocus = keepFocusAt(item.id);
          await refresh();
          refocus();
        } catch (error) {
          // The edited text passes the write gate again; say why it was refused and keep the form.
          note.textContent = `Not approved: ${errorText(error)}`;
          note.hidden = false;
        } finally {
          submit.disabled = false;
        }
      });
      held.replaceWith(form);
      actions.hidden = true;
      form.querySelector("textarea")?.focus();
    }
    return node;
  }

  return { root, refresh, focus: () => (list.querySelector("input,button") ?? selectAll).focus() };
}

/** Task, resource, result and rating of an experience, every text as text. */
export function experienceFacts(item) {
  return facts([
    ["Task", item.task],
    ["Resource", el("code", { text: item.resource })],
    ["Result", el("span", { className: "khub-pre", text: item.result })],
    ["Rating", stars(item.score)],
    ["Details", item.has_content ? `yes (${visible(item.content_type ?? "text")})` : ""],
  ]);
}

/** Characters of a held experience's content shown on its card. */
const CONTENT_CHARS = 1_500;

/**
 * A held experience's detailed content, open on its card: approving lets agents read it through
 * `kb_content`, so it is read before the decision, not after.
 */
function contentOf(item) {
  if (typeof item.content !== "string") return null;
  const chars = [...item.content];
  const more = chars.length > CONTENT_CHARS ? `\n… ${chars.length - CONTENT_CHARS} more characters` : "";
  return el("details", { className: "khub-content", open: true },
    el("summary", { text: `Content (${chars.length} characters)` }),
    el("div", { className: "khub-pre", text: chars.slice(0, CONTENT_CHARS).join("") + more }));
}

/** Where a held experience came from: who, which agent and session, the job and its evidence. */
function provenance(item) {
  const origins = (item.origins ?? []).map((origin) => `${shownLogin(origin.author)} on ${visible(origin.machine)}`).join(", ");
  const pairs = [
    ["Source", item.source],
    ["Agent", item.agent_id],
    ["Submitted by", item.submitted_by],
    ["Session", item.session_key],
    ["Shared by", origins],
    ["Held since", when(item.created_at)],
    ["Confidence", typeof item.confidence === "number" ? `${Math.round(item.confidence * 100)}%` : ""],
    ["Extraction", item.extraction ? `job ${item.extraction.job_id}, outcome ${visible(item.extraction.outcome)}` : ""],
    ["Id", el("code", { text: item.id })],
  ];
  const box = el("div", { className: "khub-provenance" }, facts(pairs, "khub-facts khub-inline"));
  const evidence = Array.isArray(item.extraction?.evidence) ? item.extraction.evidence : [];
  if (evidence.length > 0) {
    box.append(el("details", { className: "khub-evidence" },
      el("summary", { text: `The conversation turns it cites (${evidence.length})` }),
      el("ol", {}, evidence.map((turn) => el("li", {},
        el("span", { className: "khub-muted", text: `turn ${turn.turn ?? "?"}, ${turn.role ?? ""}${turn.tool ? `, tool ${turn.tool}` : ""}${turn.error ? ", error" : ""}: ` }),
        el("span", { className: "khub-pre", text: turn.excerpt ?? "" }))))));
  }
  return box;
}
