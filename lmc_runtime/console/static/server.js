// The server page: sessions, pool, runs per second and p50/p99 run latency,
// from the server's own /metrics, read every 5 s while the page is shown.
import { call } from "./api.js";

const $ = (id) => document.getElementById(id);
const PERIOD_MS = 5000;
const KEEP = 120;  // samples: the last 10 minutes
const samples = [];
let timer = null;

// The Prometheus text format: name -> [{labels, value}].
export function parseMetrics(text) {
  const found = new Map();
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const match = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (!match) continue;
    const labels = {};
    for (const pair of (match[2] || "").slice(1, -1).matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[pair[1]] = pair[2];
    if (!found.has(match[1])) found.set(match[1], []);
    found.get(match[1]).push({ labels, value: Number(match[3]) });
  }
  return found;
}

const total = (metrics, name, test = () => true) =>
  (metrics.get(name) || []).filter((s) => test(s.labels)).reduce((sum, s) => sum + s.value, 0);

function buckets(metrics) {
  const byBound = new Map();
  for (const sample of metrics.get("lmc_execution_seconds_bucket") || []) {
    const bound = sample.labels.le === "+Inf" ? Infinity : Number(sample.labels.le);
    byBound.set(bound, (byBound.get(bound) || 0) + sample.value);
  }
  return [...byBound.entries()].sort((a, b) => a[0] - b[0]);
}

// The q-quantile of the runs between two samples, interpolated in its bucket.
export function quantile(before, after, q) {
  const counts = after.map(([bound, count], i) => [bound, count - (before[i]?.[1] || 0)]);
  const runs = counts.length ? counts[counts.length - 1][1] : 0;
  if (runs <= 0) return null;
  const rank = q * runs;
  let lower = 0, below = 0;
  for (const [bound, count] of counts) {
    if (count >= rank) {
      if (bound === Infinity) return lower;
      return lower + (bound - lower) * ((rank - below) / Math.max(1, count - below));
    }
    lower = bound;
    below = count;
  }
  return lower;
}

function chart(title, points, unit) {
  const figure = document.createElement("figure");
  const caption = document.createElement("figcaption");
  const last = points.length ? points[points.length - 1] : null;
  caption.textContent = `${title}: ${last == null ? "–" : last.toFixed(unit === "/s" ? 2 : 0)} ${unit}`;
  const svgNS = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(svgNS, "svg");
  svg.setAttribute("viewBox", "0 0 240 60");
  svg.setAttribute("class", "spark");
  const values = points.filter((v) => v != null);
  const top = Math.max(1e-9, ...values);
  const line = document.createElementNS(svgNS, "polyline");
  line.setAttribute("points", points.map((v, i) => v == null ? null : `${(i / Math.max(1, points.length - 1)) * 240},${58 - (v / top) * 56}`).filter(Boolean).join(" "));
  svg.append(line);
  figure.append(caption, svg);
  return figure;
}

function draw() {
  const rate = [], p50 = [], p99 = [], sessions = [], pool = [];
  for (let i = 1; i < samples.length; i++) {
    const [a, b] = [samples[i - 1], samples[i]];
    const seconds = (b.at - a.at) / 1000;
    rate.push((b.runs - a.runs) / seconds);
    const q50 = quantile(a.buckets, b.buckets, 0.5), q99 = quantile(a.buckets, b.buckets, 0.99);
    p50.push(q50 == null ? null : q50 * 1000);
    p99.push(q99 == null ? null : q99 * 1000);
  }
  for (const s of samples) { sessions.push(s.sessions); pool.push(s.pooled); }
  $("server-charts").replaceChildren(
    chart("sessions", sessions, ""), chart("pool ready", pool, ""), chart("runs per second", rate, "/s"),
    chart("p50 run latency", p50, "ms"), chart("p99 run latency", p99, "ms"),
  );
}

async function sample() {
  const metrics = parseMetrics(await (await call("GET", "/metrics")).text());
  samples.push({
    at: Date.now(),
    runs: total(metrics, "lmc_executions_total"),
    buckets: buckets(metrics),
    sessions: total(metrics, "lmc_sessions", (l) => l.state !== "pooled"),
    pooled: total(metrics, "lmc_sessions", (l) => l.state === "pooled"),
  });
  while (samples.length > KEEP) samples.shift();
  draw();
  document.body.dataset.serverSamples = String(samples.length);
}

export function start() {
  if (timer) return;
  const tick = () => sample().catch(() => { $("server-charts").dataset.error = "metrics unavailable"; });
  tick();
  timer = setInterval(tick, PERIOD_MS);
}

export function stop() {
  clearInterval(timer);
  timer = null;
}
