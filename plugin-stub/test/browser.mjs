// A real headless Chromium for tests, driven over the DevTools protocol with Node's own
// WebSocket: no driver package. Chromium is Debian's `chromium` (tests/run installs it).

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";

import { REPO_ROOT, tempDir, until } from "./helpers.mjs";

export const CHROMIUM = process.env.KNOWHUB_CHROMIUM || ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find((file) => existsSync(file));

/** Where the tests write screenshots for a reviewer: target/ui-screenshots (printed by the tests). */
export const SCREENSHOT_DIR = path.join(path.resolve(REPO_ROOT, process.env.CARGO_TARGET_DIR || "target"), "ui-screenshots");

export function checkChromium() {
  if (!CHROMIUM) throw new Error("no Chromium at /usr/bin/chromium: apt-get install chromium (tests/run does, as root)");
}

/** A headless Chromium with a fresh profile; `close()` ends it and removes the profile. */
export class Browser {
  static async launch() {
    checkChromium();
    const browser = new Browser();
    browser.profile = tempDir("pstub-chromium-");
    browser.child = spawn(CHROMIUM, [
      "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage", `--user-data-dir=${browser.profile}`,
      "--remote-debugging-port=0", "--window-size=1280,900", "about:blank",
    ], { stdio: ["ignore", "ignore", "pipe"], detached: true });
    let stderr = "";
    browser.child.stderr.on("data", (chunk) => (stderr += chunk));
    const url = await until(() => {
      if (browser.child.exitCode !== null) throw new Error(`chromium exited (${browser.child.exitCode}):\n${stderr}`);
      return stderr.match(/DevTools listening on (ws:\/\/\S+)/)?.[1];
    }, 30_000, "chromium's DevTools endpoint");
    browser.socket = new WebSocket(url);
    await new Promise((resolve, reject) => {
      browser.socket.addEventListener("open", resolve, { once: true });
      browser.socket.addEventListener("error", () => reject(new Error("could not connect to chromium's DevTools")), { once: true });
    });
    browser.socket.addEventListener("message", (event) => browser.dispatch(JSON.parse(event.data)));
    return browser;
  }

  constructor() {
    this.nextId = 1;
    this.waiting = new Map();
    this.listeners = new Set();
  }

  dispatch(message) {
    if (message.id !== undefined) {
      const pending = this.waiting.get(message.id);
      this.waiting.delete(message.id);
      if (message.error) pending?.reject(new Error(`${pending.method}: ${message.error.message}`));
      else pending?.resolve(message.result);
      return;
    }
    for (const listener of this.listeners) listener(message);
  }

  send(method, params = {}, sessionId) {
    const id = this.nextId++;
    this.socket.send(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }));
    return new Promise((resolve, reject) => this.waiting.set(id, { resolve, reject, method }));
  }

  /** A new tab, its console and dialogs recorded. */
  async newPage() {
    const { targetId } = await this.send("Target.createTarget", { url: "about:blank" });
    const { sessionId } = await this.send("Target.attachToTarget", { targetId, flatten: true });
    const page = new Page(this, sessionId);
    await Promise.all([page.send("Page.enable"), page.send("Runtime.enable")]);
    return page;
  }

  async close() {
    try {
      await Promise.race([this.send("Browser.close"), new Promise((resolve) => setTimeout(resolve, 3_000))]);
    } catch {
      // already gone
    }
    try {
      process.kill(-this.child.pid, "SIGKILL");
    } catch {
      // already gone
    }
    this.socket?.close();
    rmSync(this.profile, { recursive: true, force: true });
  }
}

export class Page {
  constructor(browser, sessionId) {
    this.browser = browser;
    this.sessionId = sessionId;
    this.console = [];
    this.dialogs = [];
    browser.listeners.add((message) => {
      if (message.sessionId !== sessionId) return;
      if (message.method === "Runtime.consoleAPICalled") {
        this.console.push(message.params.args.map((arg) => arg.value ?? arg.description ?? "").join(" "));
      } else if (message.method === "Runtime.exceptionThrown") {
        this.console.push(`exception: ${message.params.exceptionDetails.exception?.description ?? message.params.exceptionDetails.text}`);
      } else if (message.method === "Page.javascriptDialogOpening") {
        // A script from stored text that reached alert() would land here.
        this.dialogs.push(message.params.message);
        this.send("Page.handleJavaScriptDialog", { accept: true }).catch(() => undefined);
      }
    });
  }

  send(method, params = {}) {
    return this.browser.send(method, params, this.sessionId);
  }

  async goto(url) {
    await this.send("Page.navigate", { url });
  }

  /** The value of `expression` in the page (awaited when it is a promise). */
  async evaluate(expression) {
    const { result, exceptionDetails } = await this.send("Runtime.evaluate", { expression, returnByValue: true, awaitPromise: true });
    if (exceptionDetails) throw new Error(`in the page: ${exceptionDetails.exception?.description ?? exceptionDetails.text}`);
    return result.value;
  }

  /** Waits until `expression` is truthy in the page; fails with what the page shows. */
  async waitFor(expression, timeoutMs = 20_000, what = expression) {
    try {
      return await until(() => this.evaluate(expression).catch(() => false), timeoutMs, what);
    } catch (error) {
      const text = await this.evaluate("document.body ? document.body.innerText.slice(0, 3000) : ''").catch(() => "");
      throw new Error(`${error.message}\npage text:\n${text}\nconsole:\n${this.console.join("\n")}`);
    }
  }

  /** Presses a key (`Tab`, `Enter`, `ArrowRight`, ` `) on whatever has focus. */
  async press(key, modifiers = 0) {
    const codes = { Tab: 9, Enter: 13, " ": 32, ArrowRight: 39, ArrowLeft: 37, Escape: 27 };
    const base = { key, code: key === " " ? "Space" : key, windowsVirtualKeyCode: codes[key], modifiers };
    await this.send("Input.dispatchKeyEvent", { type: "keyDown", ...base, ...(key === "Enter" ? { text: "\r" } : key === " " ? { text: " " } : {}) });
    await this.send("Input.dispatchKeyEvent", { type: "keyUp", ...base });
  }

  async setColorScheme(value) {
    await this.send("Emulation.setEmulatedMedia", { features: [{ name: "prefers-color-scheme", value }] });
  }

  /** A PNG of the page (or of the element `selector` matches) written to `file`; returns `file`. */
  async screenshot(file, selector) {
    mkdirSync(path.dirname(file), { recursive: true });
    const params = { format: "png" };
    let tall = false;
    if (selector) {
      // Scrolled into view (the Control UI scrolls an inner pane, not the document), measured,
      // and when taller than the window the window grows for the shot so all of it is drawn.
      const measure = () => this.evaluate(`(() => { const e = document.querySelector(${JSON.stringify(selector)}); e.scrollIntoView({ block: "start" }); const r = e.getBoundingClientRect(); return { x: r.x, y: r.y, width: r.width, height: r.height, viewport: innerHeight }; })()`);
      let rect = await measure();
      if (rect.y + rect.height > rect.viewport) {
        tall = true;
        await this.send("Emulation.setDeviceMetricsOverride", { width: 1280, height: Math.ceil(rect.y + rect.height + 40), deviceScaleFactor: 1, mobile: false });
        await this.evaluate("new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)))");
        rect = await measure();
      }
      params.clip = { x: rect.x, y: rect.y, width: rect.width, height: rect.height, scale: 1 };
    }
    const { data } = await this.send("Page.captureScreenshot", params);
    if (tall) await this.send("Emulation.clearDeviceMetricsOverride");
    const png = Buffer.from(data, "base64");
    assert.equal(png.subarray(1, 4).toString(), "PNG");
    writeFileSync(file, png);
    return file;
  }
}
