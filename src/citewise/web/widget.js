/* citewise widget: one classic script that adds a floating, draggable "Ask the docs" launcher
 * and a compact chat panel to any page.
 *
 *   <script src="https://HOST/widget.js" data-api="https://HOST"></script>
 *
 * Attributes: data-api (the citewise server; default: where this script came from),
 * data-local-api (tried first on pages served from localhost; default http://127.0.0.1:8765),
 * data-title (the panel's title), data-page (the path sent with each question as the page it
 * is asked from, so answers prefer the document the page was built from; default: the page's
 * own location.pathname, read when the question is sent; "off" sends none). The server must
 * list the page's origin in cors_origins.
 *
 * Everything lives in a Shadow DOM under <citewise-widget>, with its own styles reset at the
 * host, so the page's styles do not reach in and the widget's do not reach out. Text from the
 * server is inserted as text, never as HTML: answers go through the chat page's own safe
 * Markdown renderer (static/markdown.js), which the server puts in this script where the
 * marker below stands, so /widget.js is still one file. Nothing else is loaded.
 */
(function () {
  "use strict";
  if (document.querySelector("citewise-widget")) return; // included twice

  var script = document.currentScript;
  var attr = function (name) { return script ? script.getAttribute(name) : null; };
  var scriptOrigin = script && script.src ? new URL(script.src, location.href).origin : location.origin;
  var remote = (attr("data-api") || scriptOrigin).replace(/\/+$/, "");
  var onLocalhost = /^(localhost|127\.0\.0\.1|\[::1\])$/.test(location.hostname);
  var local = (attr("data-local-api") || "http://127.0.0.1:8765").replace(/\/+$/, "");
  var candidates = onLocalhost && local !== remote ? [local, remote] : [remote];
  var title = attr("data-title") || "Ask the docs";
  var pageAttr = attr("data-page");
  // the page a question is asked from: read at each question, so a single-page app's route counts
  function pagePath() { return pageAttr === "off" ? null : (pageAttr || location.pathname); }
  var POS_KEY = "citewise.widget.position";
  var CHAT_KEY = "citewise.widget.chat";
  var VISITOR_KEY = "citewise.widget.visitor";

  // the anonymous visitor token: the server keeps this visitor's chats under it, so no other
  // visitor can list, read or delete them (X-Citewise-Visitor)
  function visitorToken() {
    var token = null;
    try { token = localStorage.getItem(VISITOR_KEY); } catch (e) { token = null; }
    if (token && /^[A-Za-z0-9_-]{16,128}$/.test(token)) return token;
    var bytes = new Uint8Array(16);
    crypto.getRandomValues(bytes);
    token = "";
    for (var i = 0; i < bytes.length; i++) token += (bytes[i] + 256).toString(16).slice(1);
    try { localStorage.setItem(VISITOR_KEY, token); } catch (e) { /* private mode: per page */ }
    return token;
  }
  var visitor = visitorToken();

  // the chat page's Markdown renderer (static/markdown.js), inlined by the server
  var markdown = (function () {
    /* @citewise-markdown@ */
    return { render: renderMarkdown };
  })();

  var CSS = [
    ":host{all:initial;position:fixed;z-index:2147483000;left:0;top:0;width:0;height:0;",
    "font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;font-size:14px;line-height:1.45;color:#1b1f24}",
    "*{box-sizing:border-box}",
    "button,input{font:inherit;color:inherit}",
    ":focus-visible{outline:3px solid #0b57d0;outline-offset:2px}",
    ".launcher{position:fixed;width:56px;height:56px;border-radius:50%;border:none;background:#0b57d0;color:#fff;",
    "font-size:15px;font-weight:700;cursor:grab;box-shadow:0 4px 14px rgba(0,0,0,.25);touch-action:none;user-select:none}",
    ".launcher.dragging{cursor:grabbing}",
    ".panel{position:fixed;width:360px;height:480px;max-height:calc(100vh - 24px);background:#fff;border:1px solid #d0d7de;",
    "border-radius:10px;box-shadow:0 8px 28px rgba(0,0,0,.22);display:flex;flex-direction:column;overflow:hidden}",
    ".panel[hidden]{display:none}",
    ".head{display:flex;align-items:center;gap:8px;padding:8px 10px;background:#0b57d0;color:#fff}",
    ".head h2{margin:0;font-size:15px;flex:1}",
    ".head button{background:transparent;border:none;color:#fff;font-size:20px;cursor:pointer;padding:0 6px}",
    ".head button.new{font-size:12px;border:1px solid rgba(255,255,255,.6);border-radius:6px;padding:2px 8px}",
    ".status{font-size:12px;padding:4px 10px;background:#f6f7f9;color:#57606a;border-bottom:1px solid #d0d7de}",
    ".status[data-state=down],.status[data-state=cors]{color:#b3261e;background:#fdecea}",
    ".log{flex:1;overflow:auto;padding:10px;display:flex;flex-direction:column;gap:8px}",
    ".msg{padding:8px 10px;border-radius:8px;max-width:92%;word-wrap:break-word}",
    ".msg p{margin:0 0 6px}.msg p:last-child{margin-bottom:0}",
    ".msg pre{background:#f0f2f5;padding:6px 8px;border-radius:6px;overflow:auto;margin:0 0 6px;font-size:12px}",
    ".msg code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:#f0f2f5;padding:0 3px;border-radius:3px}",
    ".msg pre code{padding:0;background:none}",
    ".msg ul,.msg ol{margin:0 0 6px;padding-left:20px}",
    ".msg blockquote{margin:0 0 6px;padding-left:8px;border-left:3px solid #d0d7de;color:#57606a}",
    ".msg h3,.msg h4,.msg h5,.msg h6{margin:4px 0;font-size:14px}",
    ".msg a{color:#0b57d0}",
    ".bot .note{margin:6px 0 0;font-size:12px;color:#57606a}",
    ".bot .progress{margin:0;color:#57606a;font-size:13px}",
    ".user{align-self:flex-end;background:#e8f0fe}",
    ".bot{align-self:flex-start;background:#f6f7f9;border:1px solid #d0d7de}",
    ".bot.error{border-color:#b3261e;color:#b3261e}",
    ".bot[data-state=streaming]:empty::after{content:'…';color:#57606a}",
    ".cite{color:#0b57d0;font-weight:700;text-decoration:none;font-size:.8em;vertical-align:super;padding:0 1px}",
    "a.cite:hover{text-decoration:underline}",
    ".sources{margin:6px 0 0;padding-left:18px;font-size:12px}",
    ".sources a{color:#0b57d0}",
    "form{display:flex;gap:6px;padding:8px;border-top:1px solid #d0d7de}",
    "input{flex:1;min-width:0;padding:7px 9px;border:1px solid #d0d7de;border-radius:6px;background:#fff}",
    "form button{padding:7px 12px;border-radius:6px;border:1px solid #0b57d0;background:#0b57d0;color:#fff;cursor:pointer}",
    "form button.stop{background:#fff;color:#b3261e;border-color:#b3261e}",
    "form button[hidden]{display:none}",
    "input:disabled,form button:disabled{opacity:.55;cursor:not-allowed}",
    ".sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}",
    "@media (max-width:600px){.panel{left:0!important;top:0!important;width:100vw;height:100vh;max-height:none;border-radius:0}}",
    // dark when the visitor's system is (the page's own colours are not reachable from here)
    "@media (prefers-color-scheme:dark){:host{color:#e6e9ed}",
    ".panel{background:#181c22;border-color:#343b45}.status{background:#0f1216;color:#a3adb8;border-color:#343b45}",
    ".user{background:#1d2a3f}.bot{background:#0f1216;border-color:#343b45}",
    ".msg pre,.msg code{background:#232830}.msg a,.cite,.sources a{color:#8ab4f8}",
    "form{border-color:#343b45}input{background:#0f1216;border-color:#343b45}",
    ".status[data-state=down],.status[data-state=cors]{color:#ffb4ab;background:#3d1714}}",
  ].join("");

  var host = document.createElement("citewise-widget");
  var root = host.attachShadow({ mode: "open" });
  root.innerHTML = // static markup only; no server text goes through innerHTML
    "<style>" + CSS + "</style>" +
    '<button class="launcher" type="button" aria-expanded="false" aria-controls="panel" ' +
    'title="' + "Ask the docs (drag to move; Shift+arrow keys move it too)" + '">Ask</button>' +
    '<section class="panel" id="panel" role="dialog" aria-label="" hidden>' +
    '<div class="head"><h2></h2><button class="new" type="button">New chat</button>' +
    '<button class="close" type="button" aria-label="Close">×</button></div>' +
    '<div class="status" role="status" aria-live="polite" data-state="checking">Connecting…</div>' +
    '<div class="log" role="log" aria-live="polite"></div>' +
    '<form><label class="sr" for="q">Your question</label>' +
    '<input id="q" name="q" autocomplete="off" placeholder="Ask a question…" disabled>' +
    '<button type="submit" class="send" disabled>Send</button>' +
    '<button type="button" class="stop" hidden>Stop</button></form></section>';

  var $ = function (sel) { return root.querySelector(sel); };
  var launcher = $(".launcher"), panel = $(".panel"), log = $(".log"), status = $(".status");
  var form = $("form"), input = $("input"), send = $("form .send"), stop = $("form .stop");
  $(".head h2").textContent = title;
  panel.setAttribute("aria-label", title);

  var api = null, busy = false, checked = false, controller = null;
  // the visitor's chat, kept across page loads of the site (the server checks it is theirs)
  var conversation = null, restored = false;
  try { conversation = localStorage.getItem(CHAT_KEY); } catch (e) { conversation = null; }

  function keepChat(id) {
    conversation = id;
    try {
      if (id) localStorage.setItem(CHAT_KEY, id); else localStorage.removeItem(CHAT_KEY);
    } catch (e) { /* private mode: this page only */ }
  }

  // --- position ------------------------------------------------------------------------
  var SIZE = 56, MARGIN = 8;
  var pos = null;
  try { pos = JSON.parse(localStorage.getItem(POS_KEY) || "null"); } catch (e) { pos = null; }

  function clamp() {
    var w = document.documentElement.clientWidth || innerWidth, h = innerHeight;
    if (!pos || typeof pos.x !== "number" || typeof pos.y !== "number") {
      pos = { x: w - SIZE - 20, y: h - SIZE - 20 };
    }
    pos.x = Math.max(MARGIN, Math.min(w - SIZE - MARGIN, pos.x));
    pos.y = Math.max(MARGIN, Math.min(h - SIZE - MARGIN, pos.y));
  }

  function place() {
    clamp();
    launcher.style.left = pos.x + "px";
    launcher.style.top = pos.y + "px";
    var w = document.documentElement.clientWidth || innerWidth, h = innerHeight;
    var pw = Math.min(360, w - 2 * MARGIN), ph = Math.min(480, h - 2 * MARGIN);
    var left = pos.x + SIZE / 2 > w / 2 ? pos.x + SIZE - pw : pos.x;
    var top = pos.y + SIZE / 2 > h / 2 ? pos.y - ph - MARGIN : pos.y + SIZE + MARGIN;
    panel.style.left = Math.max(MARGIN, Math.min(w - pw - MARGIN, left)) + "px";
    panel.style.top = Math.max(MARGIN, Math.min(h - ph - MARGIN, top)) + "px";
  }

  function save() { localStorage.setItem(POS_KEY, JSON.stringify({ x: pos.x, y: pos.y })); }

  var drag = null;
  launcher.addEventListener("pointerdown", function (e) {
    if (e.button !== 0) return;
    drag = { sx: e.clientX, sy: e.clientY, x: pos.x, y: pos.y, moved: false };
    launcher.setPointerCapture(e.pointerId);
  });
  launcher.addEventListener("pointermove", function (e) {
    if (!drag) return;
    var dx = e.clientX - drag.sx, dy = e.clientY - drag.sy;
    if (!drag.moved && Math.abs(dx) + Math.abs(dy) < 5) return;
    drag.moved = true;
    launcher.classList.add("dragging");
    pos = { x: drag.x + dx, y: drag.y + dy };
    place();
  });
  launcher.addEventListener("pointerup", function () {
    if (!drag) return;
    var moved = drag.moved;
    drag = null;
    launcher.classList.remove("dragging");
    if (moved) save(); else toggle();
  });
  launcher.addEventListener("pointercancel", function () { drag = null; });
  launcher.addEventListener("keydown", function (e) {
    var step = { ArrowLeft: [-20, 0], ArrowRight: [20, 0], ArrowUp: [0, -20], ArrowDown: [0, 20] }[e.key];
    if (e.key === "Enter" || e.key === " ") { e.preventDefault(); toggle(); return; }
    if (!step || !e.shiftKey) return;
    e.preventDefault();
    pos = { x: pos.x + step[0], y: pos.y + step[1] };
    place();
    save();
  });
  addEventListener("resize", place);

  function toggle(open) {
    var show = open === undefined ? panel.hidden : open;
    panel.hidden = !show;
    launcher.setAttribute("aria-expanded", String(show));
    if (show) {
      place();
      if (!checked) connect();
      if (!input.disabled) input.focus();
    } else {
      launcher.focus();
    }
  }
  $(".close").addEventListener("click", function () { toggle(false); });
  panel.addEventListener("keydown", function (e) { if (e.key === "Escape") toggle(false); });

  // --- server ----------------------------------------------------------------------------
  function setStatus(text, state) {
    status.textContent = text;
    status.dataset.state = state;
  }

  function health(base) {
    var ctl = new AbortController();
    var timer = setTimeout(function () { ctl.abort(); }, 4000);
    return fetch(base + "/api/health", { signal: ctl.signal })
      .then(function (r) { if (!r.ok) throw new Error("status " + r.status); return r.json(); })
      .finally(function () { clearTimeout(timer); });
  }

  // A cross-origin fetch fails the same way whether the server is down or its CORS setting
  // leaves this site out; a no-cors request (an opaque answer, nothing readable) tells them
  // apart: it gets through to a running server either way.
  function reachable(base) {
    var ctl = new AbortController();
    var timer = setTimeout(function () { ctl.abort(); }, 4000);
    return fetch(base + "/api/health", { mode: "no-cors", cache: "no-store", signal: ctl.signal })
      .then(function () { return true; }, function () { return false; })
      .finally(function () { clearTimeout(timer); });
  }

  function notAllowed() {
    return "This site (" + location.origin + ") is not allowed to use the assistant: the " +
      "server must list it in CITEWISE_CORS_ORIGINS.";
  }

  function unreachable() {
    return "Cannot reach the assistant's server right now; try again later.";
  }

  /** The reason no server answered: the first one that is up but refuses this origin, else
   * none is up. */
  function diagnose() {
    var i = 0;
    var next = function () {
      if (i >= candidates.length) return Promise.resolve({ text: unreachable(), state: "down" });
      var base = candidates[i++];
      return reachable(base).then(function (up) {
        return up ? { text: notAllowed(), state: "cors" } : next();
      });
    };
    return next();
  }

  function connect() {
    checked = true;
    setStatus("Connecting…", "checking");
    var tryAt = function (i) {
      if (i >= candidates.length) {
        api = null;
        input.disabled = send.disabled = true;
        checked = false; // the next opening tries again
        diagnose().then(function (why) { if (!api) setStatus(why.text, why.state); });
        return;
      }
      health(candidates[i]).then(function (h) {
        api = candidates[i];
        host.dataset.api = api;
        setStatus(h.documents + " documents indexed", "ok");
        input.disabled = send.disabled = busy;
        if (!panel.hidden) input.focus();
        restore();
      }, function () { tryAt(i + 1); });
    };
    tryAt(0);
  }

  // --- rendering -------------------------------------------------------------------------
  function el(tag, cls, text) {
    var n = document.createElement(tag);
    if (cls) n.className = cls;
    if (text !== undefined) n.textContent = text;
    return n;
  }

  function citeLink(n, sources) {
    var s = sources && sources[n - 1];
    if (!s) return el("span", "cite", "[" + n + "]");
    var a = el("a", "cite", "[" + n + "]");
    a.href = api + "/#source=" + encodeURIComponent(s.chunk_id);
    a.target = "_blank";
    a.rel = "noopener";
    a.title = s.location;
    a.setAttribute("aria-label", "Source " + n + ": " + s.location);
    return a;
  }

  function render(node, text, sources) {
    node.replaceChildren(markdown.render(text, function (n) { return citeLink(n, sources); }));
    if (sources && sources.length) {
      var list = el("ol", "sources");
      list.setAttribute("aria-label", "Sources");
      sources.forEach(function (s) {
        var li = el("li");
        var a = el("a", "", s.location);
        a.href = api + "/#source=" + encodeURIComponent(s.chunk_id);
        a.target = "_blank";
        a.rel = "noopener";
        li.append(a);
        list.append(li);
      });
      node.append(list);
    }
  }

  function parseEvents(body, onEvent) {
    var reader = body.getReader(), decoder = new TextDecoder(), buffer = "";
    function block(text) {
      var type = "message", data = [];
      text.split(/\r?\n/).forEach(function (line) {
        if (line.indexOf("event:") === 0) type = line.slice(6).trim();
        else if (line.indexOf("data:") === 0) data.push(line.slice(5).replace(/^ /, ""));
      });
      if (data.length) onEvent(type, JSON.parse(data.join("\n")));
    }
    function pump() {
      return reader.read().then(function (r) {
        if (r.done) { if (buffer.trim()) block(buffer); return; }
        buffer += decoder.decode(r.value, { stream: true });
        var cut;
        while ((cut = buffer.search(/\r?\n\r?\n/)) >= 0) {
          block(buffer.slice(0, cut));
          buffer = buffer.slice(cut).replace(/^\r?\n\r?\n/, "");
        }
        return pump();
      });
    }
    return pump();
  }

  /** The kept chat's messages, shown once per page load (a chat the server no longer has,
   * or not this visitor's, is forgotten). */
  function restore() {
    if (restored || !conversation || busy || log.childElementCount) return;
    restored = true;
    fetch(api + "/api/chats/" + encodeURIComponent(conversation),
      { headers: { "X-Citewise-Visitor": visitor } })
      .then(function (r) {
        if (r.status === 404) { keepChat(null); return null; }
        return r.ok ? r.json() : null;
      })
      .then(function (chat) {
        if (!chat || log.childElementCount) return;
        chat.messages.forEach(function (m) {
          if (m.role === "user") { log.append(el("div", "msg user", m.content)); return; }
          var bot = el("div", "msg bot");
          bot.dataset.state = m.status === "complete" ? "done" : m.status;
          render(bot, m.content, m.sources || []);
          log.append(bot);
        });
        log.scrollTop = log.scrollHeight;
      })
      .catch(function () { /* shown empty; asking still works */ });
  }

  $(".new").addEventListener("click", function () {
    if (busy && controller) controller.abort();
    keepChat(null);
    log.replaceChildren();
    input.focus();
  });

  function ask(query) {
    log.append(el("div", "msg user", query));
    var bot = el("div", "msg bot");
    bot.dataset.state = "streaming";
    log.append(bot);
    log.scrollTop = log.scrollHeight;
    var text = "", ended = false, preferring = "", page = pagePath();
    busy = true;
    input.disabled = send.disabled = true;
    controller = new AbortController();
    send.hidden = true;
    stop.hidden = false;
    var fail = function (message) {
      ended = true;
      bot.dataset.state = "error";
      bot.classList.add("error");
      bot.textContent = message;
    };
    fetch(api + "/api/chat/stream", {
      method: "POST",
      signal: controller.signal,
      headers: { "Content-Type": "application/json", "X-Citewise-Visitor": visitor },
      body: JSON.stringify({ query: query, conversation_id: conversation, page: page,
                             context_hint: page }),
    }).then(function (r) {
      if (!r.ok) {
        return r.json().catch(function () { return {}; }).then(function (b) {
          fail(typeof b.detail === "string" ? b.detail : "The question was refused (" + r.status + ").");
        });
      }
      return parseEvents(r.body, function (type, d) {
        if (type === "token") {
          text += d.content;
          render(bot, text, null);
        } else if (type === "status" && d.stage === "page" && d.message) {
          // "preferring docs/install.md (the page you are on)": kept under the answer
          preferring = d.message.charAt(0).toUpperCase() + d.message.slice(1) + ".";
          bot.replaceChildren(el("p", "progress", preferring));
          bot.dataset.stage = d.stage;
        } else if (type === "status" && d.stage === "fallback") {
          text = "";  // the text so far is withdrawn; the fallback answer follows
          render(bot, text, null);
        } else if (type === "status" && !text && d.message) {
          // what the server is doing, until the first word
          var line = el("p", "progress", d.message.charAt(0).toUpperCase() + d.message.slice(1) + "…");
          bot.replaceChildren(line);
          bot.dataset.stage = d.stage || "";
        } else if (type === "done") {
          ended = true;
          keepChat(d.conversation_id || conversation);
          bot.dataset.state = "done";
          render(bot, d.answer || "", d.sources || []);
          if (preferring && d.found) bot.append(el("p", "note page", preferring));
        } else if (type === "interrupt") {
          ended = true;
          bot.dataset.state = "done";
          render(bot, "This needs approval in the full citewise app.", null);
        } else if (type === "error") {
          fail(d.message || "The answer failed.");
        }
        log.scrollTop = log.scrollHeight;
      });
    }).catch(function (err) {
      if (err && err.name === "AbortError") {  // Stop: the server stops and keeps the part
        ended = true;
        bot.dataset.state = "stopped";
        bot.append(el("p", "note", "Stopped."));
        return;
      }
      fail(unreachable());
      diagnose().then(function (why) { if (why.state === "cors") bot.textContent = why.text; });
      checked = false;
      connect();
    }).then(function () {
      if (!ended) fail("The answer ended before it was complete.");
      busy = false;
      controller = null;
      stop.hidden = true;
      send.hidden = false;
      input.disabled = send.disabled = !api;
      input.focus();
    });
  }

  stop.addEventListener("click", function () { if (controller) controller.abort(); });

  form.addEventListener("submit", function (e) {
    e.preventDefault();
    var q = input.value;
    if (!q.trim() || busy || !api) return;
    input.value = "";
    ask(q);
  });

  place();
  (document.body || document.documentElement).append(host);
})();
