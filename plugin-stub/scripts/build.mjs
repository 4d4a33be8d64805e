// Builds dist/*.js from the TypeScript sources with Node's own type stripper: no tsc, no
// dependencies; and the Control UI tab's browser bundle, dist/control-ui/, from ui/ (its
// modules compiled the same way, its stylesheet copied). `node scripts/build.mjs --check`
// exits 1 when dist/ is not up to date.

import { stripTypeScriptTypes } from "node:module";
import { readFileSync, writeFileSync, mkdirSync, readdirSync, existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const SOURCES = ["index.ts", "client.ts", "proof.ts", "extraction.ts", "hooks.ts", "tools.ts", "ui.ts", "ui/shown.ts"];
/** The browser modules of the Control UI tab, and its stylesheet (openclaw.plugin.json `controlUi`). */
/** `ui/shown.ts` is in both: the agent tools (dist/ui/shown.js) and the page show stored text by one rule. */
export const BROWSER_SOURCES = ["ui/knowhub.ts", "ui/dom.ts", "ui/shown.ts", "ui/review.ts", "ui/search.ts", "ui/health.ts"];
export const BROWSER_STYLES = ["ui/knowhub.css"];
const BROWSER_DIST = "control-ui";
const DIST = path.join(ROOT, "dist");

/**
 * The JavaScript for one source: types erased, comments kept, `./x.ts` imports as `./x.js`.
 * Node's stripper blanks types out in place; the blanks are then tidied (lines that held only
 * types go, with the comment right above them; runs of spaces left inside a line close up),
 * and the result is checked to be the same program as the source.
 */
export function compile(source) {
  const stripped = stripTypeScriptTypes(source, { mode: "strip" });
  const original = source.split("\n");
  const out = [];
  stripped.split("\n").forEach((line, index) => {
    const before = original[index] ?? "";
    if (line === before) return out.push(line);
    if (line.trim() === "" && before.trim() !== "") {
      // A line that held only types: drop it, and the doc comment that described it.
      while (out.length > 0 && /^\s*(\/\/|\/\*|\*)/.test(out[out.length - 1])) out.pop();
      return;
    }
    const indent = before.match(/^\s*/)[0];
    const body = line
      .trimStart()
      .replace(/ {2,}/g, " ")
      .replace(/ ([,;)\]])/g, "$1")
      .replace(/,? \}/g, " }")
      .replace(/\{ \}/g, "{}")
      .trimEnd();
    out.push(indent + body);
  });
  const js = out
    .join("\n")
    .replace(/\n{3,}/g, "\n\n")
    .replace(/(from\s+["']\.{1,2}\/[^"']+)\.ts(["'])/g, "$1.js$2");
  const same = (code) =>
    stripTypeScriptTypes(code.replace(/(from\s+["']\.{1,2}\/[^"']+)\.js(["'])/g, "$1.ts$2"), { mode: "transform" });
  if (same(js) !== stripTypeScriptTypes(source, { mode: "transform" })) {
    throw new Error("tidying the stripped JavaScript changed the program; simplify the TypeScript or the tidy rules");
  }
  return js;
}

/** Every file dist/ should hold, by name. */
export function expectedDist() {
  const files = new Map();
  for (const name of SOURCES) {
    const js = compile(readFileSync(path.join(ROOT, name), "utf8"));
    files.set(name.replace(/\.ts$/, ".js"), `// Generated from ${name} by scripts/build.mjs: do not edit.\n${js}`);
  }
  for (const name of BROWSER_SOURCES) {
    const js = compile(readFileSync(path.join(ROOT, name), "utf8"));
    files.set(`${BROWSER_DIST}/${path.basename(name, ".ts")}.js`, `// Generated from ${name} by scripts/build.mjs: do not edit.\n${js}`);
  }
  for (const name of BROWSER_STYLES) {
    files.set(`${BROWSER_DIST}/${path.basename(name)}`, `/* Generated from ${name} by scripts/build.mjs: do not edit. */\n${readFileSync(path.join(ROOT, name), "utf8")}`);
  }
  return files;
}

/** Names of dist/ files that are missing, stale or extra. */
export function staleDist() {
  const expected = expectedDist();
  const stale = [];
  for (const [name, text] of expected) {
    const file = path.join(DIST, name);
    if (!existsSync(file) || readFileSync(file, "utf8") !== text) stale.push(name);
  }
  if (existsSync(DIST)) {
    for (const entry of readdirSync(DIST, { recursive: true, withFileTypes: true })) {
      if (!entry.isFile()) continue;
      const name = path.relative(DIST, path.join(entry.parentPath, entry.name)).split(path.sep).join("/");
      if (!expected.has(name)) stale.push(name);
    }
  }
  return stale;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (process.argv.includes("--check")) {
    const stale = staleDist();
    if (stale.length > 0) {
      console.error(`dist/ is out of date (${stale.join(", ")}): run node plugin-stub/scripts/build.mjs`);
      process.exit(1);
    }
    console.log("dist/ is up to date");
  } else {
    for (const [name, text] of expectedDist()) {
      mkdirSync(path.dirname(path.join(DIST, name)), { recursive: true });
      writeFileSync(path.join(DIST, name), text);
    }
    console.log(`built ${[...expectedDist().keys()].map((name) => `dist/${name}`).join(", ")}`);
  }
}
