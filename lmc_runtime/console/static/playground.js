// The playground: create or pick a session, edit, run, interrupt, restart, files.
import { ApiError, call, execute, filePath, json, sessionPath } from "./api.js";
import { createEditor } from "./editor.js";
import { render } from "./output.js";

const $ = (id) => document.getElementById(id);
let current = null;   // the session's id
let running = null;   // the AbortController of the run in progress
let editor = null;

function showError(error) {
  $("session-error").textContent = error ? (error instanceof ApiError ? `${error.code}: ${error.message}` : String(error)) : "";
}

function lineNumbers(active) {
  editor.runningLine(active);
}

function setStatus(text) {
  const badge = $("status");
  badge.textContent = text;
  badge.className = "badge " + text;
  badge.dataset.status = text;
}

export async function pick(id) {
  current = id;
  const info = await json("GET", sessionPath(id));
  const select = $("session-pick");
  if (![...select.options].some((o) => o.value === id)) select.append(new Option(id, id));
  select.value = id;
  const language = $("language");
  language.replaceChildren(...info.languages.map((name) => new Option(name, name)));
  editor.language(language.value);
  await listFiles();
}

async function create() {
  showError(null);
  const body = { languages: $("new-languages").value.split(",").map((s) => s.trim()).filter(Boolean) };
  const limits = {};
  if ($("new-memory").value) limits.memory_bytes = Number($("new-memory").value) * 1048576;
  if ($("new-wall").value) limits.wall_seconds = Number($("new-wall").value);
  if (Object.keys(limits).length) body.limits = limits;
  if ($("new-network").checked) body.network = true;
  if ($("new-environment").value.trim()) body.environment = $("new-environment").value.trim();
  body.title = "console";
  try {
    const info = await json("POST", "/v1/sessions", body);
    await pick(info.id);
  } catch (error) {
    showError(error);
  }
}

async function run() {
  if (!current || running) return;
  const box = $("output");
  box.replaceChildren();
  running = new AbortController();
  setStatus("running");
  let status = null;
  try {
    for await (const message of execute(current, $("language").value, editor.code, running.signal)) {
      const final = render(box, message, lineNumbers);
      if (final) status = final;
    }
  } catch (error) {
    if (error.name !== "AbortError") showError(error);
  } finally {
    running = null;
    lineNumbers(0);
    setStatus(status || "error");
    listFiles().catch(() => {});
  }
}

async function listFiles() {
  if (!current) return;
  const listing = await json("GET", sessionPath(current, "/list"));
  const body = $("files").tBodies[0];
  body.replaceChildren();
  for (const entry of listing.entries) {
    const row = document.createElement("tr");
    for (const value of [entry.name, entry.kind, String(entry.size ?? "")]) {
      const cell = document.createElement("td");
      cell.textContent = value;
      row.append(cell);
    }
    const actions = document.createElement("td");
    if (entry.kind === "file") {
      const get = document.createElement("button");
      get.textContent = "download";
      get.addEventListener("click", () => download(entry.path));
      actions.append(get);
    }
    const remove = document.createElement("button");
    remove.textContent = "delete";
    remove.addEventListener("click", async () => {
      await call("DELETE", filePath(current, entry.path) + (entry.kind === "directory" ? "?recursive=true" : ""));
      await listFiles();
    });
    actions.append(remove);
    row.append(actions);
    body.append(row);
  }
}

async function download(path) {
  const blob = await (await call("GET", filePath(current, path))).blob();
  const link = document.createElement("a");
  link.href = URL.createObjectURL(blob);
  link.download = path.split("/").pop();
  link.click();
  setTimeout(() => URL.revokeObjectURL(link.href), 10000);
}

async function upload() {
  const file = $("upload").files[0];
  if (!file || !current) return;
  try {
    await call("PUT", filePath(current, file.name), file);
    $("upload").value = "";
    await listFiles();
  } catch (error) {
    showError(error);
  }
}

// The live sessions, offered in the session list (this tab's, or any client's).
export async function refreshSessions() {
  const listing = await json("GET", "/v1/sessions");
  const select = $("session-pick");
  for (const info of listing.sessions) {
    if (![...select.options].some((o) => o.value === info.id)) select.append(new Option(info.id, info.id));
  }
  if (!current && listing.sessions.length) await pick(listing.sessions[0].id);
}

export function setUp() {
  editor = createEditor($("editor"), { text: 'print("hello")\n', onRun: () => { run(); } });
  $("language").addEventListener("change", () => editor.language($("language").value));
  $("create").addEventListener("click", create);
  $("run").addEventListener("click", run);
  $("interrupt").addEventListener("click", () => current && call("POST", sessionPath(current, "/interrupt")).catch(showError));
  $("restart").addEventListener("click", async () => {
    if (!current) return;
    try {
      await json("POST", sessionPath(current, "/restart"), { language: $("language").value });
      setStatus("restarted");
    } catch (error) { showError(error); }
  });
  $("session-pick").addEventListener("change", (event) => pick(event.target.value).catch(showError));
  $("upload").addEventListener("change", upload);
  $("refresh-files").addEventListener("click", () => listFiles().catch(showError));
  lineNumbers(0);
}
