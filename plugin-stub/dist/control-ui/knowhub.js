// Generated from ui/knowhub.ts by scripts/build.mjs: do not edit.
// The browser entry of KnowHub's Control UI tab: registers the page OpenClaw shows at
// /plugin?plugin=knowhub&id=knowhub, with three views (Review, Search, Health), a banner when the
// daemon is down or slow, and one live region that announces what each action did.
//
// It talks only to the plugin's own gateway methods (ui.ts) through `host.request`, which uses
// the signed-in browser's gateway connection and scopes. Built to dist/control-ui/ by
// scripts/build.mjs; served by the gateway when gateway.controlUi.experimental.customPlugins is on.

import { button, el, errorText, replace, visible } from "./dom.js";
import { healthView } from "./health.js";
import { reviewView } from "./review.js";
import { searchView } from "./search.js";

const PAGE_ID = "knowhub";

/**
 * How long the page waits for the gateway's answer: the plugin's own deadline for the method's
 * daemon calls (ui.ts: 5 s a read, the overview two of them; 20 s a write; 65 s a sync) and
 * some. A request the gateway never answers (a dropped connection, a stuck gateway) becomes an
 * error the view shows, not a view that keeps its old contents as if they were current.
 */
const GATEWAY_DEADLINE_MS = { read: 20_000, write: 35_000, "knowhub.ui.sync": 80_000 };
const WRITES = new Set(["knowhub.ui.approve", "knowhub.ui.reject", "knowhub.ui.retry"]);

function withDeadline(promise, method) {
  const ms = GATEWAY_DEADLINE_MS[method] ?? (WRITES.has(method) ? GATEWAY_DEADLINE_MS.write : GATEWAY_DEADLINE_MS.read);
  let timer;
  const deadline = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the gateway gave no answer to ${method} within ${ms / 1000} s; reload the page if it keeps happening`)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

function mountApp(container, host) {
  let current = null;
  const live = el("p", { className: "khub-live", role: "status", "aria-live": "polite" });
  const banner = el("div", { className: "khub-banner", role: "alert", hidden: true });
  const app = {
    request: (method, params) => withDeadline(host.request(method, params), method),
    canWrite: () => host.connection?.canWrite !== false,
    say(message, isError = false) {
      live.textContent = visible(message);
      live.classList.toggle("khub-live-error", isError);
    },
    /** A failed request that says the daemon is down or slow shows the banner. */
    failed(error) {
      const message = errorText(error);
      if (/not reachable|did not answer|not running|start it with/i.test(message)) showBanner(/did not answer/i.test(message) ? "slow" : "down", message);
    },
    daemonState(overview) {
      if (overview?.daemon === "up") banner.hidden = true;
      else showBanner(overview?.daemon, `${visible(overview?.message ?? "")}`);
    },
    setPendingCount(n) {
      tabs.review.textContent = n > 0 ? `Review (${n})` : "Review";
    },
  };

  function showBanner(state, message) {
    const title = state === "slow" ? "The KnowHub daemon is not answering in time." : state === "untrusted" ? "The KnowHub socket is not yours; nothing was sent to it." : "The KnowHub daemon is not running.";
    // The gateway's message may already say how to start the daemon; the banner says it once.
    const cause = message.replace(/;\s*start it with[\s\S]*$/i, "");
    replace(banner,
      el("strong", { text: title }),
      el("p", { className: "khub-muted", text: cause }),
      el("p", {}, "Start it with ", el("code", { text: "kbctl service install" }), " (systemd or launchd), or run ", el("code", { text: "knowhubd" }), " in a terminal; ", el("code", { text: "kbctl status" }), " says what is wrong."),
      button("Try again", () => show(current?.name ?? "review")));
    banner.hidden = false;
  }

  const views = { review: reviewView(app), search: searchView(app), health: healthView(app) };
  const labels = { review: "Review", search: "Search", health: "Health and activity" };
  const tabs = {};
  const tablist = el("div", { className: "khub-tabs", role: "tablist", "aria-label": "KnowHub" });
  for (const name of Object.keys(views)) {
    tabs[name] = el("button", { type: "button", role: "tab", id: `khub-tab-${name}`, "aria-controls": `khub-panel-${name}`, className: "khub-tab", onClick: () => show(name, true) }, labels[name]);
    tablist.append(tabs[name]);
  }
  // Arrow keys, Home and End move between tabs, as in any tab list.
  tablist.addEventListener("keydown", (event) => {
    const names = Object.keys(views);
    const at = names.indexOf(current?.name);
    const next = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: names.length - 1 }[event.key];
    if (next === undefined) return;
    event.preventDefault();
    show(names[(next + names.length) % names.length], false, true);
  });
  const panels = {};
  for (const [name, view] of Object.entries(views)) {
    panels[name] = el("div", { role: "tabpanel", id: `khub-panel-${name}`, "aria-labelledby": `khub-tab-${name}`, hidden: true, tabindex: "0" }, view.root);
  }

  async function show(name, focusView = false, focusTab = false) {
    current = { name };
    for (const [other, tab] of Object.entries(tabs)) {
      const selected = other === name;
      tab.setAttribute("aria-selected", String(selected));
      tab.tabIndex = selected ? 0 : -1;
      panels[other].hidden = !selected;
    }
    if (focusTab) tabs[name].focus();
    // The overview says whether the daemon answers, whichever view is open (the health view
    // asks for it itself).
    const overview = name === "health" ? null : app.request("knowhub.ui.overview", {}).then((answer) => app.daemonState(answer), (error) => app.failed(error));
    await Promise.all([views[name].refresh(), overview]);
    if (focusView) views[name].focus();
  }

  const root = el("div", { className: "khub", lang: host.locale || undefined },
    el("header", { className: "khub-head" },
      el("h2", { className: "khub-brand", text: "KnowHub" }),
      el("span", { className: "khub-muted", text: "What your agents learned: review it, search it, see how the daemon is doing." })),
    banner, tablist, Object.values(panels), live);
  container.append(root);
  show("review");
  return { focus: () => tabs[current?.name ?? "review"].focus(), dispose: () => root.remove() };
}

export default {
  id: "knowhub",
  activate(host) {
    return host.ui.registerPage({ id: PAGE_ID, label: "KnowHub", mount: (container, context) => mountApp(container, context?.host ?? host) });
  },
};
