// Generated from ui/dom.ts by scripts/build.mjs: do not edit.
// The page's only way to put things on screen: elements built with createElement and text set
// with textContent, never HTML. Stored text shows its control and bidi characters as `\u{hex}`.
//
// Experiences are written by agents, teammates and LLMs, so any of them may hold markup, script
// or terminal escapes. Nothing here parses a string as HTML or sets an attribute a string could
// turn into script (no innerHTML, no href, no on* attribute from data).

/**
 * Characters that must not act on the page: C0 and C1 controls but tab and newline, DEL, the
 * bidi marks, embeddings, overrides and isolates, and invisible characters that can carry text
 * (tag characters, zero-width space, word joiner, BOM). The same set as the plugin's
 * `visibleControls` (tools.ts) and the daemon's `kb_core::display::is_unsafe_to_show`.
 */
export const UNSAFE_TO_SHOW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u180e\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\u{e0000}-\u{e007f}]/gu;

/**
 * A teammate's login as shown: one that mixes ASCII letters with other characters (`bоb`, its `о`
 * Cyrillic) has those written as `\u{hex}`, so that it cannot pass for a trusted `bob`. The same
 * rule as the daemon's `kb_core::display::shown_login` (kbctl and the provenance labels).
 */
export function shownLogin(login) {
  const value = visible(login);
  if (!/[A-Za-z]/.test(value) || !/[^\u0000-\u007f]/u.test(value)) return value;
  return value.replace(/[^\u0000-\u007f]/gu, (ch) => `\\u{${ch.codePointAt(0).toString(16)}}`);
}

/** Stored text as it may be shown: every unsafe character written out as `\u{hex}`. */
export function visible(text) {
  const value = typeof text === "string" ? text : text === undefined || text === null ? "" : String(text);
  return value.replace(UNSAFE_TO_SHOW, (ch) => `\\u{${ch.codePointAt(0).toString(16)}}`);
}

/**
 * An element: `props` sets the class, a few safe attributes and event listeners; each child is
 * a node, or text (made visible) that becomes a text node. Arrays of children are flattened.
 */
export function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "className") node.className = value;
    else if (key === "text") node.textContent = visible(value);
    else if (key.startsWith("on") && typeof value === "function") node.addEventListener(key.slice(2).toLowerCase(), value);
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key === "value") node.value = visible(value);
    else if (key === "checked" || key === "disabled" || key === "selected" || key === "open") node[key] = Boolean(value);
    else if (SAFE_ATTRIBUTES.test(key)) node.setAttribute(key, value === true ? "" : visible(value));
    else throw new Error(`knowhub: attribute ${key} is not allowed`);
  }
  append(node, children);
  return node;
}

/** Attributes whose value cannot run anything, whatever the text. */
const SAFE_ATTRIBUTES = /^(aria-[a-z]+|role|id|for|type|name|title|placeholder|tabindex|rows|min|max|step|lang|dir|autocomplete|spellcheck|hidden|maxlength|inputmode|enterkeyhint)$/;

export function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(typeof child === "string" || typeof child === "number" ? document.createTextNode(visible(String(child))) : child);
  }
  return node;
}

/** Replaces everything inside `node` with `children`. */
export function replace(node, ...children) {
  node.replaceChildren();
  return append(node, children);
}

/** A definition list of label, value pairs; empty values are left out. */
export function facts(pairs, className = "khub-facts") {
  const list = el("dl", { className });
  for (const [label, value] of pairs) {
    if (value === undefined || value === null || value === "") continue;
    list.append(el("div", {}, el("dt", { text: label }), el("dd", {}, value)));
  }
  return list;
}

/** A rating as stars with the number beside it, readable by a screen reader. */
export function stars(score) {
  const n = Math.max(0, Math.min(5, Number(score) || 0));
  return el("span", { className: "khub-stars", role: "img", "aria-label": `rated ${n} of 5` }, "★".repeat(n) + "☆".repeat(5 - n), el("span", { className: "khub-muted" }, ` ${n}/5`));
}

/** A button; `onClick` may be async: the button is disabled while it runs. */
export function button(label, onClick, props = {}) {
  const node = el("button", { type: "button", className: "khub-button", ...props }, label);
  node.addEventListener("click", async (event) => {
    if (node.disabled) return;
    node.disabled = true;
    try {
      await onClick(event);
    } finally {
      node.disabled = Boolean(props.disabled);
    }
  });
  return node;
}

/** A date and time in the user's locale, or the text itself when it is no date. */
export function when(value) {
  if (!value) return "";
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? String(value) : date.toLocaleString();
}

/** Seconds as a short duration: 45 s, 12 min, 3 h, 2 d. */
export function duration(seconds) {
  const s = Number(seconds);
  if (!Number.isFinite(s)) return "";
  if (s < 90) return `${Math.round(s)} s`;
  if (s < 5400) return `${Math.round(s / 60)} min`;
  if (s < 172800) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86400)} d`;
}

/** The message of a failed gateway request, as the page shows it. */
export function errorText(error) {
  return visible(error?.message ?? String(error));
}
