// The citewise chat UI: chats (search, rename), streamed answers with live progress and
// citation badges, sources (shown when retrieval ends, cited ones marked and first) and the
// source viewer, copy / regenerate / edit / stop, feedback, dark mode, attachments with
// approval. Plain ES module; every piece of text from the server is put in the page as text
// (see markdown.js), never as HTML.

import { Api, ApiError } from "./api.js";
import { renderMarkdown } from "./markdown.js";

const $ = (id) => document.getElementById(id);
const KEY_STORE = "citewise.adminKey";
const api = new Api("", () => sessionStorage.getItem(KEY_STORE) || "");

const ui = {
  messages: $("messages"), intro: $("intro"), error: $("error"), form: $("ask"),
  question: $("question"), send: $("send"), stop: $("stop"), file: $("file"),
  chatList: $("chat-list"), chatListEmpty: $("chat-list-empty"), title: $("chat-title"),
  cards: $("source-cards"), sourcesEmpty: $("sources-empty"), health: $("health"),
  viewer: $("viewer"), viewerTitle: $("viewer-title"), viewerWhere: $("viewer-where"),
  viewerText: $("viewer-text"), viewerPage: $("viewer-page"), adminKey: $("admin-key"), search: $("chat-search"),
  rename: $("rename"), theme: $("theme"), exportFeedback: $("export-feedback"), jump: $("jump"),
  sourcesNote: $("sources-note"), scope: $("scope"), scopeName: $("scope-name"),
  scopeClear: $("scope-clear"), dropZone: $("drop-zone"), filterPaths: $("filter-paths"),
  filterCollection: $("filter-collection"), filterLanguage: $("filter-language"),
};

// follow: keep the newest text in view while it streams (off once the reader scrolls up)
// lastId: the newest saved message id the page has shown (the stream does not carry ids)
const state = { chatId: null, busy: false, controller: null, shown: null, follow: true,
  lastId: 0 };

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function basename(path) {
  return String(path || "").split(/[\\/]/).pop();
}

// --- errors and health ------------------------------------------------------------------
function showError(message) {
  ui.error.textContent = message;
  ui.error.hidden = false;
}

function clearError() {
  ui.error.hidden = true;
  ui.error.textContent = "";
}

function messageOf(err) {
  if (err instanceof ApiError) return err.message;
  return `Something went wrong: ${err && err.message ? err.message : err}`;
}

async function checkHealth() {
  try {
    const h = await api.health();
    const llm = h.llm.provider === "none" ? "quoted answers (no LLM)" : `LLM: ${h.llm.provider}`;
    ui.health.dataset.state = h.llm.reachable === false ? "degraded" : "ok";
    ui.health.textContent = `${h.documents} documents · ${llm}` +
      (h.llm.reachable === false ? " (unreachable)" : "");
    return true;
  } catch (err) {
    ui.health.dataset.state = "down";
    ui.health.textContent = "server unreachable";
    return false;
  }
}

// --- chat list --------------------------------------------------------------------------
async function loadChats() {
  const q = ui.search.value.trim();
  let list;
  try {
    list = await api.chats(q);
  } catch (err) {
    showError(messageOf(err));
    return;
  }
  if (q !== ui.search.value.trim()) return; // a newer search is on its way
  ui.chatList.replaceChildren();
  ui.chatListEmpty.hidden = list.data.length > 0;
  ui.chatListEmpty.textContent = q ? `No chats match “${q}”.` : "No saved chats yet.";
  for (const chat of list.data) {
    const li = el("li", "chat-item");
    li.dataset.id = chat.id;
    const open = el("button", "chat-link", chat.title || "Untitled chat");
    open.type = "button";
    open.title = chat.title;
    if (chat.id === state.chatId) open.setAttribute("aria-current", "page");
    open.addEventListener("click", () => openChat(chat.id));
    const del = el("button", "delete", "×");
    del.type = "button";
    del.setAttribute("aria-label", `Delete chat: ${chat.title}`);
    del.addEventListener("click", () => deleteChat(chat.id));
    li.append(open, del);
    ui.chatList.append(li);
  }
}

async function deleteChat(id) {
  clearError();
  try {
    await api.deleteChat(id);
  } catch (err) {
    showError(messageOf(err));
  }
  if (id === state.chatId) newChat();
  await loadChats();
}

function resetView(title) {
  ui.messages.replaceChildren();
  ui.title.textContent = title;
  ui.rename.hidden = !state.chatId;
  state.follow = true;
  ui.jump.hidden = true;
  showSources(null);
}

// --- rename -------------------------------------------------------------------------------
function startRename() {
  if (!state.chatId || ui.title.querySelector("input")) return;
  const id = state.chatId;
  const old = ui.title.textContent;
  const field = el("input", "rename-field");
  field.value = old;
  field.maxLength = 200;
  field.setAttribute("aria-label", "New name of the chat (Enter saves, Escape cancels)");
  ui.title.replaceChildren(field);
  field.focus();
  field.select();
  let done = false;
  const finish = async (save) => {
    if (done) return;
    done = true;
    const title = field.value.trim();
    ui.title.textContent = save && title ? title : old;
    ui.rename.focus();
    if (!save || !title || title === old) return;
    try {
      const chat = await api.renameChat(id, title);
      if (state.chatId === id) ui.title.textContent = chat.title;
    } catch (err) {
      ui.title.textContent = old;
      showError(messageOf(err));
    }
    await loadChats();
  };
  field.addEventListener("keydown", (e) => {
    if (e.key === "Enter") { e.preventDefault(); finish(true); }
    if (e.key === "Escape") { e.preventDefault(); e.stopPropagation(); finish(false); }
  });
  field.addEventListener("blur", () => finish(true));
}

function newChat() {
  if (state.busy) state.controller?.abort();
  state.chatId = null;
  state.lastId = 0;
  setScope(null);
  resetView("New chat");
  ui.messages.append(ui.intro);
  clearError();
  for (const b of ui.chatList.querySelectorAll("[aria-current]")) b.removeAttribute("aria-current");
  ui.question.focus();
}

async function openChat(id) {
  if (state.busy) state.controller?.abort();
  clearError();
  let chat;
  try {
    chat = await api.chat(id);
  } catch (err) {
    showError(messageOf(err));
    return;
  }
  state.chatId = chat.id;
  state.lastId = Math.max(0, ...chat.messages.map((m) => m.id));
  resetView(chat.title || "Untitled chat");
  let last = null;
  let question = null;
  for (const m of chat.messages) {
    if (m.role === "user") {
      question = addUserMessage(m.content);
      question.serverId = m.id;
      continue;
    }
    const msg = addAssistantMessage(question);
    msg.serverId = m.id;
    msg.text = m.content;
    msg.sources = m.sources || [];
    msg.cited = citedNumbers(msg.text);
    msg.feedback = m.feedback || { rating: 0, comment: "", sources: {} };
    renderAnswer(msg);
    const status = { complete: "done", error: "error", interrupted: "stopped", pending: "waiting" };
    msg.root.dataset.state = status[m.status] || "done";
    msg.progress.hidden = true;
    if (m.status === "error") msg.root.classList.add("failed");
    if (m.status === "interrupted") addNote(msg, "This answer was stopped before it was complete.");
    const results = (m.metrics && m.metrics.tool_results) || {};  // cards, rebuilt
    if (results.ingest && results.ingest.files) fileCards(msg, results.ingest.files);
    if (results.scan && results.scan.result) flagCards(msg, results.scan.result);
    if (results.scan && results.scan.error) addNote(msg, results.scan.error, "warning");
    if (m.status !== "pending") addActions(msg);
    if (msg.sources.length) last = msg;
  }
  for (const p of chat.pending) {
    const msg = addAssistantMessage(question);
    msg.root.dataset.state = "waiting";
    msg.progress.hidden = true;
    askApproval(msg, p);
  }
  if (last) showSources(last);
  for (const b of ui.chatList.querySelectorAll(".chat-item")) {
    const link = b.querySelector(".chat-link");
    if (b.dataset.id === id) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
}

// --- scrolling --------------------------------------------------------------------------
// The messages scroll inside their pane on wide screens and with the page on narrow ones.
function scroller() {
  const m = ui.messages;
  return m.scrollHeight > m.clientHeight + 1 && getComputedStyle(m).overflowY !== "visible"
    ? m : document.scrollingElement;
}

function atBottom(node) {
  return node.scrollHeight - node.scrollTop - node.clientHeight < 48;
}

/** Keep the newest text in view, unless the reader scrolled up to read. */
function follow() {
  if (!state.follow) {
    ui.jump.hidden = !state.busy;
    return;
  }
  const node = scroller();
  node.scrollTop = node.scrollHeight;
}

function onScroll() {
  if (!state.busy) return;
  state.follow = atBottom(scroller());
  ui.jump.hidden = state.follow;
}

// --- messages ---------------------------------------------------------------------------
function addUserMessage(text) {
  ui.intro.remove();
  const root = el("article", "message user");
  root.setAttribute("aria-label", "You");
  root.append(el("p", "", text));
  const turn = { root, text, serverId: null };
  const edit = el("button", "action edit", "Edit");
  edit.type = "button";
  edit.setAttribute("aria-label", "Edit this question and send it again");
  edit.addEventListener("click", () => editQuestion(turn));
  root.append(el("div", "actions"));
  root.lastChild.append(edit);
  ui.messages.append(root);
  state.follow = true;
  follow();
  return turn;
}

function addAssistantMessage(question = null) {
  ui.intro.remove();
  const root = el("article", "message assistant");
  root.setAttribute("aria-label", "citewise");
  const progress = el("p", "progress");
  progress.setAttribute("role", "status");
  progress.append(el("span", "spinner"), el("span", "progress-text", "Sending the question…"));
  const process = el("details", "process");
  const summary = el("summary", "", "Process");
  const steps = el("ol", "steps");
  process.append(summary, steps);
  process.hidden = true;
  const body = el("div", "answer");
  const extra = el("div", "extra");
  root.append(progress, process, body, extra);
  ui.messages.append(root);
  const msg = { root, progress, process, steps, body, extra, question, text: "", sources: [],
    cited: [], hits: null, tokens: 0, frame: 0, serverId: null,
    feedback: { rating: 0, comment: "", sources: {} } };
  answers.set(root, msg);
  root.addEventListener("focusin", () => { if (msg.sources.length) showSources(msg); });
  follow();
  return msg;
}

/** Each assistant message's state, by its element. */
const answers = new WeakMap();

const capital = (t) => t.charAt(0).toUpperCase() + t.slice(1);

/** The live progress line: what the server says it is doing now. */
function setProgress(msg, text, stage = "") {
  msg.progress.hidden = false;
  msg.progress.querySelector(".progress-text").textContent = `${capital(text)}…`;
  if (stage) msg.root.dataset.stage = stage;
}

function addStep(msg, text, kind) {
  msg.process.hidden = false;
  const li = el("li", `step ${kind}`, text);
  msg.steps.append(li);
}

function addNote(msg, text, kind = "note") {
  msg.extra.append(el("p", kind, text));
}

function citation(msg, n) {
  const b = el("button", "cite", String(n));
  b.type = "button";
  b.dataset.n = String(n);
  const source = msg.sources[n - 1];
  b.setAttribute("aria-label", source ? `Source ${n}: ${source.location}` : `Source ${n}`);
  b.addEventListener("click", () => {
    const s = msg.sources[n - 1];
    if (!s) return;
    showSources(msg, n);
    openSource(s);
  });
  return b;
}

function renderAnswer(msg) {
  msg.frame = 0;
  msg.body.replaceChildren(renderMarkdown(msg.text, (n) => citation(msg, n)));
  if (state.busy) follow();
}

/** The source numbers an answer's text cites, in order of first use. */
function citedNumbers(text) {
  const out = [];
  for (const m of String(text).matchAll(/\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\](?!\()/g)) {
    for (const k of m[1].split(",")) {
      const n = Number.parseInt(k.trim(), 10);
      if (!out.includes(n)) out.push(n);
    }
  }
  return out;
}

function scheduleRender(msg) {
  if (!msg.frame) msg.frame = requestAnimationFrame(() => renderAnswer(msg));
}

function describeCall(tool, input) {
  if (tool === "search") return `Search: “${input.query}” (top ${input.top_k}, ${input.mode})`;
  if (tool === "ingest") return `Ingest: ${basename(input.path)}`;
  if (tool === "scan") return `Scan against the playbook: ${input.document_id}`;
  return `${tool}: ${JSON.stringify(input)}`;
}

function describeResult(tool, result) {
  if (result.error) return `${tool}: ${result.error}`;
  if (result.status === "rejected") return `${tool}: rejected`;
  if (tool === "search") {
    const hits = result.hits || [];
    return `${hits.length} passage${hits.length === 1 ? "" : "s"} found` +
      (hits.length ? `: ${[...new Set(hits.map((h) => basename(h.path)))].join(", ")}` : "");
  }
  if (tool === "ingest") {
    return `Ingested: ${result.added} added, ${result.updated} updated, ` +
      `${result.unchanged} unchanged, ${result.failed} failed (${result.chunks} chunks)`;
  }
  if (tool === "scan" && result.result) return `Scan: ${(result.result.flags || []).length} flags`;
  return `${tool}: done`;
}

function fileCards(msg, files) {
  const list = el("ul", "result-cards");
  list.setAttribute("aria-label", "Files");
  for (const f of files) {
    const li = el("li", `result-card file ${f.status}`);
    li.append(el("strong", "", basename(f.path)), el("span", "badge", f.status),
      el("span", "muted", `${f.chunks} chunks`));
    if (f.reason) li.append(el("p", "reason", f.reason));
    list.append(li);
  }
  msg.extra.append(list);
}

/** A scan verdict as people read it (the values of citewise.scan.checks.Verdict). */
const VERDICT_LABELS = {
  compliant: "compliant", deviates: "deviates", needs_review: "needs review", not_found: "not found",
};

/** Where a flag's clause is: "section 12.3 · page 2 · lines 4-5" (the parts it has). */
function clauseWhere(c) {
  const parts = c.clause_number ? [`section ${c.clause_number}`] : [];
  const rest = where({ ...c, section: c.clause_number ? [] : c.section });
  if (rest) parts.push(rest);
  return parts.join(" · ");
}

function flagCards(msg, scan) {
  const list = el("ul", "result-cards");
  list.setAttribute("aria-label", "Playbook flags");
  for (const f of scan.flags || []) {
    const li = el("li", `result-card flag ${f.verdict}`);
    li.dataset.rule = f.rule;
    li.append(el("strong", "", f.title || f.rule), el("span", `badge ${f.severity}`, f.severity),
      el("span", `badge ${f.verdict}`, VERDICT_LABELS[f.verdict] || f.verdict),
      el("p", "", f.explanation));
    const c = f.citation;
    if (c) {
      if (c.quote) li.append(el("blockquote", "clause-quote", c.quote));
      const place = clauseWhere(c) || basename(c.path);
      if (c.chunk_id) {
        const open = el("button", "link", `Show the clause (${place})`);
        open.type = "button";
        open.addEventListener("click", () => openSource(c));
        li.append(open);
      } else {
        li.append(el("span", "muted", place));
      }
    }
    list.append(li);
  }
  msg.extra.append(list);
}

function askApproval(msg, interrupt) {
  const input = interrupt.input || {};
  const what = basename(input.path || input.document_id || "");
  const box = el("div", "approval");
  box.setAttribute("role", "group");
  box.setAttribute("aria-label", "Approval needed");
  const question = interrupt.action === "scan"
    ? `Check ${what} against the contract playbook?`
    : `${interrupt.action === "ingest" ? "Add" : interrupt.action} ${what} to the collection?`;
  box.append(el("p", "", question));
  const yes = el("button", "primary", "Approve");
  const no = el("button", "", "Reject");
  yes.type = no.type = "button";
  const decide = async (approve) => {
    yes.disabled = no.disabled = true;
    box.classList.add("decided");
    box.append(el("p", "muted", approve ? "Approved." : "Rejected."));
    box.after(msg.body); // the outcome reads after the decision
    await runTurn(msg, (onEvent, signal) =>
      api.resume(state.chatId, interrupt.resume_token, approve, onEvent, signal));
  };
  yes.addEventListener("click", () => decide(true));
  no.addEventListener("click", () => decide(false));
  box.append(yes, no);
  msg.extra.append(box);
  yes.focus();
}

function handleEvent(msg, type, data) {
  switch (type) {
    case "conversation": state.chatId = data.conversation_id; break;
    case "status":
      if (data.stage === "fallback") {  // the text so far is withdrawn; the fallback follows
        msg.text = "";
        scheduleRender(msg);
      }
      addStep(msg, data.message, "status");
      setProgress(msg, data.message, data.stage);
      break;
    case "thinking": addStep(msg, `Plan: ${data.message}`, "thinking"); break;
    case "tool_call":
      addStep(msg, describeCall(data.tool, data.input || {}), "tool");
      if (data.tool === "search") setProgress(msg, "searching the documents", "retrieve");
      else if (data.tool === "scan") setProgress(msg, "checking against the playbook", "scan");
      break;
    case "tool_result": {
      const result = data.result || {};
      addStep(msg, describeResult(data.tool, result), "result");
      if (data.tool === "search" && result.hits) {  // retrieval is over: show what it found
        msg.hits = result.hits;
        if (result.hits.length) setProgress(msg, describeResult("search", result), "read");
        showSources(msg);
      }
      if (data.tool === "ingest" && result.files) fileCards(msg, result.files);
      if (data.tool === "scan" && result.result) flagCards(msg, result.result);
      if (data.tool === "scan" && result.error) addNote(msg, result.error, "warning");
      break;
    }
    case "token":
      msg.text += data.content;
      msg.tokens += 1;
      msg.root.dataset.tokens = String(msg.tokens);
      if (msg.tokens === 1) setProgress(msg, "writing the answer", msg.root.dataset.stage);
      scheduleRender(msg);
      break;
    case "interrupt":
      msg.progress.hidden = true;
      msg.root.dataset.state = "waiting";
      askApproval(msg, data);
      break;
    case "done": {
      if (data.conversation_id) state.chatId = data.conversation_id;
      msg.text = data.answer || "";
      msg.sources = data.sources || [];
      msg.cited = Array.isArray(data.cited) && data.cited.length ? data.cited : citedNumbers(msg.text);
      if (msg.frame) cancelAnimationFrame(msg.frame);
      renderAnswer(msg);
      msg.root.dataset.state = "done";
      msg.progress.hidden = true;
      const ms = data.metrics && data.metrics.total_ms;
      if (ms !== undefined) addStep(msg, `Answered in ${(ms / 1000).toFixed(1)} s`, "status");
      if (data.fallback_reason) {
        addNote(msg, `The language model could not answer (${data.fallback_reason}), so this ` +
          "answer quotes the documents instead.", "warning");
      }
      if (data.unsupported && data.unsupported.length) {
        addNote(msg, `${data.unsupported.length} sentence(s) are not clearly supported by ` +
          "their sources; check them.", "warning");
      }
      if (msg.sources.length || state.shown === msg) showSources(msg);
      follow();
      break;
    }
    case "error":
      msg.progress.hidden = true;
      msg.root.dataset.state = "error";
      msg.root.classList.add("failed");
      addNote(msg, data.message || "The answer failed.", "error-text");
      showError(data.message || "The answer failed.");
      break;
    default:
      break;
  }
}

function setBusy(busy) {
  state.busy = busy;
  ui.send.disabled = busy;
  ui.stop.hidden = !busy;
  ui.file.disabled = busy;
  ui.messages.setAttribute("aria-busy", String(busy));
}

/** Run one event stream into msg; start(onEvent, signal) makes the request. */
async function runTurn(msg, start) {
  const controller = new AbortController();
  state.controller = controller;
  setBusy(true);
  msg.root.dataset.state = "streaming";
  msg.root.setAttribute("aria-busy", "true");
  try {
    await start((type, data) => handleEvent(msg, type, data), controller.signal);
    if (msg.root.dataset.state === "streaming") {
      handleEvent(msg, "error", { message: "The answer ended before it was complete." });
    }
  } catch (err) {
    if (err && err.name === "AbortError") {
      if (msg.frame) renderAnswer(msg);
      msg.root.dataset.state = "stopped";
      msg.progress.hidden = true;
      addNote(msg, "Stopped.");
    } else {
      if (msg.frame) renderAnswer(msg);
      handleEvent(msg, "error", { message: messageOf(err) });
    }
  } finally {
    msg.root.removeAttribute("aria-busy");
    if (state.controller === controller) state.controller = null;
    setBusy(false);
    ui.jump.hidden = true;
    ui.rename.hidden = !state.chatId;
    await learnIds(msg);
    if (msg.root.dataset.state !== "waiting") addActions(msg);
    if (state.shown === msg && msg.serverId !== null) showSources(msg); // with their thumbs
    await loadChats();
    checkHealth();
  }
}

/** The saved ids of the turn just run (the stream does not carry them): the chat's last
 * user and assistant messages. */
async function learnIds(msg) {
  if (!state.chatId || !msg.root.isConnected) return;
  let chat;
  try {
    chat = await api.chat(state.chatId);
  } catch {
    return;
  }
  // only messages newer than those the page knows: a refused question saves none
  const fresh = chat.messages.filter((m) => m.id > state.lastId);
  const last = (role) => [...fresh].reverse().find((m) => m.role === role);
  const answer = last("assistant");
  const question = last("user");
  if (answer) msg.serverId = answer.id;
  if (question && msg.question && msg.question.serverId === null) msg.question.serverId = question.id;
  state.lastId = Math.max(state.lastId, ...chat.messages.map((m) => m.id));
}

// --- actions on answers: copy, regenerate, feedback ----------------------------------------
function copyText(msg) {
  const cited = msg.cited.length ? msg.cited : citedNumbers(msg.text);
  const lines = cited.map((n) => msg.sources[n - 1]).filter(Boolean)
    .map((s) => `[${s.n}] ${s.location || basename(s.path)}`);
  return lines.length ? `${msg.text.trim()}\n\nSources:\n${lines.join("\n")}` : msg.text.trim();
}

async function copyAnswer(msg, button) {
  const text = copyText(msg);
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    const area = el("textarea");
    area.value = text;
    document.body.append(area);
    area.select();
    document.execCommand("copy");
    area.remove();
  }
  button.textContent = "Copied";
  setTimeout(() => { button.textContent = "Copy"; }, 1500);
}

function actionButton(label, className, name, onClick) {
  const b = el("button", `action ${className}`, label);
  b.type = "button";
  b.setAttribute("aria-label", name);
  b.title = name;
  b.addEventListener("click", onClick);
  return b;
}

function addActions(msg) {
  msg.root.querySelector(":scope > .actions")?.remove();
  const bar = el("div", "actions");
  bar.setAttribute("role", "group");
  bar.setAttribute("aria-label", "Answer actions");
  if (msg.text.trim()) {
    const copy = actionButton("Copy", "copy", "Copy the answer with its sources",
      () => copyAnswer(msg, copy));
    bar.append(copy);
  }
  if (msg.question) {
    bar.append(actionButton("Regenerate", "regenerate", "Ask this question again",
      () => regenerate(msg)));
  }
  if (msg.serverId !== null && msg.root.dataset.state === "done") {
    const up = actionButton("▲ Helpful", "thumb up", "Good answer", () => rate(msg, 1));
    const down = actionButton("▼ Not helpful", "thumb down", "Bad answer", () => rate(msg, -1));
    msg.thumbs = { up, down };
    bar.append(up, down);
    showRating(msg);
  }
  msg.root.insertBefore(bar, msg.extra);
}

function showRating(msg) {
  if (!msg.thumbs) return;
  msg.thumbs.up.setAttribute("aria-pressed", String(msg.feedback.rating === 1));
  msg.thumbs.down.setAttribute("aria-pressed", String(msg.feedback.rating === -1));
  msg.root.dataset.rating = String(msg.feedback.rating);
}

async function saveFeedback(msg) {
  try {
    msg.feedback = await api.feedback(state.chatId, msg.serverId, msg.feedback);
    msg.root.dataset.saved = String(msg.feedback.rating);
  } catch (err) {
    showError(messageOf(err));
  }
}

async function rate(msg, rating) {
  clearError();
  msg.feedback = { ...msg.feedback, rating: msg.feedback.rating === rating ? 0 : rating };
  showRating(msg);
  await saveFeedback(msg);
  commentBox(msg);
}

/** The optional comment after a thumb. */
function commentBox(msg) {
  msg.root.querySelector(".feedback-form")?.remove();
  if (!msg.feedback.rating) return;
  const form = el("form", "feedback-form");
  const id = `comment-${msg.serverId}`;
  const label = el("label", "", msg.feedback.rating > 0
    ? "What was good? (optional)" : "What was wrong? (optional)");
  label.htmlFor = id;
  const area = el("textarea");
  area.id = id;
  area.rows = 2;
  area.maxLength = 2000;
  area.value = msg.feedback.comment || "";
  const save = el("button", "", "Save feedback");
  save.type = "submit";
  form.append(label, area, save);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    msg.feedback = { ...msg.feedback, comment: area.value.trim() };
    await saveFeedback(msg);
    form.replaceWith(el("p", "muted feedback-thanks", "Thanks: your feedback is saved."));
  });
  msg.root.insertBefore(form, msg.extra);
  area.focus();
}

async function rateSource(msg, chunkId, vote) {
  clearError();
  const sources = { ...msg.feedback.sources };
  if (sources[chunkId] === vote) delete sources[chunkId];
  else sources[chunkId] = vote;
  msg.feedback = { ...msg.feedback, sources };
  await saveFeedback(msg);
  if (state.shown === msg) showSources(msg);
}

/** Drop the DOM from `node` on (a question and everything after it). */
function removeFrom(node) {
  while (node.nextSibling) node.nextSibling.remove();
  node.remove();
}

/** Ask `text` again in place of the turn that starts at question `turn`: the saved chat
 * loses that turn and every later one first, so its history is the new turn's. */
async function resend(turn, text) {
  if (state.busy) return;
  clearError();
  if (turn.serverId !== null && state.chatId) {
    try {
      await api.truncate(state.chatId, turn.serverId);
      state.lastId = turn.serverId - 1; // the database may give the new turn the same ids
    } catch (err) {
      showError(messageOf(err));
      return;
    }
  }
  removeFrom(turn.root);
  showSources(null);
  await ask(text);
}

function regenerate(msg) {
  if (msg.question) resend(msg.question, msg.question.text);
}

function editQuestion(turn) {
  if (state.busy || turn.root.querySelector("form")) return;
  const form = el("form", "edit-form");
  const area = el("textarea");
  area.value = turn.text;
  area.rows = 3;
  area.setAttribute("aria-label", "Edited question (Enter sends, Escape cancels)");
  const send = el("button", "primary", "Send");
  send.type = "submit";
  const cancel = el("button", "", "Cancel");
  cancel.type = "button";
  form.append(area, send, cancel);
  const shown = [...turn.root.children];
  shown.forEach((c) => { c.hidden = true; });
  turn.root.append(form);
  area.focus();
  const close = () => { form.remove(); shown.forEach((c) => { c.hidden = false; }); };
  cancel.addEventListener("click", close);
  area.addEventListener("keydown", (e) => {
    if (e.key === "Escape") { e.preventDefault(); close(); }
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); form.requestSubmit(); }
  });
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const text = area.value;
    if (!text.trim()) return;
    resend(turn, text);
  });
}

/** The "Search only in…" fields as the chat request's filters (paths, collections,
 * language), or null when all are empty; the server checks them (a bad glob is a 422). */
function chatFilters() {
  const split = (text) => text.split(",").map((part) => part.trim()).filter(Boolean);
  const filters = {};
  const paths = split(ui.filterPaths.value);
  if (paths.length) filters.paths = paths;
  const collections = split(ui.filterCollection.value);
  if (collections.length) filters.collections = collections;
  const language = ui.filterLanguage.value.trim().toLowerCase();
  if (language) filters.language = language;
  return Object.keys(filters).length ? filters : null;
}

async function ask(query, extra = {}) {
  clearError();
  if (!query.trim()) {
    showError("Type a question first.");
    ui.question.focus();
    return;
  }
  if (state.busy) return;
  const turn = addUserMessage(query);
  const msg = addAssistantMessage(turn);
  if (!state.chatId) ui.title.textContent = query;
  // a pinned document: "summarize it" and "list its sections" read it whole; any other
  // question is searched in it only
  const scoped = state.scope && !extra.attachment ? { documents: [state.scope.id] } : {};
  const filters = chatFilters();
  if (filters && !extra.attachment) scoped.filters = filters;
  await runTurn(msg, (onEvent, signal) => api.stream(
    { query, conversation_id: state.chatId, ...scoped, ...extra }, onEvent, signal));
}

// --- attachments ------------------------------------------------------------------------
async function attach(file) {
  clearError();
  if (state.busy) return;
  addUserMessage(`Attached ${file.name}`).root.querySelector(".actions").remove();
  const msg = addAssistantMessage();
  msg.root.dataset.state = "streaming";
  msg.progress.hidden = true;
  setBusy(true);
  let documentId = null;
  try {
    addStep(msg, `Uploading ${file.name}`, "status");
    const report = await api.upload(file);
    addStep(msg, `Indexed ${report.stored.join(", ")} (${report.chunks} chunks)`, "result");
    fileCards(msg, report.files);
    const indexed = report.files.find((f) => f.status !== "failed");
    if (indexed) {
      const docs = await api.documents();
      const doc = docs.data.find((d) => d.path === indexed.path);
      documentId = doc ? doc.id : null;
    }
    msg.text = indexed ? `${file.name} is in the collection now.` : `${file.name} could not be indexed.`;
    renderAnswer(msg);
    msg.root.dataset.state = "done";
  } catch (err) {
    handleEvent(msg, "error", { message: messageOf(err) });
  } finally {
    setBusy(false);
    checkHealth();
  }
  if (documentId) await offerChoices(msg, file.name, documentId);
}

/** After an upload: the reader chooses what happens to the file. The playbook check is
 * offered only for a document the server finds contract-like. */
async function offerChoices(msg, name, documentId) {
  let fit = { contract: false };
  try {
    fit = await api.scanFit(documentId);
  } catch { /* no check offered */ }
  const box = el("div", "choices");
  box.setAttribute("role", "group");
  box.setAttribute("aria-label", `What next with ${name}?`);
  box.append(el("p", "", `What next with ${name}?`));
  const choose = (note) => {
    for (const b of box.querySelectorAll("button")) b.disabled = true;
    box.classList.add("decided");
    box.append(el("p", "muted", note));
  };
  const button = (label, onClick, primary = false) => {
    const b = el("button", primary ? "primary" : "", label);
    b.type = "button";
    b.addEventListener("click", onClick);
    box.append(b);
    return b;
  };
  const first = button("Ask about it", () => {
    choose(`Your next questions search only ${name}.`);
    setScope({ id: documentId, name });
    ui.question.focus();
  }, true);
  if (fit.contract) {
    button("Check it against the playbook", () => {
      choose("Checking it against the contract playbook.");
      ask(`Check ${name} against the contract playbook`, { attachment: documentId });
    });
  }
  button("Just keep it indexed", () => choose("It stays in the collection."));
  if (!fit.contract) {
    box.append(el("p", "muted", "It does not read like a contract, so no playbook check is offered."));
  }
  msg.extra.append(box);
  first.focus();
}

/** Questions are about one pinned document until the chip's × is pressed (or a new chat):
 * sent as the request's ``documents``, so a whole-document question ("summarize it", "list
 * its sections") reads it whole and any other is searched in it only. */
function setScope(scope) {
  state.scope = scope;
  ui.scope.hidden = !scope;
  if (!scope) return;
  ui.scopeName.textContent = `Asking about ${scope.name}`;
  ui.scopeClear.setAttribute("aria-label", `Stop asking only about ${scope.name}`);
}

// --- sources and the viewer -------------------------------------------------------------
function where(s) {
  const parts = [];
  if (s.page) parts.push(s.page_end && s.page_end !== s.page ? `pages ${s.page}-${s.page_end}` : `page ${s.page}`);
  if (s.line_start) parts.push(s.line_end && s.line_end !== s.line_start ? `lines ${s.line_start}-${s.line_end}` : `line ${s.line_start}`);
  if (s.section && s.section.length) parts.push(s.section.join(" › "));
  return parts.join(" · ");
}

function excerptInto(node, chunkId) {
  api.source(chunkId).then((d) => {
    const text = d.text.replace(/\s+/g, " ").trim();
    node.textContent = text.length > 220 ? `${text.slice(0, 220)}…` : text;
  }).catch(() => { node.textContent = "(the passage is no longer in the index)"; });
}

/** The passages retrieval found, before the answer is written (no numbers yet). */
function showHits(msg) {
  ui.sourcesEmpty.hidden = msg.hits.length > 0;
  ui.sourcesNote.hidden = false;
  ui.sourcesNote.textContent = msg.hits.length
    ? `${msg.hits.length} passage${msg.hits.length === 1 ? "" : "s"} found; the ones the answer cites are marked when it is written.`
    : "No passage was found.";
  for (const h of msg.hits) {
    const li = el("li");
    const card = el("button", "card found");
    card.type = "button";
    card.dataset.chunk = h.chunk_id;
    const head = el("span", "card-head");
    head.append(el("span", "file", basename(h.path)));
    const loc = el("span", "where", where(h) || "whole document");
    const score = el("span", "score", `relevance ${Number(h.relevance).toFixed(2)}`);
    const excerpt = el("span", "excerpt", "…");
    card.append(head, loc, score, excerpt);
    card.setAttribute("aria-label", `Found: ${basename(h.path)}${where(h) ? `, ${where(h)}` : ""}. Open the passage.`);
    card.addEventListener("click", () => openSource(h));
    li.append(card);
    ui.cards.append(li);
    excerptInto(excerpt, h.chunk_id);
  }
}

/** Sources in reading order: those the answer cites, by first citation, then the rest. */
function ordered(msg) {
  const cited = (msg.cited && msg.cited.length ? msg.cited : citedNumbers(msg.text))
    .map((n) => msg.sources[n - 1]).filter(Boolean);
  return [...cited, ...msg.sources.filter((s) => !cited.includes(s))].map((s) => ({
    source: s, cited: cited.includes(s),
  }));
}

function showSources(msg, selected = null) {
  state.shown = msg;
  ui.cards.replaceChildren();
  ui.sourcesNote.hidden = true;
  if (msg && !msg.sources.length && msg.hits && msg.root.dataset.state === "streaming") {
    showHits(msg);
    return;
  }
  const sources = msg ? ordered(msg) : [];
  ui.sourcesEmpty.hidden = sources.length > 0;
  const citedCount = sources.filter((x) => x.cited).length;
  if (sources.length && citedCount < sources.length) {
    ui.sourcesNote.hidden = false;
    ui.sourcesNote.textContent = `${citedCount} cited · ${sources.length - citedCount} more found but not cited`;
  }
  for (const { source: s, cited } of sources) {
    const li = el("li", cited ? "cited" : "uncited");
    const card = el("button", `card ${cited ? "cited" : "uncited"}`);
    card.type = "button";
    card.dataset.n = String(s.n);
    card.id = `source-${s.n}`;
    const head = el("span", "card-head");
    head.append(el("span", "cite", String(s.n)), el("span", "file", basename(s.path)),
      el("span", `badge ${cited ? "cited" : "uncited"}`, cited ? "cited" : "not cited"));
    const score = el("span", "score", `score ${Number(s.score).toFixed(2)}`);
    const loc = el("span", "where", where(s) || "whole document");
    const excerpt = el("span", "excerpt", "…");
    card.append(head, loc, score, excerpt);
    card.setAttribute("aria-label", `Source ${s.n}${cited ? "" : " (not cited)"}: ${s.location}, score ${Number(s.score).toFixed(2)}. Open the passage.`);
    card.addEventListener("click", () => { select(s.n); openSource(s); });
    li.append(card);
    if (s.document_id && (!state.scope || state.scope.id !== s.document_id)) {
      li.append(actionButton("Ask about this document", "pin",
        `Ask only about ${basename(s.path)}`, () => {
          setScope({ id: s.document_id, name: basename(s.path) });
          ui.question.focus();
        }));
    }
    if (msg.serverId !== null && msg.root.dataset.state === "done") {
      const vote = msg.feedback.sources[s.chunk_id] || 0;
      const thumbs = el("span", "source-thumbs");
      thumbs.setAttribute("role", "group");
      thumbs.setAttribute("aria-label", `Feedback on source ${s.n}`);
      const up = actionButton("▲ Relevant", "thumb up", `Source ${s.n} is relevant`,
        () => rateSource(msg, s.chunk_id, 1));
      const down = actionButton("▼ Not relevant", "thumb down", `Source ${s.n} is not relevant`,
        () => rateSource(msg, s.chunk_id, -1));
      up.setAttribute("aria-pressed", String(vote === 1));
      down.setAttribute("aria-pressed", String(vote === -1));
      thumbs.append(up, down);
      li.append(thumbs);
    }
    ui.cards.append(li);
    excerptInto(excerpt, s.chunk_id);
  }
  const select = (n) => {
    for (const c of ui.cards.querySelectorAll(".card")) {
      c.classList.toggle("selected", c.dataset.n === String(n));
    }
  };
  if (selected !== null) {
    select(selected);
    ui.cards.querySelector(`[data-n="${selected}"]`)?.scrollIntoView({ block: "nearest" });
  }
}

async function openSource(s) {
  clearError();
  let d;
  try {
    d = await api.source(s.chunk_id, s.n ? s : null); // a citation: its sentence too
  } catch (err) {
    showError(messageOf(err));
    return;
  }
  const file = basename(d.path);
  const stem = file.replace(/\.[^.]*$/, "");
  ui.viewerTitle.textContent = d.title && d.title !== file && d.title !== stem
    ? `${file} — ${d.title}` : file;
  ui.viewerWhere.textContent = [where(d), d.symbol, `characters ${d.char_start}-${d.char_end}`]
    .filter(Boolean).join(" · ");
  const text = d.source_text || d.text;
  ui.viewerText.replaceChildren();
  let mark = null;
  if (d.span_start !== null && d.span_end !== null && d.source_text) {
    // the passage lightly; inside it, the sentence(s) the citation rests on
    mark = el("mark", "passage");
    const f0 = d.focus_start, f1 = d.focus_end;
    if (f0 !== null && f1 !== null && (f0 > d.span_start || f1 < d.span_end)) {
      const sentence = el("mark", "sentence", text.slice(f0, f1));
      mark.append(text.slice(d.span_start, f0), sentence, text.slice(f1, d.span_end));
      ui.viewerWhere.textContent += " · the supporting sentence is highlighted";
      mark = sentence;
      ui.viewerText.append(text.slice(0, d.span_start), sentence.parentNode,
        text.slice(d.span_end));
    } else {
      mark.textContent = text.slice(d.span_start, d.span_end);
      ui.viewerText.append(text.slice(0, d.span_start), mark, text.slice(d.span_end));
    }
  } else {
    ui.viewerText.append(text);
  }
  ui.viewerPage.hidden = true;
  ui.viewerPage.replaceChildren();
  if (!ui.viewer.open) ui.viewer.showModal();
  mark?.scrollIntoView({ block: "center" });
  if (d.format === "pdf" && (s.page || d.page)) await showPage(d, s.page || d.page, s.n ? s : null);
}

/** A PDF's cited page as the file prints it, with the cited sentence's boxes over it. */
async function showPage(d, page, span) {
  const figure = el("figure", "pdf-page");
  const img = el("img");
  img.src = api.pageImage(d.chunk_id, page);
  img.alt = `Page ${page} of ${basename(d.path)}`;
  const layer = el("div", "pdf-boxes");
  const sheet = el("div", "pdf-sheet");
  sheet.append(img, layer);
  figure.append(sheet, el("figcaption", "muted", `Page ${page}`));
  ui.viewerPage.replaceChildren(figure);
  ui.viewerPage.hidden = false;
  let found;
  try {
    found = await api.pageBoxes(d.chunk_id, page, span);
  } catch {
    return; // the page shows without a highlight
  }
  for (const [left, top, right, bottom] of found.boxes) {
    const box = el("span", "pdf-box");
    Object.assign(box.style, { left: `${left * 100}%`, top: `${top * 100}%`,
      width: `${(right - left) * 100}%`, height: `${(bottom - top) * 100}%` });
    layer.append(box);
  }
  figure.querySelector("figcaption").textContent = found.boxes.length
    ? `Page ${page} of ${found.pages}: the cited text is highlighted`
    : `Page ${page} of ${found.pages}`;
  const first = layer.firstElementChild;
  if (first) {  // the page scrolls in its own box, to the highlight
    const scroll = () => {
      ui.viewerPage.scrollTop = first.offsetTop - ui.viewerPage.clientHeight / 2;
    };
    if (img.complete) scroll(); else img.addEventListener("load", scroll, { once: true });
  }
}

// --- wiring -----------------------------------------------------------------------------
ui.form.addEventListener("submit", (e) => {
  e.preventDefault();
  const query = ui.question.value;
  if (query.trim()) ui.question.value = "";
  ask(query);
});

ui.question.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    ui.form.requestSubmit();
  }
});

ui.stop.addEventListener("click", () => state.controller?.abort());
$("new-chat").addEventListener("click", newChat);
ui.rename.addEventListener("click", startRename);
ui.scopeClear.addEventListener("click", () => { setScope(null); ui.question.focus(); });
ui.jump.addEventListener("click", () => {
  state.follow = true;
  ui.jump.hidden = true;
  follow();
});
ui.messages.addEventListener("scroll", onScroll, { passive: true });
window.addEventListener("scroll", onScroll, { passive: true });
let searchTimer = 0;
ui.search.addEventListener("input", () => {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(loadChats, 200);
});
// --- keyboard shortcuts (listed under "Keyboard shortcuts" in the sidebar) ---------------
function typing(target) {
  return target instanceof HTMLElement &&
    (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
}

function lastAnswer() {
  const roots = [...ui.messages.querySelectorAll(".message.assistant")];
  return roots.length ? answers.get(roots[roots.length - 1]) : null;
}

document.addEventListener("keydown", (e) => {
  const mod = e.ctrlKey || e.metaKey;
  const key = e.key.toLowerCase();
  if (e.key === "Escape" && state.busy && !ui.viewer.open) {
    state.controller?.abort(); // stop the answer
  } else if (mod && !e.shiftKey && key === "k") {
    e.preventDefault();
    ui.search.focus();
    ui.search.select();
  } else if (mod && e.shiftKey && key === "o") {
    e.preventDefault();
    newChat();
  } else if (mod && e.shiftKey && key === "c" && !typing(e.target)) {
    const msg = lastAnswer();
    if (msg && msg.text.trim()) {
      e.preventDefault();
      const button = msg.root.querySelector(".action.copy");
      if (button) copyAnswer(msg, button);
    }
  } else if (e.key === "/" && !mod && !typing(e.target) && !ui.viewer.open) {
    e.preventDefault();
    ui.question.focus();
  }
});

// --- theme: follows prefers-color-scheme until the toggle picks light or dark ------------
const THEME_KEY = "citewise.theme";
const THEMES = ["system", "light", "dark"];
const dark = matchMedia("(prefers-color-scheme: dark)");

function applyTheme(choice) {
  if (choice === "light" || choice === "dark") document.documentElement.dataset.theme = choice;
  else delete document.documentElement.dataset.theme;
  const shown = choice === "system" ? `system (${dark.matches ? "dark" : "light"})` : choice;
  ui.theme.textContent = `Theme: ${shown}`;
  ui.theme.setAttribute("aria-label", `Colour theme: ${shown}. Select to change it.`);
}

function savedTheme() {
  try {
    const t = localStorage.getItem(THEME_KEY);
    return THEMES.includes(t) ? t : "system";
  } catch {
    return "system";
  }
}

ui.theme.addEventListener("click", () => {
  const next = THEMES[(THEMES.indexOf(savedTheme()) + 1) % THEMES.length];
  try { localStorage.setItem(THEME_KEY, next); } catch { /* this page only */ }
  applyTheme(next);
});
dark.addEventListener("change", () => applyTheme(savedTheme()));
applyTheme(savedTheme());

ui.exportFeedback.addEventListener("click", async () => {
  clearError();
  let text;
  try {
    text = await api.feedbackExport();
  } catch (err) {
    showError(messageOf(err));
    return;
  }
  const a = el("a");
  a.href = URL.createObjectURL(new Blob([text], { type: "application/x-ndjson" }));
  a.download = "citewise-feedback.jsonl";
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10000);
});
ui.file.addEventListener("change", () => {
  const file = ui.file.files[0];
  ui.file.value = "";
  if (file) attach(file);
});

// --- files dropped on the page (a browser tab or the desktop window) ---------------------
// Each dropped file goes through attach(), one after the other: the same upload, card,
// progress and errors as the + button. While an answer is streaming nothing is uploaded.
let dragDepth = 0;
const dragsFiles = (e) => Array.from(e.dataTransfer ? e.dataTransfer.types : []).includes("Files");
function showDropZone(on) {
  ui.dropZone.hidden = !on;
  document.body.classList.toggle("dragging", on);
}
document.addEventListener("dragenter", (e) => {
  if (!dragsFiles(e)) return;
  e.preventDefault();
  dragDepth += 1;
  showDropZone(true);
});
document.addEventListener("dragover", (e) => {
  if (!dragsFiles(e)) return;
  e.preventDefault();
  e.dataTransfer.dropEffect = state.busy ? "none" : "copy";
  showDropZone(true);
});
document.addEventListener("dragleave", (e) => {
  if (!dragsFiles(e)) return;
  dragDepth = Math.max(0, dragDepth - 1);
  if (dragDepth === 0) showDropZone(false);
});
document.addEventListener("drop", async (e) => {
  if (!dragsFiles(e)) return;
  e.preventDefault();  // never let the window navigate to the dropped file
  dragDepth = 0;
  showDropZone(false);
  const files = Array.from(e.dataTransfer.files);
  if (state.busy) {
    showError("Wait for the answer to finish (or stop it), then drop the files again.");
    return;
  }
  for (const file of files) await attach(file);
});
ui.adminKey.value = sessionStorage.getItem(KEY_STORE) || "";
ui.adminKey.addEventListener("change", () => sessionStorage.setItem(KEY_STORE, ui.adminKey.value.trim()));
ui.viewer.addEventListener("click", (e) => { if (e.target === ui.viewer) ui.viewer.close(); });

async function openFromHash() {
  const m = /^#source=([\w-]{1,128})$/.exec(location.hash);
  if (m) await openSource({ chunk_id: m[1] });
}

window.addEventListener("hashchange", openFromHash);
checkHealth();
setInterval(checkHealth, 30000);
loadChats();
openFromHash();
ui.question.focus();
