// The sessions page: a live list fed by GET /v1/events, usage fetched per row.
import { call, events, json, sessionPath } from "./api.js";

const $ = (id) => document.getElementById(id);
const sessions = new Map();
const usage = new Map();
let feed = null;

function ago(seconds) {
  const s = Math.max(0, Math.round(Date.now() / 1000 - seconds));
  return s < 120 ? `${s}s` : s < 7200 ? `${Math.round(s / 60)}m` : `${Math.round(s / 3600)}h`;
}

function meter(label, value, limit, show) {
  const span = document.createElement("span");
  span.className = "usage";
  const bar = document.createElement("span");
  bar.className = "meter";
  const fill = document.createElement("span");
  const share = limit ? Math.min(1, value / limit) : 0;
  fill.style.width = `${Math.round(share * 100)}%`;
  if (share > 0.8) fill.className = "high";
  bar.append(fill);
  span.append(bar, document.createTextNode(`${label} ${show(value)}${limit ? " / " + show(limit) : ""} `));
  return span;
}

const mib = (bytes) => `${(bytes / 1048576).toFixed(0)} MiB`;

function usageCell(info) {
  const cell = document.createElement("td");
  const figures = usage.get(info.id);
  if (!figures) return cell;
  const limits = info.limits || {};
  if (figures.memory_bytes != null) cell.append(meter("mem", figures.memory_bytes, limits.memory_bytes || null, mib));
  if (figures.cpu_seconds != null) cell.append(meter("cpu", figures.cpu_seconds, limits.cpu_seconds || null, (v) => `${v.toFixed(1)}s`));
  if (figures.disk_bytes != null) cell.append(meter("disk", figures.disk_bytes, figures.disk_limit_bytes, mib));
  if (figures.processes != null) cell.append(meter("procs", figures.processes, limits.processes || null, String));
  return cell;
}

// The API's "busy" is what the page calls running.
const shownState = (state) => (state === "busy" ? "running" : state);

function render() {
  const filter = $("filter").value.trim().toLowerCase();
  const body = $("session-table").tBodies[0];
  body.replaceChildren();
  for (const info of sessions.values()) {
    const text = [info.id, info.title || "", shownState(info.state), ...info.languages, info.environment || ""].join(" ").toLowerCase();
    if (filter && !text.includes(filter)) continue;
    const row = document.createElement("tr");
    row.dataset.id = info.id;
    const network = typeof info.network === "object" ? "policy" : info.network ? "on" : "off";
    const columns = {
      id: info.id, title: info.title || "", state: shownState(info.state), languages: info.languages.join(", "),
      environment: info.environment || "", network, age: ago(info.created_at), idle: ago(info.last_active),
    };
    for (const [name, value] of Object.entries(columns)) {
      const cell = document.createElement("td");
      cell.dataset.col = name; // tests and styles name a column, not its place
      cell.textContent = value;
      row.append(cell);
    }
    row.append(usageCell(info));
    const actions = document.createElement("td");
    const open = document.createElement("button");
    open.textContent = "open";
    open.addEventListener("click", () => { location.hash = "#playground"; document.dispatchEvent(new CustomEvent("lmc-open", { detail: info.id })); });
    const remove = document.createElement("button");
    remove.textContent = "delete";
    remove.addEventListener("click", () => call("DELETE", sessionPath(info.id)).catch(() => {}));
    actions.append(open, remove);
    row.append(actions);
    body.append(row);
  }
}

// Every session's usage in one request (the list itself comes by events).
async function refreshUsage() {
  try {
    const listing = await json("GET", "/v1/sessions?usage=true");
    usage.clear();
    for (const info of listing.sessions) if (info.usage) usage.set(info.id, info.usage);
  } catch (_) { /* shown again at the next reading */ }
  render();
}

async function follow(signal) {
  for await (const event of events(signal)) {
    if (event.type === "snapshot") {
      sessions.clear();
      for (const info of event.sessions) sessions.set(info.id, info);
    } else if (event.type === "ended") {
      sessions.delete(event.id);
      usage.delete(event.id);
    } else if (event.session) {
      sessions.set(event.id, event.session);
    }
    $("feed-state").textContent = `live: ${sessions.size} sessions`;
    render();
  }
}

export function start() {
  if (feed) return;
  feed = new AbortController();
  const signal = feed.signal;
  (async () => {
    while (!signal.aborted) {
      try { await follow(signal); } catch (_) { /* reconnect below */ }
      if (!signal.aborted) {
        $("feed-state").textContent = "reconnecting";
        await new Promise((resolve) => setTimeout(resolve, 2000));
      }
    }
  })();
  const timer = setInterval(() => { if (!signal.aborted) refreshUsage(); }, 5000);
  signal.addEventListener("abort", () => clearInterval(timer));
  refreshUsage();
}

export function stop() {
  if (feed) feed.abort();
  feed = null;
}

export function setUp() {
  $("filter").addEventListener("input", render);
}
