// Generated from ui.ts by scripts/build.mjs: do not edit.
// The Control UI tab's backend: the "KnowHub" tab descriptor and the gateway methods its page
// calls (review, search, health), each a thin, checked forward to one daemon call.
//
// The page (dist/control-ui/, built from ui/) runs in the browser and reaches the daemon only
// through these methods, over the gateway's authenticated WebSocket: the gateway checks the
// caller's token or device and scopes before a handler runs (reads need operator.read, every
// write operator.write), and the daemon's socket stays private to this process. Nothing here is
// an HTTP route, so no cookie can carry a cross-site write to it.

import { START_HINT } from "./client.js";

export const READ_SCOPE = "operator.read";
export const WRITE_SCOPE = "operator.write";

/** The tab's id: the page lives at `/plugin?plugin=knowhub&id=knowhub`. */
export const TAB_ID = "knowhub";

/** Every method the page calls, with the scope the gateway demands for it. */
export const UI_METHODS = {
  "knowhub.ui.overview": READ_SCOPE,
  "knowhub.ui.pending": READ_SCOPE,
  "knowhub.ui.search": READ_SCOPE,
  "knowhub.ui.experience": READ_SCOPE,
  "knowhub.ui.approve": WRITE_SCOPE,
  "knowhub.ui.reject": WRITE_SCOPE,
  "knowhub.ui.retry": WRITE_SCOPE,
  "knowhub.ui.sync": WRITE_SCOPE,
};

/** How long a page's read waits for the daemon; the page says the daemon is slow past it. */
const READ_TIMEOUT_MS = 5_000;
/** Approving re-runs the write gate and embeds: it may take longer than a read. */
const WRITE_TIMEOUT_MS = 20_000;
/** `hub.sync` waits up to 60 s for its round in the daemon. */
const SYNC_TIMEOUT_MS = 65_000;
/** One review action touches at most the whole queue (`max_pending_proposals` is 200 by default). */
const MAX_IDS = 500;

/** A request the page got wrong: answered with INVALID_REQUEST and never sent to the daemon. */
class InvalidRequest extends Error {}

/** Registers the tab and its methods; does nothing on an OpenClaw without them. */
export function registerControlUi(api, client) {
  const register = api.registerGatewayMethod?.bind(api);
  const describe = api.session?.controls?.registerControlUiDescriptor;
  if (!register || !describe) return false;
  describe.call(api.session .controls, {
    surface: "tab",
    id: TAB_ID,
    label: "KnowHub",
    description: "Review what your agents learned, search it, and see the daemon's health.",
    icon: "book",
    group: "agent",
    requiredScopes: [READ_SCOPE],
  });
  const handlers = uiHandlers(client);
  for (const [method, scope] of Object.entries(UI_METHODS)) {
    const handler = handlers[method];
    register(method, async ({ params, respond }) => {
      try {
        respond(true, await handler(isRecord(params) ? params : {}));
      } catch (error) {
        respond(false, undefined, errorShape(error));
      }
    }, { scope });
  }
  return true;
}

/** The handlers by method name: plain functions of the params, for the gateway and for tests. */
export function uiHandlers(client) {
  const call = (method, params, timeoutMs = READ_TIMEOUT_MS) => client.call(method, params, { timeoutMs });
  return {
    // The health view: never an error for a daemon that is down or slow, but a state the page shows.
    "knowhub.ui.overview": async () => {
      try {
        const status = await call("status", {});
        const jobs = await call("extract.jobs", { limit: 20 }).catch((error) => {
          // A daemon that stops answering between the two calls is down or slow, not "up".
          if (daemonState(error) !== "error") throw error;
          return { error: describe(error) };
        });
        return { daemon: "up", status, jobs };
      } catch (error) {
        return { daemon: daemonState(error), message: describe(error), hint: START_HINT, socket: client.socketPath };
      }
    },
    "knowhub.ui.pending": async () => call("kb.pending", { limit: 200, unreviewed: true }),
    "knowhub.ui.search": async (params) => {
      const query = str(params.query, "query", 2_000).trim();
      if (!query) throw new InvalidRequest("invalid `query`: type something to search for");
      return call("kb.search", {
        query,
        top_k: int(params.top_k, "top_k", 1, 50, 10),
        min_score: int(params.min_score, "min_score", 1, 5, 1),
        mode: choice(params.mode, "mode", ["hybrid", "bm25", "vector"], "hybrid"),
        origin: choice(params.origin, "origin", ["all", "mine", "team"], "all"),
        // The user sees teammates' and extracted experiences not yet reviewed too, marked.
        unreviewed: true,
      });
    },
    // Details on demand: the whole record (provenance, variants, origins) and its content.
    "knowhub.ui.experience": async (params) => {
      const id = ids([params.id], "id")[0];
      const record = (await call("kb.get", { experience_id: id }));
      const content = record?.has_content ? await call("kb.content", { experience_id: id, unreviewed: true }) : null;
      return { record, content };
    },
    // A decision names the version of each experience the page showed: the daemon refuses it,
    // changing nothing, when one changed since (a teammate's edit pulled in meanwhile).
    "knowhub.ui.approve": async (params) => {
      const decided = decisions(params);
      if (params.edit === undefined || params.edit === null) return call("kb.approve", decided, WRITE_TIMEOUT_MS);
      if (decided.ids.length !== 1) throw new InvalidRequest("invalid `edit`: an edit approves exactly one experience");
      return call("kb.approve", { ...decided, edit: edit(params.edit) }, WRITE_TIMEOUT_MS);
    },
    "knowhub.ui.reject": async (params) => {
      const reason = params.reason === undefined ? undefined : str(params.reason, "reason", 500);
      return call("kb.reject", { ...decisions(params), ...(reason ? { reason } : {}) }, WRITE_TIMEOUT_MS);
    },
    "knowhub.ui.retry": async (params) => {
      if (!Array.isArray(params.ids) || params.ids.length === 0 || params.ids.length > MAX_IDS) {
        throw new InvalidRequest("invalid `ids`: a list of extraction job numbers");
      }
      const jobs = params.ids.map((id) => {
        if (!Number.isSafeInteger(id) || (id) < 1) throw new InvalidRequest("invalid `ids`: job numbers are positive integers");
        return id;
      });
      return call("extract.retry", { ids: jobs }, WRITE_TIMEOUT_MS);
    },
    "knowhub.ui.sync": async () => call("hub.sync", {}, SYNC_TIMEOUT_MS),
  };
}

/** The gateway error for a failure: what went wrong and, for a daemon that is down, how to start it. */
export function errorShape(error) {
  if (error instanceof InvalidRequest) return { code: "INVALID_REQUEST", message: error.message };
  const kind = (error)?.kind;
  const details = { kind: kind ?? "internal", daemon: daemonState(error) };
  if (kind === "unreachable" || kind === "untrusted" || kind === "timeout") {
    return { code: "UNAVAILABLE", message: `${describe(error)}; ${START_HINT}`, details };
  }
  return { code: kind === "rpc" ? "INVALID_REQUEST" : "UNAVAILABLE", message: describe(error), details };
}

/** `down` (no daemon), `slow` (no answer in time), `untrusted` (a socket not the user's own) or `error`. */
function daemonState(error) {
  switch ((error)?.kind) {
    case "unreachable":
      return "down";
    case "timeout":
      return "slow";
    case "untrusted":
      return "untrusted";
    default:
      return "error";
  }
}

function describe(error) {
  return (error)?.message ?? String(error);
}

function isRecord(value) {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function str(value, field, max) {
  if (typeof value !== "string") throw new InvalidRequest(`invalid \`${field}\`: expected text`);
  if (value.length > max) throw new InvalidRequest(`invalid \`${field}\`: longer than ${max} characters`);
  return value;
}

function int(value, field, min, max, fallback) {
  if (value === undefined || value === null || value === "") return fallback;
  const n = typeof value === "string" ? Number(value) : value;
  if (typeof n !== "number" || !Number.isInteger(n) || n < min || n > max) {
    throw new InvalidRequest(`invalid \`${field}\`: a whole number from ${min} to ${max}`);
  }
  return n;
}

function choice(value, field, allowed, fallback) {
  if (value === undefined || value === null || value === "") return fallback;
  if (typeof value !== "string" || !allowed.includes(value)) {
    throw new InvalidRequest(`invalid \`${field}\`: one of ${allowed.join(", ")}`);
  }
  return value;
}

/** Experience ids (ULIDs), de-duplicated; anything else is refused before the daemon sees it. */
function ids(value, field) {
  if (!Array.isArray(value) || value.length === 0 || value.length > MAX_IDS) {
    throw new InvalidRequest(`invalid \`${field}\`: a list of 1 to ${MAX_IDS} experience ids`);
  }
  for (const id of value) {
    if (typeof id !== "string" || !/^[0-9A-Za-z]{1,64}$/.test(id)) throw new InvalidRequest(`invalid \`${field}\`: not an experience id`);
  }
  return [...new Set(value)];
}

/** The ids of a decision and, when the page sent them, the versions it showed (one per id). */
function decisions(params) {
  const list = ids(params.ids, "ids");
  if (params.versions === undefined || params.versions === null) return { ids: list };
  const versions = params.versions;
  if (!Array.isArray(versions) || versions.length !== (params.ids).length || list.length !== versions.length) {
    throw new InvalidRequest("invalid `versions`: one version per id, each id once");
  }
  for (const version of versions) {
    if (typeof version !== "string" || !/^[0-9a-f]{1,32}$/.test(version)) throw new InvalidRequest("invalid `versions`: not a version");
  }
  return { ids: list, versions: versions };
}

/** The fields an edit may change; the daemon's write gate checks their content again. */
function edit(value) {
  if (!isRecord(value)) throw new InvalidRequest("invalid `edit`: expected the changed fields");
  const out = {};
  for (const [key, field] of Object.entries(value)) {
    if (key === "score") out.score = int(field, "edit.score", 1, 5, 3);
    else if (["task", "resource", "result", "content"].includes(key)) out[key] = str(field, `edit.${key}`, 100_000);
    else throw new InvalidRequest(`invalid \`edit\`: unknown field \`${key}\``);
  }
  return out;
}
