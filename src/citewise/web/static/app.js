// The citewise chat UI: chats, streamed answers with citation badges, sources and the source
// viewer, attachments with approval. Plain ES module; every piece of text from the server is
// put in the page as text (see markdown.js), never as HTML.

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
  viewerText: $("viewer-text"), adminKey: $("admin-key"),
};

const state = { chatId: null, busy: false, controller: null, shown: null };

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
  let list;
  try {
    list = await api.chats();
  } catch (err) {
    showError(messageOf(err));
    return;
  }
  ui.chatList.replaceChildren();
  ui.chatListEmpty.hidden = list.data.length > 0;
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
  showSources(null);
}

function newChat() {
  if (state.busy) state.controller?.abort();
  state.chatId = null;
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
  resetView(chat.title || "Untitled chat");
  let last = null;
  for (const m of chat.messages) {
    if (m.role === "user") {
      addUserMessage(m.content);
      continue;
    }
    const msg = addAssistantMessage();
    msg.text = m.content;
    msg.sources = m.sources || [];
    renderAnswer(msg);
    const status = { complete: "done", error: "error", interrupted: "stopped", pending: "waiting" };
    msg.root.dataset.state = status[m.status] || "done";
    if (m.status === "error") msg.root.classList.add("failed");
    if (m.status === "interrupted") addNote(msg, "This answer was stopped before it was complete.");
    if (msg.sources.length) last = msg;
  }
  for (const p of chat.pending) {
    const msg = addAssistantMessage();
    msg.root.dataset.state = "waiting";
    askApproval(msg, p);
  }
  if (last) showSources(last);
  for (const b of ui.chatList.querySelectorAll(".chat-item")) {
    const link = b.querySelector(".chat-link");
    if (b.dataset.id === id) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
}

// --- messages ---------------------------------------------------------------------------
function addUserMessage(text) {
  ui.intro.remove();
  const root = el("article", "message user");
  root.setAttribute("aria-label", "You");
  root.append(el("p", "", text));
  ui.messages.append(root);
  root.scrollIntoView({ block: "end" });
  return root;
}

function addAssistantMessage() {
  ui.intro.remove();
  const root = el("article", "message assistant");
  root.setAttribute("aria-label", "citewise");
  const process = el("details", "process");
  const summary = el("summary", "", "Process");
  const steps = el("ol", "steps");
  process.append(summary, steps);
  process.hidden = true;
  const body = el("div", "answer");
  const extra = el("div", "extra");
  root.append(process, body, extra);
  ui.messages.append(root);
  const msg = { root, process, steps, body, extra, text: "", sources: [], tokens: 0, frame: 0 };
  root.addEventListener("focusin", () => { if (msg.sources.length) showSources(msg); });
  return msg;
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

function flagCards(msg, scan) {
  const list = el("ul", "result-cards");
  list.setAttribute("aria-label", "Playbook flags");
  for (const f of scan.flags || []) {
    const li = el("li", `result-card flag ${f.verdict}`);
    li.dataset.rule = f.rule;
    li.append(el("strong", "", f.title || f.rule), el("span", `badge ${f.severity}`, f.severity),
      el("span", `badge ${f.verdict}`, f.verdict), el("p", "", f.explanation));
    const c = f.citation;
    if (c && c.chunk_id) {
      const open = el("button", "link", `Show the clause (${where(c) || basename(c.path)})`);
      open.type = "button";
      open.addEventListener("click", () => openSource(c));
      li.append(open);
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
      break;
    case "thinking": addStep(msg, `Plan: ${data.message}`, "thinking"); break;
    case "tool_call": addStep(msg, describeCall(data.tool, data.input || {}), "tool"); break;
    case "tool_result": {
      const result = data.result || {};
      addStep(msg, describeResult(data.tool, result), "result");
      if (data.tool === "ingest" && result.files) fileCards(msg, result.files);
      if (data.tool === "scan" && result.result) flagCards(msg, result.result);
      if (data.tool === "scan" && result.error) addNote(msg, result.error, "warning");
      break;
    }
    case "token":
      msg.text += data.content;
      msg.tokens += 1;
      msg.root.dataset.tokens = String(msg.tokens);
      scheduleRender(msg);
      break;
    case "interrupt":
      msg.root.dataset.state = "waiting";
      askApproval(msg, data);
      break;
    case "done": {
      if (data.conversation_id) state.chatId = data.conversation_id;
      msg.text = data.answer || "";
      msg.sources = data.sources || [];
      if (msg.frame) cancelAnimationFrame(msg.frame);
      renderAnswer(msg);
      msg.root.dataset.state = "done";
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
      if (msg.sources.length) showSources(msg);
      break;
    }
    case "error":
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
      msg.root.dataset.state = "stopped";
      addNote(msg, "Stopped.");
    } else {
      if (msg.frame) renderAnswer(msg);
      handleEvent(msg, "error", { message: messageOf(err) });
    }
  } finally {
    msg.root.removeAttribute("aria-busy");
    if (state.controller === controller) state.controller = null;
    setBusy(false);
    await loadChats();
    checkHealth();
  }
}

async function ask(query, extra = {}) {
  clearError();
  if (!query.trim()) {
    showError("Type a question first.");
    ui.question.focus();
    return;
  }
  if (state.busy) return;
  addUserMessage(query);
  const msg = addAssistantMessage();
  if (!state.chatId) ui.title.textContent = query;
  await runTurn(msg, (onEvent, signal) => api.stream(
    { query, conversation_id: state.chatId, ...extra }, onEvent, signal));
}

// --- attachments ------------------------------------------------------------------------
async function attach(file) {
  clearError();
  if (state.busy) return;
  addUserMessage(`Attached ${file.name}`);
  const msg = addAssistantMessage();
  msg.root.dataset.state = "streaming";
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
  if (documentId) await ask(`Check ${file.name} against the contract playbook`, { attachment: documentId });
}

// --- sources and the viewer -------------------------------------------------------------
function where(s) {
  const parts = [];
  if (s.page) parts.push(s.page_end && s.page_end !== s.page ? `pages ${s.page}-${s.page_end}` : `page ${s.page}`);
  if (s.line_start) parts.push(s.line_end && s.line_end !== s.line_start ? `lines ${s.line_start}-${s.line_end}` : `line ${s.line_start}`);
  if (s.section && s.section.length) parts.push(s.section.join(" › "));
  return parts.join(" · ");
}

function showSources(msg, selected = null) {
  state.shown = msg;
  ui.cards.replaceChildren();
  const sources = msg ? msg.sources : [];
  ui.sourcesEmpty.hidden = sources.length > 0;
  for (const s of sources) {
    const li = el("li");
    const card = el("button", "card");
    card.type = "button";
    card.dataset.n = String(s.n);
    card.id = `source-${s.n}`;
    const head = el("span", "card-head");
    head.append(el("span", "cite", String(s.n)), el("span", "file", basename(s.path)));
    const score = el("span", "score", `score ${Number(s.score).toFixed(2)}`);
    const loc = el("span", "where", where(s) || "whole document");
    const excerpt = el("span", "excerpt", "…");
    card.append(head, loc, score, excerpt);
    card.setAttribute("aria-label", `Source ${s.n}: ${s.location}, score ${Number(s.score).toFixed(2)}. Open the passage.`);
    card.addEventListener("click", () => { select(s.n); openSource(s); });
    li.append(card);
    ui.cards.append(li);
    api.source(s.chunk_id).then((d) => {
      const text = d.text.replace(/\s+/g, " ").trim();
      excerpt.textContent = text.length > 220 ? `${text.slice(0, 220)}…` : text;
    }).catch(() => { excerpt.textContent = "(the passage is no longer in the index)"; });
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
    d = await api.source(s.chunk_id);
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
    mark = el("mark", "", text.slice(d.span_start, d.span_end));
    ui.viewerText.append(text.slice(0, d.span_start), mark, text.slice(d.span_end));
  } else {
    ui.viewerText.append(text);
  }
  if (!ui.viewer.open) ui.viewer.showModal();
  mark?.scrollIntoView({ block: "center" });
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
ui.file.addEventListener("change", () => {
  const file = ui.file.files[0];
  ui.file.value = "";
  if (file) attach(file);
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
