// The compiled entry in dist/ is what package installs load: it must match the TypeScript.

import assert from "node:assert/strict";
import { test } from "node:test";

import { staleDist } from "../scripts/build.mjs";

test("dist/ is up to date with the TypeScript sources (node plugin-stub/scripts/build.mjs)", () => {
  assert.deepEqual(staleDist(), [], "dist/ is out of date: run `node plugin-stub/scripts/build.mjs`");
});

test("the compiled entry exports what the TypeScript entry exports", async () => {
  const ts = await import("../index.ts");
  const js = await import("../dist/index.js");
  assert.deepEqual(Object.keys(js).sort(), Object.keys(ts).sort());
  assert.equal(js.default.id, "knowhub");
  assert.deepEqual(js.resolveConfig({}), ts.resolveConfig({}));
  const hooksTs = await import("../hooks.ts");
  const hooksJs = await import("../dist/hooks.js");
  assert.deepEqual(hooksJs.HOOKS, hooksTs.HOOKS);
});
