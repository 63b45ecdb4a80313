// The HTTP API of citewise (docs/api.md) as small async functions, with readable errors.
//
// Every failure becomes an ApiError whose message a person can act on: the server cannot be
// reached, a question was refused (422/413), an admin key is needed (401/403)...

export class ApiError extends Error {
  constructor(message, { status = 0, code = "" } = {}) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
  }
}

export function unreachable(base) {
  return new ApiError(
    `Cannot reach the citewise server${base ? ` at ${base}` : ""}. ` +
      "Check that `citewise serve` is running, then try again.",
    { code: "Unreachable" },
  );
}

function detailText(detail) {
  if (typeof detail === "string") return detail;
  if (Array.isArray(detail)) {
    // FastAPI's validation errors: [{loc: [...], msg}]
    return detail.map((d) => `${(d.loc || []).slice(1).join(".") || "request"}: ${d.msg}`).join("; ");
  }
  return "";
}

async function failure(response) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  const detail = body ? detailText(body.detail) : "";
  const status = response.status;
  let message;
  if (status === 401) message = "This action needs the server's admin key: enter it under \"Admin key\".";
  else if (status === 403) message = detail || "The server refused this action.";
  else if (status === 413) message = detail || "That is larger than the server accepts.";
  else if (status === 422) message = detail ? `The server refused the question: ${detail}` : "The server refused the question.";
  else if (status === 404) message = detail || "Not found (it may have been deleted).";
  else if (status >= 500) message = `The server failed (${status})${detail ? `: ${detail}` : ""}.`;
  else message = detail || `Request failed with status ${status}.`;
  return new ApiError(message, { status, code: (body && body.code) || "" });
}

const VISITOR_KEY = "citewise.visitor";

/** This browser's anonymous visitor token (X-Citewise-Visitor): with reading open, the server
 * keeps this browser's chats under it, and no other visitor lists, reads or deletes them. */
export function visitorToken() {
  let token = null;
  try { token = localStorage.getItem(VISITOR_KEY); } catch { token = null; }
  if (token && /^[A-Za-z0-9_-]{16,128}$/.test(token)) return token;
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  token = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  try { localStorage.setItem(VISITOR_KEY, token); } catch { /* private mode: this page only */ }
  return token;
}

export class Api {
  /** base: "" for this origin, or "https://host:port"; key(): the admin key or "". */
  constructor(base = "", key = () => "") {
    this.base = base.replace(/\/+$/, "");
    this.key = key;
  }

  headers(extra = {}) {
    const h = { ...extra, "X-Citewise-Visitor": visitorToken() };
    const key = this.key();
    if (key) h["X-API-Key"] = key;
    return h;
  }

  async request(path, { method = "GET", body, json, signal } = {}) {
    const init = { method, signal, headers: this.headers() };
    if (json !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(json);
    } else if (body !== undefined) {
      init.body = body;
    }
    let response;
    try {
      response = await fetch(this.base + path, init);
    } catch (err) {
      if (err && err.name === "AbortError") throw err;
      throw unreachable(this.base || location.origin);
    }
    if (!response.ok) throw await failure(response);
    return response;
  }

  async json(path, options) {
    const response = await this.request(path, options);
    return response.status === 204 ? null : response.json();
  }

  health(signal) { return this.json("/api/health", { signal }); }
  chats(q = "") {
    return this.json(`/api/chats?limit=200${q ? `&q=${encodeURIComponent(q)}` : ""}`);
  }
  chat(id) { return this.json(`/api/chats/${encodeURIComponent(id)}`); }
  deleteChat(id) { return this.json(`/api/chats/${encodeURIComponent(id)}`, { method: "DELETE" }); }
  renameChat(id, title) {
    return this.json(`/api/chats/${encodeURIComponent(id)}`, { method: "PATCH", json: { title } });
  }
  /** Delete message `messageId` of the chat and every later one (edit, regenerate). */
  truncate(id, messageId) {
    return this.json(`/api/chats/${encodeURIComponent(id)}/messages/${messageId}`,
      { method: "DELETE" });
  }
  feedback(id, messageId, { rating, comment = "", sources = {} }) {
    return this.json(`/api/chats/${encodeURIComponent(id)}/messages/${messageId}/feedback`,
      { method: "PUT", json: { rating, comment, sources } });
  }
  async feedbackExport() {
    const response = await this.request("/api/chats/feedback.jsonl");
    return response.text();
  }
  /** A source chunk; `span` ({char_start, char_end} of a citation) asks where that part,
   * the supporting sentence, lies in its source_text (focus_start / focus_end). */
  source(chunkId, span = null) {
    const q = span && Number.isInteger(span.char_start) && Number.isInteger(span.char_end)
      ? `?start=${span.char_start}&end=${span.char_end}` : "";
    return this.json(`/api/sources/${encodeURIComponent(chunkId)}${q}`);
  }
  /** Where a cited part (a citation's span: its sentence) is on page `page` of a PDF. */
  pageBoxes(chunkId, page, span = null) {
    const q = span && Number.isInteger(span.char_start) && Number.isInteger(span.char_end)
      ? `?start=${span.char_start}&end=${span.char_end}` : "";
    return this.json(`/api/sources/${encodeURIComponent(chunkId)}/page/${page}${q}`);
  }
  pageImage(chunkId, page) {
    return `${this.base}/api/sources/${encodeURIComponent(chunkId)}/page/${page}.png`;
  }
  documents() { return this.json("/api/documents"); }
  /** {contract, cues}: whether a playbook check suits the document. */
  scanFit(documentId) { return this.json(`/api/scan/fit/${encodeURIComponent(documentId)}`); }

  upload(file) {
    const form = new FormData();
    form.append("files", file, file.name);
    return this.json("/api/documents", { method: "POST", body: form });
  }

  /** POST /api/chat/stream; calls onEvent(type, data) per event (first a "conversation"
   * pseudo-event with the chat's id, from the X-Conversation-Id header); resolves at the end. */
  stream(body, onEvent, signal) {
    return this.events("/api/chat/stream", body, onEvent, signal);
  }

  resume(chatId, token, approve, onEvent, signal) {
    return this.events(`/api/chats/${encodeURIComponent(chatId)}/resume`,
      { resume_token: token, approve }, onEvent, signal);
  }

  async events(path, json, onEvent, signal) {
    const response = await this.request(path, { method: "POST", json, signal });
    const chat = response.headers.get("X-Conversation-Id");
    if (chat) onEvent("conversation", { conversation_id: chat });
    await readEvents(response.body, onEvent);
  }
}

/** Parse a text/event-stream body: onEvent(type, parsedJSON) per event; comments skipped. */
export async function readEvents(stream, onEvent) {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  const flush = (block) => {
    let type = "message";
    const data = [];
    for (const line of block.split(/\r?\n/)) {
      if (!line || line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "event") type = value;
      else if (field === "data") data.push(value);
    }
    if (!data.length) return;
    let payload;
    try {
      payload = JSON.parse(data.join("\n"));
    } catch {
      payload = { message: data.join("\n") };
    }
    onEvent(type, payload);
  };
  for (;;) {
    let chunk;
    try {
      chunk = await reader.read();
    } catch (err) {
      if (err && err.name === "AbortError") throw err;
      throw new ApiError("The connection to the server broke off before the answer was complete.",
        { code: "Disconnected" });
    }
    if (chunk.done) break;
    buffer += decoder.decode(chunk.value, { stream: true });
    let cut;
    while ((cut = buffer.search(/\r?\n\r?\n/)) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut).replace(/^\r?\n\r?\n/, "");
      flush(block);
    }
  }
  if (buffer.trim()) flush(buffer);
}
