// Generated from ui/dom.ts by scripts/build.mjs: do not edit.
// The page's only way to put things on screen: elements built with createElement and text set
// with textContent, never HTML. Stored text shows its control and bidi characters as `\u{hex}`.
//
// Experiences are written by agents, teammates and LLMs, so any of them may hold markup, script
// or terminal escapes. Nothing here parses a string as HTML or sets an attribute a string could
// turn into script (no innerHTML, no href, no on* attribute from data). Which characters are
// written out is decided once for the page and the agent tools alike (shown.ts).

import { UNSAFE_TO_SHOW, visibleControls, writtenOut } from "./shown.js";

export { UNSAFE_TO_SHOW };

/**
 * Letters that look like Latin ones: Latin beyond ASCII, IPA, phonetic and modifier letters,
 * Greek, Cyrillic, Armenian, Cherokee, Lisu, Coptic, superscripts, letterlike symbols, Roman
 * numerals, enclosed alphanumerics, fullwidth ASCII, mathematical alphanumerics: the daemon's
 * `kb_core::display::is_latin_look_alike`.
 */
const LATIN_LOOK_ALIKE =
  /[\u00a0-\u058f\u13a0-\u13ff\u1c80-\u1c8f\u1d00-\u1fff\u2070-\u209f\u2100-\u218f\u2460-\u24ff\u2c60-\u2cff\u2de0-\u2dff\ua4d0-\ua4ff\ua640-\ua69f\ua720-\ua7ff\uab30-\uabbf\uff01-\uff5e\u{10780}-\u{107bf}\u{1d400}-\u{1d7ff}\u{1df00}-\u{1dfff}\u{1f100}-\u{1f1ff}]/u;

/**
 * A teammate's login as shown: one that could pass for another in ASCII has its non-ASCII
 * characters written as `\u{hex}`: one that mixes ASCII letters with other characters (`bоb`,
 * its `о` Cyrillic), and one with letters that look like Latin ones even without ASCII (`аӏісе`,
 * all Cyrillic; `ｂｏｂ`, fullwidth). A login in Chinese, Japanese, Korean and other scripts stays
 * as it is. The same rule as the daemon's `kb_core::display::shown_login` (kbctl and the
 * provenance labels).
 */
export function shownLogin(login) {
  const raw = typeof login === "string" ? login : login === undefined || login === null ? "" : String(login);
  const value = visible(raw);
  // Decided on the login as written (as the daemon decides), not on its `\u{…}` forms.
  if (!/[^\u0000-\u007f]/u.test(raw) || !(/[A-Za-z]/.test(raw) || LATIN_LOOK_ALIKE.test(raw))) return value;
  return value.replace(/[^\u0000-\u007f]/gu, writtenOut);
}

/** Stored text as it may be shown: every unsafe character written out as `\u{hex}`. */
export function visible(text) {
  const value = typeof text === "string" ? text : text === undefined || text === null ? "" : String(text);
  return visibleControls(value);
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
