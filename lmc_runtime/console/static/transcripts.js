// The transcripts page: each session's runs as the transcript store keeps them.
import { json } from "./api.js";
import { render } from "./output.js";

const $ = (id) => document.getElementById(id);

function badge(status) {
  const span = document.createElement("span");
  span.className = "badge " + status;
  span.textContent = status;
  return span;
}

async function show(id) {
  const transcript = await json("GET", `/v1/transcripts/${encodeURIComponent(id)}`);
  const box = $("transcript");
  box.replaceChildren();
  const title = document.createElement("h2");
  title.textContent = `${transcript.id}${transcript.title ? " — " + transcript.title : ""}`;
  box.append(title);
  if (transcript.truncated) {
    const note = document.createElement("p");
    note.className = "notice";
    note.textContent = "Only the last messages are shown.";
    box.append(note);
  }
  let run = null;
  for (const message of transcript.messages) {
    if (message.role === "assistant" && message.type === "code") {
      run = document.createElement("div");
      run.className = "run";
      run.dataset.language = message.format;
      const code = document.createElement("pre");
      code.className = "code";
      code.textContent = message.content;
      const label = document.createElement("div");
      label.className = "run-head";
      label.textContent = message.format;
      const output = document.createElement("div");
      output.className = "output";
      run.append(label, code, output);
      box.append(run);
    } else if (run) {
      const status = render(run.lastElementChild, message, () => {});
      if (status) run.firstElementChild.append(" ", badge(status));
    }
  }
  box.dataset.shown = id;
}

export async function start() {
  const listing = await json("GET", "/v1/transcripts");
  const body = $("transcript-table").tBodies[0];
  body.replaceChildren();
  for (const thread of listing.transcripts) {
    const row = document.createElement("tr");
    row.dataset.id = thread.id;
    const when = new Date(thread.created_at * 1000).toLocaleString();
    const languages = (thread.metadata?.languages || []).join(", ");
    for (const value of [thread.id, thread.title, languages, when]) {
      const cell = document.createElement("td");
      cell.textContent = value;
      row.append(cell);
    }
    const cell = document.createElement("td");
    const open = document.createElement("button");
    open.textContent = "open";
    open.addEventListener("click", () => show(thread.id).catch((error) => { $("transcript").textContent = String(error.message); }));
    cell.append(open);
    row.append(cell);
    body.append(row);
  }
}
