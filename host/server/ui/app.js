// pome dashboard. Everything comes from the same /v1 API a script uses, with the team key
// from sessionStorage. Agent- and seed-written text is only ever put in the page with
// textContent (the `h` helper below); nothing here assigns innerHTML, and no link is made
// from data: URLs in tapes and states show as text.
"use strict";

const KEY = "pome.key";
const PAGE = 50;
const $ = (sel, root) => (root || document).querySelector(sel);

// ---------- DOM -------------------------------------------------------------------------

/** Build an element. `attrs`: class, text, on{event: fn}, dataset, or plain attributes.
 *  Children: nodes, or anything else as text. */
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") el.className = v;
    else if (k === "text") el.textContent = String(v);
    else if (k === "on") for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn);
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (k === "href") { if (String(v).startsWith("#")) el.setAttribute("href", v); }
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}
const badge = (s) => h("span", { class: "badge b-" + String(s || "ungraded").replace(/[^a-z_-]/gi, ""), text: s || "ungraded" });
const table = (heads, rows) => h("div", { class: "table-wrap" },
  h("table", {}, h("thead", {}, h("tr", {}, heads.map((t) => h("th", { scope: "col", text: t })))), h("tbody", {}, rows)));
/** A table whose rows become stacked blocks on a phone-width screen. */
const stacked = (wrap) => { wrap.querySelector("table").classList.add("stack"); return wrap; };
const pretty = (v) => (typeof v === "string" ? v : JSON.stringify(v, null, 2));
const short = (v, n = 120) => { const s = v === undefined ? "—" : typeof v === "string" ? v : JSON.stringify(v); return s.length > n ? s.slice(0, n) + "…" : s; };

function toast(msg) {
  const t = $("#toast");
  t.textContent = msg;
  t.classList.add("show");
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => t.classList.remove("show"), 4000);
}

/** A modal confirmation; resolves true when confirmed. Focus goes to Cancel. */
function confirmDialog(title, body, confirmLabel) {
  return new Promise((resolve) => {
    const prev = document.activeElement;
    const done = (v) => { back.remove(); if (prev && prev.focus) prev.focus(); resolve(v); };
    const cancel = h("button", { type: "button", id: "dialog-cancel", on: { click: () => done(false) } }, "Cancel");
    const ok = h("button", { type: "button", class: "danger", id: "dialog-confirm", on: { click: () => done(true) } }, confirmLabel);
    const back = h("div", { class: "dialog-back", on: { keydown: (e) => { if (e.key === "Escape") done(false); } } },
      h("div", { class: "dialog", role: "alertdialog", "aria-modal": "true", "aria-labelledby": "dialog-title" },
        h("h2", { id: "dialog-title", text: title }), h("p", { text: body }), h("div", { class: "row-flex" }, ok, cancel)));
    document.body.append(back);
    cancel.focus();
  });
}

// ---------- API -------------------------------------------------------------------------

class ApiError extends Error {
  constructor(status, body) {
    super((body && body.error && body.error.message) || `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

async function api(method, path, body) {
  const headers = { "X-API-KEY": sessionStorage.getItem(KEY) || "" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const resp = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: "no-store" });
  const type = resp.headers.get("content-type") || "";
  const data = type.includes("json") ? await resp.json() : await resp.text();
  if (resp.status === 401) { signOut("Your key was refused; sign in again."); }
  if (!resp.ok) throw new ApiError(resp.status, data);
  return data;
}

// ---------- sign-in and routing ---------------------------------------------------------

function signOut(msg) {
  sessionStorage.removeItem(KEY);
  stopStreams();
  showSignin(msg);
}

function showSignin(msg) {
  $("#nav").hidden = true;
  $("#signin").hidden = false;
  $("#view").replaceChildren();
  $("#signin-error").textContent = msg || "";
  $("#key").focus();
}

async function signIn(ev) {
  ev.preventDefault();
  const key = $("#key").value.trim();
  sessionStorage.setItem(KEY, key);
  try {
    await api("GET", "/v1/usage");
  } catch (e) {
    sessionStorage.removeItem(KEY);
    $("#signin-error").textContent = e.message;
    return;
  }
  $("#key").value = "";
  $("#signin").hidden = true;
  $("#nav").hidden = false;
  if (!location.hash || location.hash === "#" || location.hash === "#/") location.hash = "#/twins";
  else route();
}

const routes = [
  [/^#\/twins$/, viewTwins],
  [/^#\/sandboxes$/, viewSandboxes],
  [/^#\/sandbox\/([\w-]+)$/, viewSandbox],
  [/^#\/runs(?:\?(.*))?$/, viewRuns],
  [/^#\/run\/([\w-]+)(?:\/(tape|state)\/([\w-]+)\/(.+))?$/, viewRun],
  [/^#\/tasks$/, viewTasks],
  [/^#\/task\/([\w.-]+)$/, viewTask],
  [/^#\/usage$/, viewUsage],
];

let routeSeq = 0;
async function route() {
  if (!sessionStorage.getItem(KEY)) return showSignin();
  $("#signin").hidden = true;
  $("#nav").hidden = false;
  const hash = location.hash || "#/twins";
  for (const a of document.querySelectorAll("#nav a")) {
    const sect = a.getAttribute("href").slice(2);
    a.classList.toggle("active", hash.startsWith("#/" + sect) || hash.startsWith("#/" + sect.replace(/s$/, "") + "/"));
    if (a.classList.contains("active")) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
  const my = ++routeSeq;
  const view = $("#view");
  for (const [re, fn] of routes) {
    const m = hash.match(re);
    if (!m) continue;
    // A run page moving between its own anchors keeps its DOM and jumps.
    if (fn === viewRun && current.run && current.run.id === m[1] && $("#run-page")) return jumpInRun(m);
    stopStreams();
    current.run = null;
    try {
      // A query string is parsed by URLSearchParams, which does its own decoding.
      const args = fn === viewRuns ? m.slice(1) : m.slice(1).map((x) => (x === undefined ? x : decodeURIComponent(x)));
      const node = await fn(...args);
      if (my !== routeSeq) return;
      view.replaceChildren(node);
      if (fn === viewRun && m[2]) jumpInRun(m);
    } catch (e) {
      if (my !== routeSeq) return;
      view.replaceChildren(h("div", { class: "card" }, h("h1", { text: "Could not load this page" }), h("p", { class: "error", text: e.message })));
    }
    return;
  }
  location.hash = "#/twins";
}

const current = { run: null, streams: [], clocks: null };

// ---------- clocks ----------------------------------------------------------------------

function fmtLeft(ms) {
  if (ms <= 0) return "expired";
  const s = Math.floor(ms / 1000);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
}
function clock(deadline, label) {
  return h("span", { class: "clock", dataset: { deadline: deadline || "" }, title: label + " ends " + (deadline || "—"), "aria-label": label }, "—");
}
function tickClocks() {
  const now = Date.now();
  for (const el of document.querySelectorAll(".clock[data-deadline]")) {
    const t = Date.parse(el.dataset.deadline);
    if (isNaN(t)) continue;
    const left = t - now;
    el.textContent = fmtLeft(left);
    el.classList.toggle("low", left < 5 * 60 * 1000);
  }
}
setInterval(tickClocks, 1000);

// ---------- twins -----------------------------------------------------------------------

function surfaceCounts(surface) {
  const n = { served: 0, "shape-only": 0, unsupported: 0 };
  for (const r of surface || []) {
    const f = r.fidelity || "semantic";
    if (f === "semantic" || f === "served") n.served++;
    else if (f === "unsupported") n.unsupported++;
    else n["shape-only"]++;
  }
  return n;
}

async function viewTwins() {
  const [twins, tasks] = await Promise.all([api("GET", "/v1/twins"), api("GET", "/v1/tasks").catch(() => ({ data: [] }))]);
  const cards = twins.data.map((t) => {
    const d = t.description || {};
    const n = surfaceCounts(d.surface);
    const checks = (d.checks || []).map((c) => h("tr", {}, h("td", { class: "mono", text: c.id }), h("td", { class: "wrap", text: c.template }), h("td", { text: c.substrate || "" })));
    const routes = (d.surface || []).map((r) => h("tr", {}, h("td", { class: "mono", text: r.method }), h("td", { class: "mono wrap", text: r.path }), h("td", { class: "mono", text: r.action || "" }), h("td", {}, badge(r.fidelity || "semantic"))));
    return h("article", { class: "card twin", dataset: { twin: t.name } },
      h("h2", {}, t.name, " ", h("span", { class: "muted", text: "v" + (d.version || "?") })),
      h("dl", { class: "kv" },
        h("dt", { text: "contract" }), h("dd", { class: "mono", text: d.contract || "—" }),
        h("dt", { text: "surface" }), h("dd", { text: `${n.served} served · ${n["shape-only"]} shape-only · ${n.unsupported} unsupported` }),
        h("dt", { text: "checks" }), h("dd", { text: String((d.checks || []).length) }),
        h("dt", { text: "from" }), h("dd", { class: "mono", text: t.origin || "" })),
      h("details", {}, h("summary", { text: `Checks (${checks.length})` }), table(["id", "sentence", "reads"], checks)),
      h("details", {}, h("summary", { text: `Routes (${routes.length})` }), table(["method", "path", "action", "fidelity"], routes)));
  });
  return h("div", {}, h("h1", { text: "Twins" }), startForm(twins.data.map((t) => t.name), tasks.data || []), h("div", { class: "grid" }, cards));
}

function startForm(names, tasks) {
  const picked = [];
  const err = h("p", { class: "error", role: "alert" });
  const order = h("span", { class: "muted", text: "" });
  const boxes = names.map((n) => {
    const box = h("input", { type: "checkbox", id: "pick-" + n, value: n, on: { change: (e) => {
      const i = picked.indexOf(n);
      if (e.target.checked && i < 0) picked.push(n);
      if (!e.target.checked && i >= 0) picked.splice(i, 1);
      order.textContent = picked.length ? "primary: " + picked[0] + (picked.length > 1 ? ", then " + picked.slice(1).join(", ") : "") : "";
      for (const b of boxes) if (!b.firstChild.checked) b.firstChild.disabled = picked.length >= 3;
    } } });
    return h("label", { class: "row-flex", for: "pick-" + n }, box, n);
  });
  const taskSel = h("select", { id: "start-task" }, h("option", { value: "", text: "— no task —" }), tasks.map((t) => h("option", { value: t.id, text: `${t.id} — ${t.title || ""}` })));
  const seed = h("textarea", { id: "start-seed", placeholder: "Optional seed JSON: a flat seed for one twin, {\"github\": {...}} for several", spellcheck: "false" });
  const submit = async (ev) => {
    ev.preventDefault();
    err.textContent = "";
    const body = {};
    if (taskSel.value) body.task_id = taskSel.value;
    else {
      if (!picked.length) { err.textContent = "Pick one to three twins, or a task."; return; }
      body.twins = picked.slice();
    }
    if (seed.value.trim()) {
      try { body.seed = JSON.parse(seed.value); } catch (e) { err.textContent = "The seed is not JSON: " + e.message; return; }
    }
    try {
      const s = await api("POST", "/v1/sandboxes", body);
      current.created = s;
      location.hash = "#/sandbox/" + s.id;
    } catch (e) { err.textContent = e.message; }
  };
  return h("form", { class: "card", id: "start-form", on: { submit } },
    h("h2", { text: "Start sandbox" }),
    h("fieldset", { class: "row-flex" }, h("legend", { text: "Twins (one to three; the first picked is primary)" }), boxes, order),
    h("div", { class: "filters" }, h("label", { for: "start-task" }, "Task (sets twins and seed)", taskSel)),
    h("details", {}, h("summary", { text: "Seed" }), seed),
    h("div", { class: "row-flex" }, h("button", { type: "submit", class: "primary", id: "start-submit" }, "Start sandbox")), err);
}

// ---------- sandboxes -------------------------------------------------------------------

async function sandboxAction(s, what) {
  try {
    if (what === "heartbeat") {
      const r = await api("POST", `/v1/sandboxes/${s.id}/heartbeat`);
      // Only the idle clock moves; the page (and its live tape) stays as it is.
      const scope = document.querySelector(`tr[data-sandbox="${s.id}"]`) || document.getElementById("sandbox-page") || document;
      for (const el of scope.querySelectorAll('.clock[aria-label="idle"]')) if (r.idle_expires_at) el.dataset.deadline = r.idle_expires_at;
      tickClocks();
      toast("Idle timer reset");
    } else if (what === "finalize") {
      const r = await api("POST", `/v1/sandboxes/${s.id}/finalize`);
      toast("Finalized: " + (r.verdict || "ungraded"));
      location.hash = "#/run/" + r.run_id;
    } else if (what === "stop") {
      try {
        await api("DELETE", `/v1/sandboxes/${s.id}`);
      } catch (e) {
        const d = e.body && e.body.error && e.body.error.details;
        if (e.status !== 409 || !d || d.reason !== "ungraded_session") throw e;
        const ok = await confirmDialog("Discard this sandbox's run?",
          `Sandbox ${s.id} has not been finalized. Stopping it now discards its run: nothing will be graded or kept. Finalize it instead to keep the run.`,
          "Discard and stop");
        if (!ok) return;
        await api("DELETE", `/v1/sandboxes/${s.id}?confirm_discard=${encodeURIComponent(d.discard_token)}`);
      }
      toast("Sandbox stopped");
      if (location.hash === "#/sandboxes") route(); else location.hash = "#/sandboxes";
    }
  } catch (e) { toast(e.message); }
}

function sandboxButtons(s) {
  return h("span", { class: "row-flex" },
    h("button", { type: "button", class: "act-heartbeat", on: { click: () => sandboxAction(s, "heartbeat") } }, "Heartbeat"),
    h("button", { type: "button", class: "primary act-finalize", on: { click: () => sandboxAction(s, "finalize") } }, "Finalize"),
    h("button", { type: "button", class: "act-stop", on: { click: () => sandboxAction(s, "stop") } }, "Stop"));
}

async function viewSandboxes() {
  const list = await api("GET", "/v1/sandboxes");
  const rows = list.data.map((s) => h("tr", { dataset: { sandbox: s.id } },
    h("td", {}, h("a", { href: "#/sandbox/" + s.id, class: "mono", text: s.id })),
    h("td", { text: (s.twins || []).join(", ") }),
    h("td", { text: s.task_id || "—" }),
    h("td", {}, clock(s.expires_at, "lifetime")),
    h("td", {}, clock(s.idle_expires_at, "idle")),
    h("td", {}, sandboxButtons(s))));
  const out = h("div", {}, h("h1", { text: "Sandboxes" }),
    rows.length ? table(["sandbox", "twins", "task", "lifetime left", "idle left", ""], rows)
      : h("p", { class: "card muted" }, "No open sandboxes. ", h("a", { href: "#/twins", text: "Start one from Twins." })));
  setTimeout(tickClocks);
  return out;
}

async function viewSandbox(id) {
  const s = await api("GET", "/v1/sandboxes/" + id);
  const created = current.created && current.created.id === id ? current.created : null;
  const conn = created ? h("details", { class: "card", open: true },
    h("summary", { text: "Connection for your agent (shown once)" }),
    h("p", { class: "muted", text: "Give the agent these variables; the token works only for this sandbox." }),
    h("pre", { class: "block secret", text: Object.entries(created.agent_env || {}).map(([k, v]) => `${k}=${v}`).join("\n") })) : null;
  const tapes = h("div", { class: "tapes" });
  const views = {};
  for (const twin of s.twins || []) {
    views[twin] = new TapeView(twin, [], "/v1/sandboxes/" + encodeURIComponent(s.id));
    tapes.append(views[twin].el);
  }
  const status = h("span", {}, h("span", { class: "live-dot", id: "live-dot" }), h("span", { id: "live-text", text: "connecting" }));
  const page = h("div", { id: "sandbox-page" },
    h("h1", {}, "Sandbox ", h("span", { class: "mono", text: s.id })),
    h("div", { class: "card" },
      h("dl", { class: "kv" },
        h("dt", { text: "state" }), h("dd", {}, badge(s.state)),
        h("dt", { text: "twins" }), h("dd", { text: (s.twins || []).join(", ") }),
        h("dt", { text: "task" }), h("dd", { text: s.task_id || "—" }),
        ...forkedFrom(s.forked_from),
        h("dt", { text: "lifetime left" }), h("dd", {}, clock(s.expires_at, "lifetime")),
        h("dt", { text: "idle left" }), h("dd", {}, clock(s.idle_expires_at, "idle")),
        ...Object.entries(s.per_twin || {}).flatMap(([t, p]) => [h("dt", { text: t + " URL" }), h("dd", { class: "mono", text: p.api_url || "" })])),
      h("div", { class: "row-flex" }, sandboxButtons(s), status)),
    conn,
    h("h2", { text: "Tape (live)" }), tapes);
  setTimeout(tickClocks);
  streamTape(id, views);
  return page;
}

/** The `forked_from` of a sandbox or run as definition-list items: its parent (a run when it
 *  forked from one) and the tape position of each twin it was taken at. */
function forkedFrom(ff) {
  if (!ff) return [];
  const parent = ff.run_id ? h("a", { href: "#/run/" + encodeURIComponent(ff.run_id), class: "mono", id: "forked-from", text: "run " + ff.run_id })
    : h("a", { href: "#/sandbox/" + encodeURIComponent(ff.sandbox_id || ""), class: "mono", id: "forked-from", text: "sandbox " + (ff.sandbox_id || "?") });
  const at = Object.entries(ff.at || {}).map(([t, n]) => `${t} after row ${n}`).join(", ");
  return [h("dt", { text: "forked from" }), h("dd", {}, parent, " ", h("span", { class: "muted", id: "forked-at", text: at ? `(${at})` : "" }))];
}

/** An API failure as the page shows it: the envelope's message, its type and status. */
function apiErrorNode(e) {
  const err = (e && e.body && e.body.error) || {};
  return h("p", { class: "error", role: "alert", text: `${e.message}${err.type ? ` (${err.type}, HTTP ${e.status})` : ""}` });
}

/** A state diff (`[{path, before, after}]`) as a table: path, before → after. */
function diffTable(diff) {
  if (!diff || !diff.length) return h("p", { class: "muted", text: "no changes" });
  return table(["path", "before", "→ after"], diff.map((d) => h("tr", { dataset: { path: d.path } },
    h("td", { class: "mono wrap", text: d.path }), h("td", { class: "mono wrap", text: short(d.before, 400) }), h("td", { class: "mono wrap", text: short(d.after, 400) }))));
}

/** A twin's world after `at` rows, read from a sandbox's or run's `base` URL, and the change
 *  the row at `at` made (its diff from the position before). */
async function worldAt(base, twin, at) {
  const q = (p) => new URLSearchParams({ twin, ...p }).toString();
  const [state, diff] = await Promise.all([
    api("GET", `${base}/state?${q({ at })}`),
    at > 0 ? api("GET", `${base}/diff?${q({ from: at - 1, to: at })}`) : Promise.resolve(null),
  ]);
  return [diff ? h("h4", { text: `Changes made by row ${at}` }) : null, diff ? h("div", { class: "world-diff" }, diffTable(diff.diff)) : null,
    h("h4", { text: at > 0 ? `World after row ${at}` : "World before any row (the seed)" }), h("pre", { class: "block world-state", text: pretty(state) })];
}

function stopStreams() {
  for (const c of current.streams) c.abort();
  current.streams = [];
}

/** Read `/ui/stream/:id` (server-sent events) with fetch, so the key goes in a header. */
async function streamTape(id, views) {
  const ctl = new AbortController();
  current.streams.push(ctl);
  const setLive = (on, text) => {
    const d = $("#live-dot"), t = $("#live-text");
    if (d) d.classList.toggle("on", on);
    if (t) t.textContent = text;
  };
  while (!ctl.signal.aborted) {
    try {
      const resp = await fetch(`/ui/stream/${encodeURIComponent(id)}`, { headers: { "X-API-KEY": sessionStorage.getItem(KEY) || "" }, signal: ctl.signal, cache: "no-store" });
      if (!resp.ok) { setLive(false, "stream refused: HTTP " + resp.status); return; }
      const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = "";
      let pending = [];
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let i;
        while ((i = buf.indexOf("\n\n")) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          let event = "message", data = "";
          for (const line of block.split("\n")) {
            if (line.startsWith("event:")) event = line.slice(6).trim();
            else if (line.startsWith("data:")) data += line.slice(5).replace(/^ /, "");
          }
          if (event === "live") setLive(true, "live");
          else if (event === "row") {
            const row = JSON.parse(data);
            pending.push(row);
          } else if (event === "closed") {
            const c = JSON.parse(data);
            setLive(false, "closed (" + c.reason + ")");
            flush(views, pending); pending = [];
            if (c.run_id) {
              const t = $("#live-text");
              if (t) t.after(" ", h("a", { href: "#/run/" + c.run_id, text: "open run " + c.run_id }));
            }
            return;
          }
        }
        flush(views, pending);
        pending = [];
      }
    } catch (e) {
      if (ctl.signal.aborted) return;
      setLive(false, "reconnecting");
    }
    // Reconnect from scratch (seq is per twin, so a resume point would be per twin too).
    for (const v of Object.values(views)) v.reset();
    await new Promise((r) => setTimeout(r, 1000));
  }
}

function flush(views, rows) {
  const by = {};
  for (const r of rows) (by[r.twin] = by[r.twin] || []).push(r);
  for (const [t, rs] of Object.entries(by)) if (views[t]) views[t].append(rs);
}

// ---------- tape view (virtualised) -----------------------------------------------------

const ROW_PX = 28;

/** One twin's tape: only the rows in view are in the DOM, so 100,000 rows cost the same as
 *  a hundred. A row opens its detail (request, response, state changes) below the list. */
class TapeView {
  /** `base`: the `/v1/sandboxes/:id` or `/v1/runs/:id` this tape belongs to, for the world
   *  after a row and forks. */
  constructor(twin, rows, base) {
    this.twin = twin;
    this.rows = rows;
    this.base = base;
    this.selected = null;
    this.count = h("span", { class: "muted" });
    this.spacer = h("div", { class: "spacer" });
    this.viewport = h("div", { class: "viewport", tabindex: "0", role: "list", "aria-label": twin + " tape",
      on: { scroll: () => this.render(), keydown: (e) => this.key(e) } }, this.spacer);
    this.detail = h("div", { class: "detail", hidden: true });
    const find = h("input", { type: "text", placeholder: "go to seq", size: "8", "aria-label": twin + " go to seq",
      on: { keydown: (e) => { if (e.key === "Enter") { e.preventDefault(); this.jump(Number(find.value)); } } } });
    this.el = h("section", { class: "tape", dataset: { twin } },
      h("header", {}, h("strong", { text: twin }), this.count, find),
      h("div", { class: "thead", "aria-hidden": "true" }, ["seq", "method", "path", "status", "ms", "Δ"].map((t) => h("span", { text: t }))),
      this.viewport, this.detail);
    this.follow = true;
    this.update();
  }
  reset() { this.rows = []; this.update(); }
  append(rs) {
    const atEnd = this.viewport.scrollTop + this.viewport.clientHeight >= this.spacer.offsetHeight - ROW_PX * 2;
    this.rows.push(...rs);
    this.update();
    if (atEnd && this.follow) this.viewport.scrollTop = this.spacer.offsetHeight;
    this.render();
  }
  update() {
    this.count.textContent = `${this.rows.length} rows`;
    this.spacer.style.height = this.rows.length * ROW_PX + "px";
    this.render();
  }
  render() {
    const top = this.viewport.scrollTop, height = this.viewport.clientHeight || 340;
    const first = Math.max(0, Math.floor(top / ROW_PX) - 10);
    const last = Math.min(this.rows.length, Math.ceil((top + height) / ROW_PX) + 10);
    const nodes = [];
    for (let i = first; i < last; i++) nodes.push(this.rowNode(this.rows[i], i));
    this.spacer.replaceChildren(...nodes);
  }
  rowNode(r, i) {
    const deltas = (r.state_delta || []).length;
    const el = h("button", { type: "button", class: "trow" + (r.seq === this.selected ? " selected" : "") + (r.fidelity === "unsupported" ? " unsupported" : "") + (r.inherited ? " inherited" : ""),
      role: "listitem", id: `tape-${this.twin}-${r.seq}`, dataset: { seq: r.seq, twin: this.twin },
      title: `${r.inherited ? "inherited from the parent · " : ""}${r.method} ${r.path}${r.action ? " · " + r.action : ""}`,
      on: { click: () => this.select(r.seq) } },
      h("span", { text: r.seq }), h("span", { text: r.method }), h("span", { text: r.path + (r.query ? "?" + r.query : "") }),
      h("span", { text: r.status }), h("span", { text: (r.latency_ms || 0).toFixed(1) }), h("span", { text: deltas ? "Δ" + deltas : "" }));
    el.style.top = i * ROW_PX + "px";
    return el;
  }
  key(e) {
    if (e.key !== "ArrowDown" && e.key !== "ArrowUp") return;
    e.preventDefault();
    const i = this.rows.findIndex((r) => r.seq === this.selected);
    const next = Math.max(0, Math.min(this.rows.length - 1, (i < 0 ? -1 : i) + (e.key === "ArrowDown" ? 1 : -1)));
    if (this.rows[next]) this.jump(this.rows[next].seq);
  }
  jump(seq) {
    const i = this.rows.findIndex((r) => r.seq === seq);
    if (i < 0) { toast(`${this.twin} has no tape row ${seq}`); return false; }
    this.follow = false;
    const h2 = this.viewport.clientHeight || 340;
    this.viewport.scrollTop = Math.max(0, i * ROW_PX - h2 / 2);
    this.select(seq);
    return true;
  }
  select(seq) {
    this.selected = seq;
    this.follow = false;
    this.render();
    const r = this.rows.find((x) => x.seq === seq);
    if (!r) return;
    const headers = (hs) => (hs || []).map(([k, v]) => `${k}: ${v}`).join("\n");
    const changes = (r.state_delta || []).map((d) => h("tr", {}, h("td", { class: "mono", text: `${d.entity} ${d.id}` }), h("td", { class: "wrap mono", text: short(d.before, 400) }), h("td", { class: "wrap mono", text: short(d.after, 400) })));
    const out = h("div", { class: "row-out", hidden: true });
    this.detail.hidden = false;
    this.detail.replaceChildren(
      h("h3", { id: `tape-detail-${this.twin}`, dataset: { seq: r.seq } }, `${this.twin} · row ${r.seq}`, r.inherited ? " " : null, r.inherited ? badge("inherited") : null),
      h("div", { class: "row-flex" },
        h("button", { type: "button", class: "act-world", on: { click: () => this.showWorld(r.seq, out) } }, "World after this row"),
        h("button", { type: "button", class: "act-fork", on: { click: () => this.fork(r.seq, out) } }, "Fork here")),
      out,
      h("dl", { class: "kv" },
        h("dt", { text: "request" }), h("dd", { class: "mono", text: `${r.method} ${r.path}${r.query ? "?" + r.query : ""}` }),
        h("dt", { text: "action" }), h("dd", { class: "mono", text: r.action || "—" }),
        h("dt", { text: "status" }), h("dd", { text: `${r.status} · ${r.fidelity} · ${(r.latency_ms || 0).toFixed(2)} ms` }),
        h("dt", { text: "time" }), h("dd", { class: "mono", text: r.ts || "" }),
        r.error ? h("dt", { text: "error" }) : null, r.error ? h("dd", { class: "error", text: pretty(r.error) }) : null),
      h("details", {}, h("summary", { text: "Request headers" }), h("pre", { class: "block", text: headers(r.request_headers) })),
      h("h3", { text: "Request body" }), h("pre", { class: "block req-body", text: r.request_body || "" }),
      h("h3", { text: "Response body" }), h("pre", { class: "block resp-body", text: prettyBody(r.response_body) }),
      h("h3", { text: `State changes (${changes.length})` }), changes.length ? table(["entity", "before", "after"], changes) : h("p", { class: "muted", text: "none" }));
  }
}

/** The world after row `seq` (and the row's own change) into `out`. */
TapeView.prototype.showWorld = async function (seq, out) {
  out.hidden = false;
  out.replaceChildren(h("p", { class: "muted", text: `reading the world after row ${seq}…` }));
  try {
    const nodes = await worldAt(this.base, this.twin, seq);
    if (this.selected === seq) out.replaceChildren(h("div", { class: "world", dataset: { seq } }, nodes));
  } catch (e) { if (this.selected === seq) out.replaceChildren(apiErrorNode(e)); }
};

/** A new sandbox from this tape's world after row `seq`; shows its id, link and connection. */
TapeView.prototype.fork = async function (seq, out) {
  out.hidden = false;
  out.replaceChildren(h("p", { class: "muted", text: `forking at row ${seq}…` }));
  try {
    const f = await api("POST", `${this.base}/fork`, { at: { [this.twin]: seq } });
    // The fork's page shows its connection once, as a new sandbox's does.
    current.created = f;
    out.replaceChildren(h("div", { class: "forked", dataset: { sandbox: f.id } },
      h("p", {}, `Forked ${this.twin} after row ${seq}: `, h("a", { href: "#/sandbox/" + encodeURIComponent(f.id), class: "mono fork-link", text: f.id })),
      h("details", { open: true }, h("summary", { text: "Connection for the fork's agent (shown once)" }),
        h("pre", { class: "block secret", text: Object.entries(f.agent_env || {}).map(([k, v]) => `${k}=${v}`).join("\n") || `agent token: ${f.agent_token || "—"}` }))));
  } catch (e) { if (this.selected === seq) out.replaceChildren(apiErrorNode(e)); }
};

function prettyBody(b) {
  if (!b) return "";
  try { return JSON.stringify(JSON.parse(b), null, 2); } catch (_) { return b; }
}

// ---------- runs ------------------------------------------------------------------------

function runsQuery(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) q.set(k, v);
  return q.toString();
}

async function viewRuns(qs) {
  const p = new URLSearchParams(qs || "");
  const f = { task: p.get("task") || "", group_id: p.get("group_id") || "", verdict: p.get("verdict") || "", starting_after: p.get("starting_after") || "" };
  const t0 = performance.now();
  const [page, tasks] = await Promise.all([
    api("GET", "/v1/runs?" + runsQuery({ task: f.task, group_id: f.group_id, verdict: f.verdict, starting_after: f.starting_after, limit: PAGE })),
    api("GET", "/v1/tasks").catch(() => ({ data: [] })),
  ]);
  const ms = performance.now() - t0;
  const taskSel = h("select", { id: "f-task", name: "task" }, h("option", { value: "", text: "any task" }),
    (tasks.data || []).map((t) => h("option", { value: t.id, text: t.id, selected: t.id === f.task })));
  const group = h("input", { type: "text", id: "f-group", name: "group_id", value: f.group_id, placeholder: "grp_…" });
  const verdict = h("select", { id: "f-verdict", name: "verdict" }, ["", "pass", "fail", "incomplete", "ungraded"].map((v) => h("option", { value: v, text: v || "any verdict", selected: v === f.verdict })));
  const filters = h("form", { class: "filters", on: { submit: (e) => { e.preventDefault(); location.hash = "#/runs?" + runsQuery({ task: taskSel.value, group_id: group.value.trim(), verdict: verdict.value }); } } },
    h("label", { for: "f-task" }, "Task", taskSel), h("label", { for: "f-group" }, "Trial group", group), h("label", { for: "f-verdict" }, "Verdict", verdict),
    h("button", { type: "submit", class: "primary" }, "Filter"), h("a", { href: "#/runs", text: "clear" }));
  const rows = page.data.map((r) => h("tr", { dataset: { run: r.id } },
    h("td", {}, h("a", { href: "#/run/" + r.id, class: "mono", text: r.id })),
    h("td", {}, badge(r.verdict)),
    h("td", {}, r.task_id ? h("a", { href: "#/runs?" + runsQuery({ task: r.task_id }), text: r.task_id }) : "—"),
    h("td", {}, r.group_id ? h("a", { href: "#/runs?" + runsQuery({ group_id: r.group_id }), class: "mono", text: r.group_id }) : "—"),
    h("td", { text: (r.twins || []).join(", ") }),
    h("td", { text: [r.agent_id, r.agent_version].filter(Boolean).join(" ") || "—" }),
    h("td", { class: "mono", text: r.created_at })));
  const pager = h("div", { class: "pager" },
    f.starting_after ? h("button", { type: "button", on: { click: () => history.back() } }, "← Newer") : null,
    page.has_more ? h("a", { href: "#/runs?" + runsQuery({ task: f.task, group_id: f.group_id, verdict: f.verdict, starting_after: page.next_cursor }), id: "runs-next", text: "Older →" }) : null,
    h("span", { class: "muted", id: "runs-timing", text: `${page.data.length} runs on this page · answered in ${ms.toFixed(0)} ms` }));
  const out = h("div", {}, h("h1", { text: "Runs" }), filters);
  if (f.group_id) out.append(await groupSummary(f.group_id));
  if (f.task && !f.group_id) out.append(await taskGroups(f.task));
  out.append(rows.length ? table(["run", "verdict", "task", "group", "twins", "agent", "finalized"], rows) : h("p", { class: "card muted", text: "No runs match." }), pager);
  return out;
}

/** Every run matching `query`, page by page (bounded, for group statistics). */
async function allRuns(query, cap = 5000) {
  const out = [];
  let after = "";
  while (out.length < cap) {
    const page = await api("GET", "/v1/runs?" + runsQuery({ ...query, starting_after: after, limit: 1000 }));
    out.push(...page.data);
    if (!page.has_more) break;
    after = page.next_cursor;
  }
  return out;
}

function choose(n, k) { if (k < 0 || k > n) return 0; let r = 1; for (let i = 1; i <= k; i++) r = (r * (n - k + i)) / i; return r; }
/** pass^k: the chance that k trials drawn from this group all pass (c passes of n). */
const passK = (c, n, k) => (n >= k ? choose(c, k) / choose(n, k) : NaN);
const pct = (x) => (isNaN(x) ? "—" : (100 * x).toFixed(0) + "%");

function groupStats(runs) {
  const n = runs.length, c = runs.filter((r) => r.verdict === "pass").length;
  return { n, c, rate: n ? c / n : NaN, ks: Array.from({ length: Math.min(n, 8) }, (_, i) => [i + 1, passK(c, n, i + 1)]) };
}

async function groupSummary(group) {
  const runs = await allRuns({ group_id: group });
  const s = groupStats(runs);
  return h("div", { class: "card", id: "group-summary" }, h("h2", {}, "Trial group ", h("span", { class: "mono", text: group })),
    h("p", {}, `${s.c} of ${s.n} trials passed · pass rate `, h("strong", { id: "group-rate", text: pct(s.rate) })),
    table(["k", "pass^k"], s.ks.map(([k, v]) => h("tr", {}, h("td", { text: k }), h("td", { text: pct(v) })))));
}

async function taskGroups(task) {
  const runs = await allRuns({ task });
  const groups = new Map();
  for (const r of runs) if (r.group_id) {
    const g = groups.get(r.group_id) || { id: r.group_id, runs: [], first: r.created_at };
    g.runs.push(r);
    if (r.created_at < g.first) g.first = r.created_at;
    groups.set(r.group_id, g);
  }
  const list = [...groups.values()].sort((a, b) => (a.first < b.first ? -1 : 1));
  if (!list.length) return h("p", { class: "muted", text: `No trial groups for ${task} yet.` });
  const rows = list.map((g) => { const s = groupStats(g.runs); return h("tr", {},
    h("td", {}, h("a", { href: "#/runs?" + runsQuery({ group_id: g.id }), class: "mono", text: g.id })), h("td", { class: "mono", text: g.first }),
    h("td", { text: `${s.c}/${s.n}` }), h("td", { text: pct(s.rate) }), h("td", { text: pct(passK(s.c, s.n, s.n)) })); });
  return h("div", { class: "card" }, h("h2", { text: `Trial groups of ${task}` }), plot(list.map((g) => [g.first, groupStats(g.runs).rate])),
    table(["group", "started", "passed", "pass rate", "pass^n"], rows));
}

/** Pass rate across groups over time, as an SVG line (built with DOM calls, not markup). */
function plot(points) {
  const NS = "http://www.w3.org/2000/svg";
  const s = (tag, attrs, text) => { const e = document.createElementNS(NS, tag); for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v); if (text !== undefined) e.textContent = text; return e; };
  const W = 640, H = 200, L = 36, B = 24, T = 10, R = 10;
  const svg = s("svg", { class: "plot", viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": "pass rate per trial group over time" });
  svg.append(s("line", { class: "axis", x1: L, y1: T, x2: L, y2: H - B }), s("line", { class: "axis", x1: L, y1: H - B, x2: W - R, y2: H - B }));
  for (const y of [0, 0.5, 1]) svg.append(s("text", { x: 4, y: H - B - y * (H - B - T) + 3 }, pct(y)));
  const xs = points.map((p) => Date.parse(p[0]));
  const x0 = Math.min(...xs), x1 = Math.max(...xs);
  const X = (t) => (x1 === x0 ? (L + W - R) / 2 : L + ((t - x0) / (x1 - x0)) * (W - R - L));
  const Y = (v) => H - B - v * (H - B - T);
  const pts = points.map((p, i) => [X(xs[i]), Y(isNaN(p[1]) ? 0 : p[1])]);
  svg.append(s("polyline", { class: "line", points: pts.map((p) => p.join(",")).join(" ") }));
  for (const [x, y] of pts) svg.append(s("circle", { class: "pt", cx: x, cy: y, r: 3 }));
  if (points.length) { svg.append(s("text", { x: L, y: H - 6 }, points[0][0].slice(0, 16)), s("text", { x: W - R - 90, y: H - 6 }, points[points.length - 1][0].slice(0, 16))); }
  return svg;
}

/** Resolve a state path like `repositories[0].issues[0].labels` in a JSON value. */
function atPath(v, path) {
  const parts = String(path).match(/[^.[\]]+/g) || [];
  for (const p of parts) { if (v === null || v === undefined) return undefined; v = v[/^\d+$/.test(p) ? Number(p) : p]; }
  return v;
}

function evidenceLink(run, ev) {
  if (!ev || typeof ev !== "object") return h("span", { class: "muted", text: "—" });
  const twin = ev.twin || run.primary_twin;
  // Following the link the address already shows would not fire hashchange: jump anyway.
  const again = (e) => { if (location.hash === e.currentTarget.getAttribute("href")) { e.preventDefault(); route(); } };
  if (typeof ev.seq === "number") return h("a", { href: `#/run/${run.id}/tape/${twin}/${ev.seq}`, class: "evidence", dataset: { kind: "tape", twin, seq: ev.seq }, text: `${twin} tape row ${ev.seq}`, on: { click: again } });
  if (typeof ev.state === "string") return h("a", { href: `#/run/${run.id}/state/${twin}/${encodeURIComponent(ev.state)}`, class: "evidence", dataset: { kind: "state", twin }, text: `${twin} state ${ev.state}`, on: { click: again } });
  if (typeof ev.tape === "number") return h("span", { class: "muted", text: `${twin} tape (${ev.tape} rows read)` });
  return h("span", { class: "mono", text: short(ev) });
}

async function viewRun(id) {
  const run = await api("GET", "/v1/runs/" + id);
  current.run = run;
  current.tapes = {};
  const crit = (run.criteria_results || []).map((c) => h("tr", { class: "crit crit-" + c.status, dataset: { index: c.index } },
    h("td", { text: c.index }), h("td", {}, badge(c.status)), h("td", { class: "wrap", text: c.text }), h("td", { class: "wrap", text: c.reason }), h("td", {}, evidenceLink(run, c.evidence))));
  const twins = Object.entries(run.per_twin || {});
  const diffs = twins.map(([t, pt]) => h("section", { class: "card", id: "diff-" + t, dataset: { twin: t } },
    h("h3", { text: pt.state_error ? `${t}: final state not read` : `${t}: ${(pt.diff || []).length} state changes` }),
    pt.state_error ? h("p", { class: "muted wrap", text: `Its final state could not be read, so only its tape was graded: ${pt.state_error}` })
    : (pt.diff || []).length ? table(["path", "before", "after"], pt.diff.map((d) => h("tr", { dataset: { path: d.path } },
      h("td", { class: "mono wrap", text: d.path }), h("td", { class: "mono wrap", text: short(d.before, 300) }), h("td", { class: "mono wrap", text: short(d.after, 300) })))) : h("p", { class: "muted", text: "no changes" }),
    h("div", { class: "state-at", hidden: true }),
    lazyDetails("Final state", () => pretty(pt.final_state)),
    lazyDetails("Initial state", () => pretty(pt.initial_state))));
  const tapes = h("div", { class: "tapes" });
  const base = "/v1/runs/" + encodeURIComponent(run.id);
  for (const [t, pt] of twins) { current.tapes[t] = new TapeView(t, pt.tape || [], base); tapes.append(current.tapes[t].el); }
  const sliders = twins.map(([t, pt]) => positionSlider(base, t, pt));
  const report = h("pre", { class: "block", id: "report", hidden: true });
  const page = h("div", { id: "run-page" },
    h("h1", {}, "Run ", h("span", { class: "mono", text: run.id })),
    h("div", { class: "card" }, h("div", { class: "row-flex" }, h("span", { id: "run-verdict" }, badge(run.verdict)),
      h("strong", { id: "run-score", text: run.score === null || run.score === undefined ? "no score" : `score ${run.score}` }),
      h("span", { class: "muted", text: run.pass_threshold !== null && run.pass_threshold !== undefined ? `threshold ${run.pass_threshold}` : "" })),
      h("dl", { class: "kv" },
        h("dt", { text: "task" }), h("dd", { text: run.task ? `${run.task.title} (${run.task.id} @ ${run.task.version})` : run.task_id || "—" }),
        h("dt", { text: "sandbox" }), h("dd", { class: "mono", text: run.session_id }),
        ...forkedFrom(run.forked_from),
        h("dt", { text: "twins" }), h("dd", { text: (run.twins || []).join(", ") }),
        h("dt", { text: "group" }), h("dd", {}, run.group_id ? h("a", { href: "#/runs?group_id=" + encodeURIComponent(run.group_id), text: run.group_id }) : "—"),
        h("dt", { text: "agent" }), h("dd", { text: [run.agent_id, run.agent_version].filter(Boolean).join(" ") || "—" }),
        h("dt", { text: "finalized" }), h("dd", { class: "mono", text: run.finalized_at }))),
    h("h2", { text: "Criteria" }),
    crit.length ? stacked(table(["#", "status", "criterion", "reason", "evidence"], crit)) : h("p", { class: "muted", text: "No task: this run was not graded." }),
    h("h2", { text: "State diff" }), h("div", { class: "grid" }, diffs),
    h("h2", { text: "Tape" }), tapes,
    h("h2", { text: "World over time" }), h("div", { class: "grid" }, sliders),
    h("h2", { text: "Report" }),
    h("button", { type: "button", id: "show-report", on: { click: async () => { report.hidden = false; report.textContent = await api("GET", `/v1/runs/${run.id}/report`); } } }, "Show the markdown report"),
    report);
  return page;
}

/** A slider over one twin's tape, 0 (the seed) to its last row, showing the world as it stood
 *  at the chosen position. Requests wait until the slider rests; an older answer arriving after
 *  a newer request is dropped. */
function positionSlider(base, twin, pt) {
  const tape = pt.tape || [];
  const end = tape.length ? tape[tape.length - 1].seq : 0;
  const id = "slider-" + twin;
  const label = h("output", { for: id, class: "slider-pos", text: `after row ${end} of ${end}` });
  const out = h("div", { class: "slider-world" }, h("pre", { class: "block world-state", text: pt.final_state === undefined ? "" : pretty(pt.final_state) }));
  let timer = null, asked = 0;
  const show = async (at) => {
    const mine = ++asked;
    try {
      const nodes = await worldAt(base, twin, at);
      if (mine === asked) out.replaceChildren(...nodes.filter(Boolean));
    } catch (e) { if (mine === asked) out.replaceChildren(apiErrorNode(e)); }
  };
  const input = h("input", { type: "range", id, class: "slider", min: "0", max: String(end), step: "1", value: String(end), "aria-label": `${twin} tape position`,
    on: { input: (e) => {
      const at = Number(e.target.value);
      label.textContent = at ? `after row ${at} of ${end}` : `before any row (of ${end})`;
      clearTimeout(timer);
      timer = setTimeout(() => show(at), 250);
    } } });
  return h("section", { class: "card position", dataset: { twin } }, h("h3", { text: twin }),
    h("div", { class: "row-flex" }, input, label), out);
}

/** A <details> whose (possibly large) text is made only when it is opened. */
function lazyDetails(summary, text) {
  const pre = h("pre", { class: "block" });
  const d = h("details", {}, h("summary", { text: summary }), pre);
  d.addEventListener("toggle", () => { if (d.open && !pre.textContent) pre.textContent = text(); });
  return d;
}

/** Follow an evidence anchor: `#/run/<id>/tape/<twin>/<seq>` or `…/state/<twin>/<path>`. */
function jumpInRun(m) {
  const [, , kind, twin, rest] = m;
  if (!kind) return;
  for (const el of document.querySelectorAll(".highlight")) el.classList.remove("highlight");
  if (kind === "tape") {
    const v = current.tapes[twin];
    if (v && v.jump(Number(rest))) { v.el.scrollIntoView({ block: "start" }); v.viewport.focus({ preventScroll: true }); }
    return;
  }
  const path = decodeURIComponent(rest);
  const card = document.getElementById("diff-" + twin);
  if (!card) return;
  let first = null;
  for (const tr of card.querySelectorAll("tr[data-path]")) {
    const p = tr.dataset.path;
    if (p === path || p.startsWith(path + ".") || p.startsWith(path + "[")) { tr.classList.add("highlight"); first = first || tr; }
  }
  const box = card.querySelector(".state-at");
  const pt = current.run.per_twin[twin];
  box.hidden = false;
  box.replaceChildren(h("h3", { text: `Final state at ${path}${first ? "" : " (unchanged)"}` }), h("pre", { class: "block highlight", text: pretty(atPath(pt.final_state, path)) ?? "undefined" }));
  (first || box).scrollIntoView({ block: "center" });
}

// ---------- tasks -----------------------------------------------------------------------

function criteriaTable(criteria) {
  return table(["#", "kind", "twin", "criterion", "binds to"], (criteria || []).map((c) => {
    const unmatched = c.kind === "code" && !c.binding;
    return h("tr", { class: unmatched ? "unmatched" : "" },
      h("td", { text: c.index }), h("td", { text: c.kind }), h("td", { text: c.twin || "—" }), h("td", { class: "wrap", text: c.text }),
      h("td", {}, unmatched ? badge("unmatched") : c.binding ? h("span", {}, h("span", { class: "mono", text: c.binding }), " ", h("span", { class: "muted mono", text: c.params && Object.keys(c.params).length ? short(c.params) : "" })) : h("span", { class: "muted", text: "model-graded" })));
  }));
}

async function viewTasks() {
  const list = await api("GET", "/v1/tasks");
  const rows = (list.data || []).map((t) => h("tr", { class: t.unbound ? "unmatched" : "" },
    h("td", {}, h("a", { href: "#/task/" + encodeURIComponent(t.id), text: t.id })), h("td", { class: "wrap", text: t.title }),
    h("td", { text: (t.twins || []).join(", ") }), h("td", { text: (t.criteria || []).length }), h("td", {}, t.unbound ? badge("unmatched") : "0"),
    h("td", {}, h("a", { href: "#/runs?task=" + encodeURIComponent(t.id), text: "runs" }))));
  const src = h("textarea", { id: "validate-source", spellcheck: "false", placeholder: "# Title\n\n## Prompt\n…\n\n## Success Criteria\n- [code:github] …" });
  const result = h("div", { id: "validate-result" });
  const validate = async (e) => {
    e.preventDefault();
    result.replaceChildren(h("p", { class: "muted", text: "validating…" }));
    try {
      const v = await api("POST", "/v1/tasks/validate", { source: src.value });
      result.replaceChildren(h("p", {}, v.valid ? badge("pass") : badge("fail"), " ", v.valid ? "valid" : "not valid"),
        ...(v.errors || []).map((x) => h("p", { class: "error", text: x })), v.task ? criteriaTable(v.task.criteria) : null);
    } catch (err) { result.replaceChildren(h("p", { class: "error", text: err.message })); }
  };
  return h("div", {}, h("h1", { text: "Tasks" }),
    rows.length ? table(["task", "title", "twins", "criteria", "unmatched", ""], rows) : h("p", { class: "card muted", text: "No stored tasks. Store one with POST /v1/tasks or `pome task push`." }),
    h("form", { class: "card", on: { submit: validate } }, h("h2", { text: "Validate a task" }), h("label", { for: "validate-source", text: "Task markdown" }), src,
      h("div", { class: "row-flex" }, h("button", { type: "submit", class: "primary", id: "validate-submit" }, "Validate")), result));
}

async function viewTask(id) {
  const t = await api("GET", "/v1/tasks/" + encodeURIComponent(id));
  return h("div", {}, h("h1", {}, "Task ", h("span", { class: "mono", text: t.id })),
    h("div", { class: "card" }, h("dl", { class: "kv" },
      h("dt", { text: "title" }), h("dd", { text: t.title }), h("dt", { text: "twins" }), h("dd", { text: (t.twins || []).join(", ") }),
      h("dt", { text: "trials" }), h("dd", { text: t.runs }), h("dt", { text: "pass threshold" }), h("dd", { text: t.pass_threshold }),
      h("dt", { text: "version" }), h("dd", { class: "mono", text: t.version || "—" }),
      h("dt", { text: "unmatched" }), h("dd", {}, t.unbound ? badge("unmatched") : "none")),
      h("div", { class: "row-flex" }, h("a", { href: "#/runs?task=" + encodeURIComponent(t.id), text: "Runs of this task" }))),
    await versionCompare(t.id),
    h("h2", { text: "Criteria and their bindings" }), criteriaTable(t.criteria),
    t.source ? h("details", {}, h("summary", { text: "Source" }), h("pre", { class: "block", text: t.source })) : null);
}

// ---------- comparing agent versions ------------------------------------------------------
// The arithmetic of pome_grade::stats (host/grade/src/stats.rs), line for line, so the task
// page says what `pome compare` says: Wilson's 95 % interval for a pass rate, Newcombe's
// hybrid score interval for the difference of two. tests/browser/stats_cases.json holds
// numbers both implementations are checked against.

const Z95 = 1.959963984540054;

/** Wilson's score interval for `passed` of `trials` at 95 %: [low, high]. */
function wilson(passed, trials) {
  if (trials === 0) return [0, 1];
  const n = trials, p = passed / n, z2 = Z95 * Z95;
  const centre = (p + z2 / (2 * n)) / (1 + z2 / n);
  const half = (Z95 / (1 + z2 / n)) * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n));
  return [Math.max(centre - half, 0), Math.min(centre + half, 1)];
}

function rateOf(passed, trials) {
  const [low, high] = wilson(passed, trials);
  return { passed, trials, rate: trials === 0 ? 0 : passed / trials, low, high };
}

/** How rate `b` differs from rate `a` (b − a), with Newcombe's interval. */
function difference(a, b) {
  const delta = b.rate - a.rate;
  const low = Math.max(delta - Math.sqrt((b.rate - b.low) ** 2 + (a.high - a.rate) ** 2), -1);
  const high = Math.min(delta + Math.sqrt((b.high - b.rate) ** 2 + (a.rate - a.low) ** 2), 1);
  return { delta, low, high, beyond_noise: a.trials > 0 && b.trials > 0 && (low > 0 || high < 0) };
}

/** Whole percent, halves away from zero, as `pome compare` prints. */
const wholePct = (x) => { const v = 100 * x; const r = Math.sign(v) * Math.round(Math.abs(v)); return r === 0 ? 0 : r; };
const signedPts = (x) => { const r = wholePct(x); return r > 0 ? "+" + r : String(r); };
const rateText = (r) => `${r.passed}/${r.trials} ${wholePct(r.rate)}% [${wholePct(r.low)}–${wholePct(r.high)}]`;
const differenceText = (d) => `${signedPts(d.delta)} pts [${signedPts(d.low)}, ${signedPts(d.high)}]`;

/** The task's two latest agent versions (by their newest graded run) side by side: pass
 *  rates, the difference and whether it is beyond noise, the criteria that changed most. */
async function versionCompare(task) {
  const runs = (await allRuns({ task })).filter((r) => r.agent_version && r.verdict);
  const newest = new Map();
  for (const r of runs) if (!newest.has(r.agent_version) || r.created_at > newest.get(r.agent_version)) newest.set(r.agent_version, r.created_at);
  const versions = [...newest.keys()].sort((x, y) => (newest.get(y) < newest.get(x) ? -1 : newest.get(y) > newest.get(x) ? 1 : x < y ? -1 : 1));
  const card = h("div", { class: "card", id: "version-compare" });
  if (versions.length < 2) {
    card.append(h("h2", { text: "Agent versions" }), h("p", { class: "muted", text: versions.length
      ? `Only agent version ${versions[0]} has graded runs of this task; run another with pome run --agent-version to compare.`
      : "No graded runs of this task carry an agent version yet (pome run --agent-version V)." }));
    return card;
  }
  const [vb, va] = versions;
  const side = (v) => runs.filter((r) => r.agent_version === v);
  const [ra, rb] = [side(va), side(vb)];
  const rate = (rs) => rateOf(rs.filter((r) => r.verdict === "pass").length, rs.length);
  const [a, b] = [rate(ra), rate(rb)];
  const d = difference(a, b);
  const rateCell = (r, which) => h("td", { class: "rate", dataset: { side: which, passed: r.passed, trials: r.trials, rate: r.rate, low: r.low, high: r.high }, text: rateText(r) });
  // Each criterion by its text: how often it passed on each side (runs listed without their
  // criteria, stored by an older pome, count in the rates only).
  const tally = (rs) => { const m = new Map(); for (const r of rs) for (const c of r.criteria || []) { const e = m.get(c.text) || [0, 0]; e[0] += c.status === "passed" ? 1 : 0; e[1] += 1; m.set(c.text, e); } return m; };
  const [ca, cb] = [tally(ra), tally(rb)];
  const changes = [...ca.entries()].filter(([text]) => cb.has(text)).map(([text, [pa, na]]) => {
    const [pb, nb] = cb.get(text);
    return { text, pa, na, pb, nb, change: pb / nb - pa / na };
  }).filter((c) => Math.abs(c.change) > 1e-12).sort((x, y) => Math.abs(y.change) - Math.abs(x.change) || (x.text < y.text ? -1 : 1)).slice(0, 3);
  card.append(h("h2", {}, "Agent versions ", h("span", { class: "mono", text: va }), " → ", h("span", { class: "mono", text: vb })),
    table(["agent version", "pass rate [95% interval]"], [
      h("tr", {}, h("td", { class: "mono", text: va }), rateCell(a, "a")),
      h("tr", {}, h("td", { class: "mono", text: vb }), rateCell(b, "b"))]),
    h("p", { id: "compare-difference", dataset: { delta: d.delta, low: d.low, high: d.high, beyond: d.beyond_noise } },
      `${vb} − ${va}: `, h("strong", { text: differenceText(d) }), " ",
      d.beyond_noise ? badge(d.delta > 0 ? "better" : "worse") : h("span", { class: "muted", text: "within noise" }),
      d.beyond_noise ? " beyond noise" : ""),
    changes.length ? h("div", {}, h("h3", { text: "Criteria that changed most" }),
      table(["criterion", va, vb, "change"], changes.map((c) => h("tr", { class: "criterion-change" },
        h("td", { class: "wrap", text: c.text }), h("td", { text: `${c.pa}/${c.na}` }), h("td", { text: `${c.pb}/${c.nb}` }),
        h("td", { text: `${signedPts(c.change)} pts` }))))) : h("p", { class: "muted", text: "No criterion changed outcome between these versions." }));
  return card;
}

// ---------- usage -----------------------------------------------------------------------

async function viewUsage() {
  const u = await api("GET", "/v1/usage");
  return h("div", {}, h("h1", { text: "Usage" }),
    h("div", { class: "card" },
      h("p", {}, h("strong", { id: "usage-used", text: u.sessions_used }), ` of ${u.sessions_quota} concurrent sandboxes open · ${u.sessions_remaining} remaining`),
      h("meter", { min: "0", max: String(u.sessions_quota), value: String(u.sessions_used), "aria-label": "sandboxes open against the quota" }),
      h("p", { class: "muted", text: "The same counter as GET /v1/usage: sandboxes open now. Finalizing or stopping one frees its slot at once." })));
}

// ---------- start -----------------------------------------------------------------------

document.addEventListener("DOMContentLoaded", () => {
  $("#signin-form").addEventListener("submit", signIn);
  $("#signout").addEventListener("click", () => signOut());
  window.addEventListener("hashchange", route);
  route();
});
