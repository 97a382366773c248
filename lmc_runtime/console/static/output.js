// Rendering computer messages. Text is only ever set with textContent; HTML
// output goes into a frame of /ui/frame sandboxed without allow-same-origin
// (an opaque origin, whose own policy lets the output's scripts run there).
function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function appendText(box, text, className) {
  const last = box.lastElementChild;
  if (last && last.tagName === "PRE" && last.className === className) {
    last.textContent += text;
  } else {
    box.append(el("pre", className, text));
  }
}

// extras.chart: each series' points (at most 50 a series) as rows label, x, y.
function chartTable(chart) {
  const table = el("table", "chart");
  table.append(el("caption", "", [chart.type, chart.title].filter(Boolean).join(": ")));
  const head = el("tr");
  for (const name of ["series", chart.x_label || "x", chart.y_label || "y"]) head.append(el("th", "", name));
  table.append(head);
  for (const series of Array.isArray(chart.elements) ? chart.elements : []) {
    const points = Array.isArray(series.points) ? series.points : [];
    for (const point of points.slice(0, 50)) {
      const row = el("tr");
      const [x, y] = Array.isArray(point) ? point : [series.label, series.value ?? point];
      for (const value of [series.label ?? "", x, y]) row.append(el("td", "", String(value ?? "")));
      table.append(row);
    }
    if (!points.length && "value" in series) {
      const row = el("tr");
      for (const value of [series.group ?? "", series.label ?? "", series.value]) row.append(el("td", "", String(value ?? "")));
      table.append(row);
    }
  }
  return table;
}

const FRAME_MIN = 40, FRAME_MAX = 2000;  // px: the heights a frame may ask for

// The frame is handed its HTML once its page has loaded, by a message: a srcdoc
// frame would inherit the console's policy, under which no inline script runs.
function htmlFrame(html) {
  const frame = document.createElement("iframe");
  frame.setAttribute("sandbox", "allow-scripts");
  frame.setAttribute("referrerpolicy", "no-referrer");
  frame.className = "html-output";
  frame.title = "HTML output";
  frame.addEventListener("load", () => frame.contentWindow.postMessage(html, "*"), { once: true });
  frame.src = "/ui/frame";
  return frame;
}

// A frame's report of its height, clamped; any other message is ignored.
addEventListener("message", (event) => {
  const height = Number(event.data?.lmcFrameHeight);
  if (!Number.isFinite(height)) return;
  for (const frame of document.querySelectorAll("iframe.html-output")) {
    if (frame.contentWindow !== event.source) continue;
    const shown = Math.min(FRAME_MAX, Math.max(FRAME_MIN, Math.ceil(height)));
    frame.style.height = `${shown}px`;
    frame.dataset.height = String(shown);
  }
});

// Show one message in `box`; returns its final status when it is the last one.
export function render(box, message, onLine) {
  const { type, format, content } = message;
  const extras = message.extras || {};
  if (type === "console" && format === "active_line") {
    if (content === null || content === undefined) return extras.status || "ok";
    onLine(Number(content));
    return undefined;
  }
  if (type === "console") {
    const kind = extras.stream === "stderr" || extras.error ? "err" : "";
    const notice = Boolean(extras.status);  // the runtime's own notices: truncation, limits, ...
    appendText(box, String(content ?? ""), notice ? "notice" : kind);
  } else if (type === "image" && typeof content === "string") {
    const img = el("img");
    const mime = format === "base64.jpeg" ? "image/jpeg" : format === "base64.svg" ? "image/svg+xml" : "image/png";
    img.src = format.startsWith("base64") ? `data:${mime};base64,${content}` : "";
    img.alt = "image output";
    box.append(img);
    if (extras.chart) box.append(chartTable(extras.chart));
  } else if (type === "code" && format === "html") {
    box.append(htmlFrame(String(content ?? "")));
  } else if (message.role === "computer") {
    appendText(box, typeof content === "string" ? content : JSON.stringify(content), format === "not_understood" ? "err" : "");
  }
  return undefined;
}
