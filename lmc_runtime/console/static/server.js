// The server page: sessions, pool, runs per second and p50/p99 run latency over
// the last minutes, from the history the server keeps (GET /v1/metrics/history,
// a point every 5 s): the page shows what happened before it was opened, and
// asks every 5 s for the points that came since.
import { json } from "./api.js";

const $ = (id) => document.getElementById(id);
const PERIOD_MS = 5000;
const SERIES = [
  ["sessions", "sessions", ""], ["pool", "pool ready", ""], ["runs_per_second", "runs per second", "/s"],
  ["p50_ms", "p50 run latency", "ms"], ["p99_ms", "p99 run latency", "ms"],
];
let points = [];
let keep = 180, period = 5;
let timer = null;

// One small chart of `key` over the window the server keeps, ending at the last point.
function chart(key, title, unit) {
  const figure = document.createElement("figure");
  figure.dataset.name = key;
  const caption = document.createElement("figcaption");
  const values = points.map((p) => p[key]).filter((v) => v != null);
  // The latest value; a latency's is that of the last runs, however long ago.
  const latest = unit === "ms" ? values[values.length - 1] : points[points.length - 1]?.[key];
  caption.textContent = `${title}: ${latest == null ? "–" : latest.toFixed(unit === "/s" ? 2 : 0)} ${unit}`;
  figure.dataset.peak = String(values.length ? Math.max(...values) : 0);
  const svgNS = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(svgNS, "svg");
  svg.setAttribute("viewBox", "0 0 240 60");
  svg.setAttribute("class", "spark");
  // From the first point kept (at most keep * period ago, at least a minute) to the last.
  const end = points.length ? points[points.length - 1].at : 0;
  const span = Math.min(keep * period, Math.max(60, end - (points.length ? points[0].at : end)));
  const top = Math.max(1e-9, ...values);
  // A run of points with values is one line; a point without one breaks it.
  let run = [];
  const lines = [];
  for (const point of points) {
    const value = point[key];
    if (value == null) { if (run.length) lines.push(run); run = []; continue; }
    const x = 240 - ((end - point.at) / span) * 240;
    run.push(`${x.toFixed(1)},${(58 - (value / top) * 56).toFixed(1)}`);
  }
  if (run.length) lines.push(run);
  for (const coords of lines) {
    const line = document.createElementNS(svgNS, coords.length > 1 ? "polyline" : "circle");
    if (coords.length > 1) line.setAttribute("points", coords.join(" "));
    else { const [cx, cy] = coords[0].split(","); line.setAttribute("cx", cx); line.setAttribute("cy", cy); line.setAttribute("r", "1.5"); }
    svg.append(line);
  }
  figure.append(caption, svg);
  return figure;
}

function draw() {
  const charts = $("server-charts");
  charts.replaceChildren(...SERIES.map(([key, title, unit]) => chart(key, title, unit)));
  charts.dataset.points = String(points.length);
  charts.dataset.from = points.length ? String(points[0].at) : "";
  document.body.dataset.serverSamples = String(points.length);
}

async function update() {
  const after = points.length ? `?after=${points[points.length - 1].at}` : "";
  const history = await json("GET", `/v1/metrics/history${after}`);
  keep = history.keep;
  period = history.period;
  points = points.concat(history.points);
  const oldest = points.length ? points[points.length - 1].at - keep * period : 0;
  points = points.filter((p) => p.at > oldest);
  delete $("server-charts").dataset.error;
  draw();
}

export function start() {
  if (timer) return;
  const tick = () => update().catch(() => { $("server-charts").dataset.error = "metrics unavailable"; });
  tick();
  timer = setInterval(tick, PERIOD_MS);
}

export function stop() {
  clearInterval(timer);
  timer = null;
}
