// The API of lmc serve, with the token from sessionStorage as a bearer header.
const KEY = "lmc.token";

export const token = {
  get: () => sessionStorage.getItem(KEY),
  set: (value) => sessionStorage.setItem(KEY, value),
  clear: () => sessionStorage.removeItem(KEY),
};

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

function headers(extra = {}) {
  return { Authorization: `Bearer ${token.get() || ""}`, ...extra };
}

async function failure(response) {
  let code = "http_" + response.status, message = response.statusText;
  try {
    const body = await response.json();
    code = body.error?.code || code;
    message = body.error?.message || message;
  } catch (_) { /* not JSON */ }
  return new ApiError(response.status, code, message);
}

export async function call(method, path, body, signal) {
  const init = { method, headers: headers(), signal, credentials: "omit", cache: "no-store" };
  if (body instanceof Blob || body instanceof ArrayBuffer) {
    init.body = body;
  } else if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers["Content-Type"] = "application/json";
  }
  const response = await fetch(path, init);
  if (!response.ok) throw await failure(response);
  return response;
}

export async function json(method, path, body) {
  const response = await call(method, path, body);
  return response.status === 204 ? null : response.json();
}

// Each line of an NDJSON (or each "data:" of an SSE) body, as it comes.
async function* lines(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffered = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffered += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffered.indexOf("\n")) >= 0) {
      yield buffered.slice(0, end);
      buffered = buffered.slice(end + 1);
    }
  }
  if (buffered) yield buffered;
}

export async function* execute(sessionId, language, code, signal) {
  const message = { role: "assistant", type: "code", format: language, content: code };
  const response = await call("POST", `/v1/sessions/${encodeURIComponent(sessionId)}/execute`, message, signal);
  for await (const line of lines(response)) {
    if (line.trim()) yield JSON.parse(line);
  }
}

// Server-sent events read with fetch, so that the token goes in a header.
export async function* events(signal) {
  const response = await call("GET", "/v1/events", undefined, signal);
  for await (const line of lines(response)) {
    if (line.startsWith("data: ")) yield JSON.parse(line.slice(6));
  }
}

export function sessionPath(id, rest = "") {
  return `/v1/sessions/${encodeURIComponent(id)}${rest}`;
}

export function filePath(id, path) {
  return sessionPath(id, "/files/" + path.split("/").map(encodeURIComponent).join("/"));
}
