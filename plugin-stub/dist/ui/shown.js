// Generated from ui/shown.ts by scripts/build.mjs: do not edit.
// What of stored text may be shown as it is, shared by the agent tools (tools.ts, in Node) and
// the Control UI page (dom.ts, in the browser): every character that could act on a terminal or
// page, reorder or hide what a reader sees, or carry text a reader does not see, written out as
// `\u{hex}`. The same rule as the daemon's `kb_core::display::shown_marks` (kbctl).

/**
 * Control characters other than newline and tab, DEL, C1 controls, the bidi formatting
 * characters and the invisible ones that can carry or hide text (tag characters, soft hyphen,
 * combining grapheme joiner, Hangul fillers, zero-width space, word joiner, line and paragraph
 * separators, interlinear annotation marks, BOM): what a terminal would act on, what would
 * reorder what a reader sees, or what a model reads and a reader does not
 * (`kb_core::display::is_unsafe_to_show`); and, second, a run of variation selectors, shown or
 * not by what surrounds it (`showUnsafe`).
 */
export const UNSAFE_TO_SHOW =
  /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u034f\u061c\u115f\u1160\u180e\u200b\u200e\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064\u2066-\u2069\u3164\ufeff\uffa0\ufff9-\ufffb\u{e0000}-\u{e007f}]|[\ufe00-\ufe0f\u{e0100}-\u{e01ef}]+/gu;

/** CJK ideographs, which ideographic variation sequences select variants of (`kb_core::display::is_cjk_ideograph`). */
const CJK_IDEOGRAPH = /^[\u3005-\u3007\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u{20000}-\u{323af}]$/u;

/** `\u{hex}` for each character of `text`. */
export function writtenOut(text) {
  return [...text].map((ch) => `\\u{${ch.codePointAt(0) .toString(16)}}`).join("");
}

/** Whether `ch` is a variation selector: VS1 to VS16 or the supplement's VS17 to VS256. */
function isSelector(ch) {
  const code = ch?.codePointAt(0) ?? 0;
  return (code >= 0xfe00 && code <= 0xfe0f) || (code >= 0xe0100 && code <= 0xe01ef);
}

/**
 * How many single supplementary selectors from U+E0110 on (a byte 0x20 and up), each after a CJK
 * ideograph, make a text a carrier: one per ideograph spells a byte in what reads as ordinary
 * Chinese (`kb_core::display::IDEOGRAPH_CARRIER_MIN`).
 */
const IDEOGRAPH_CARRIER_MIN = 4;

/** Whether `text` hides bytes one per ideograph (`kb_core::display::ideographs_carry_bytes`). */
function ideographsCarryBytes(text) {
  if (!/[\u{e0110}-\u{e01ef}]/u.test(text)) return false;
  const chars = [...text];
  let count = 0;
  for (let at = 1; at < chars.length; at += 1) {
    const code = chars[at].codePointAt(0);
    if (code >= 0xe0110 && code <= 0xe01ef && CJK_IDEOGRAPH.test(chars[at - 1]) && !isSelector(chars[at + 1])) {
      count += 1;
      if (count >= IDEOGRAPH_CARRIER_MIN) return true;
    }
  }
  return false;
}

/**
 * A match of `UNSAFE_TO_SHOW` at `offset` of `text` as shown. A run of variation selectors that
 * can carry text ("emoji smuggling": one byte per selector) is written out: two or more in a
 * row, or one of the supplement's (U+E0100 and up) after anything but a CJK ideograph, or after
 * an ideograph too where the text carries bytes that way (`ideographsCarry`). A single VS1 to
 * VS16 (an emoji's VS16) or an ideographic variation selector after its ideograph stays
 * (`kb_core::display::shown_marks`).
 */
function showUnsafe(match, offset, text, ideographsCarry) {
  const first = match.codePointAt(0);
  if (!isSelector(match)) return writtenOut(match);
  const before = [...text.slice(Math.max(0, offset - 2), offset)].pop();
  const afterIdeograph = before !== undefined && CJK_IDEOGRAPH.test(before);
  const carrier = [...match].length >= 2 || (first >= 0xe0100 && (ideographsCarry || !afterIdeograph));
  return carrier ? writtenOut(match) : match;
}

/** Text from the daemon with every character it must not pass on shown as `\u{hex}`. */
export function visibleControls(text) {
  const ideographsCarry = ideographsCarryBytes(text);
  return text.replace(UNSAFE_TO_SHOW, (match, offset) => showUnsafe(match, offset, text, ideographsCarry));
}
