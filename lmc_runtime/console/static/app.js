// The console's entry point: log in with the token, then switch pages by hash.
import { ApiError, json, token } from "./api.js";
import * as playground from "./playground.js";
import * as serverPage from "./server.js";
import * as sessionsPage from "./sessions.js";
import * as transcriptsPage from "./transcripts.js";

const $ = (id) => document.getElementById(id);
const PAGES = ["playground", "sessions", "transcripts", "server"];

async function serverFigures() {
  const list = $("server-figures");
  const health = await (await fetch("/healthz", { credentials: "omit" })).json();
  const languages = await json("GET", "/v1/languages");
  list.replaceChildren();
  const rows = [
    ["status", health.status], ["sessions", health.sessions], ["pool ready", health.pool_ready],
    ["transcripts held", health.transcripts_held],
    ["languages", languages.languages.filter((l) => l.available).map((l) => l.name).join(", ")],
  ];
  for (const [name, value] of rows) {
    const dt = document.createElement("dt");
    dt.textContent = name;
    const dd = document.createElement("dd");
    dd.textContent = String(value);
    list.append(dt, dd);
  }
}

function show() {
  const loggedIn = Boolean(token.get());
  $("nav").hidden = !loggedIn;
  const wanted = location.hash.slice(1);
  const page = loggedIn ? (PAGES.includes(wanted) ? wanted : "playground") : "login";
  for (const section of document.querySelectorAll("main > section")) section.hidden = section.id !== page;
  for (const link of document.querySelectorAll("#nav a")) link.classList.toggle("current", link.dataset.page === page);
  if (page === "sessions") sessionsPage.start(); else sessionsPage.stop();
  if (page === "playground") playground.refreshSessions().catch(() => {});
  if (page === "transcripts") transcriptsPage.start().catch(() => {});
  if (page === "server") { serverFigures().catch(() => {}); serverPage.start(); } else serverPage.stop();
  document.body.dataset.page = page;
}

async function logIn(event) {
  event.preventDefault();
  const typed = $("token").value;
  $("token").value = "";
  $("login-error").textContent = "";
  token.set(typed);
  try {
    await json("GET", "/v1/sessions");
  } catch (error) {
    token.clear();
    $("login-error").textContent = error instanceof ApiError && error.status === 401 ? "The token was refused." : "The server did not answer.";
    return;
  }
  show();
}

function setUp() {
  $("login-form").addEventListener("submit", logIn);
  $("logout").addEventListener("click", () => { token.clear(); sessionsPage.stop(); serverPage.stop(); show(); });
  window.addEventListener("hashchange", show);
  document.addEventListener("lmc-open", (event) => playground.pick(event.detail).catch(() => {}));
  playground.setUp();
  sessionsPage.setUp();
  show();
  document.body.dataset.ready = "true";
}

setUp();
