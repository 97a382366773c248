// Rendering computer messages. Text is only ever set with textContent; HTML
// output goes into a srcdoc frame sandboxed without allow-same-origin.
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

function htmlFrame(html) {
  const frame = document.createElement("iframe");
  frame.setAttribute("sandbox", "allow-scripts");
  frame.setAttribute("referrerpolicy", "no-referrer");
  frame.title = "HTML output";
  frame.srcdoc = html;
  return frame;
}

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
