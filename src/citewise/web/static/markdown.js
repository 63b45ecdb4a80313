// A safe Markdown subset rendered straight to DOM nodes: no HTML string is ever parsed, so
// text from a model or a document cannot inject markup or scripts (raw HTML shows as text).
//
// Blocks: paragraphs (single line breaks kept), headings (# to ######, shown two levels
// lower so they sit under the page's own), "-", "*", "+" and "1." lists, "> " quotes, and
// ``` fenced code. Inline: `code`, **bold**, *italic* / _italic_, [text](http(s) link), and
// citations [1] or [1, 2], which become whatever makeCitation(n) returns.

const INLINE = new RegExp(
  [
    /`([^`\n]+)`/.source, // 1 code
    /\[([^\]\n]+)\]\((https?:\/\/[^\s)]+)\)/.source, // 2 text, 3 href
    /\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\](?!\()/.source, // 4 citation numbers
    /\*\*([^*\n]+?)\*\*/.source, // 5 bold
    /(?<![\w*])\*([^*\s][^*\n]*?)\*(?![\w*])/.source, // 6 italic with *
    /(?<!\w)_([^_\s][^_\n]*?)_(?!\w)/.source, // 7 italic with _
  ].join("|"),
  "g",
);

function el(tag, className) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  return node;
}

/** Append the inline content of `text` to `parent`. */
export function renderInline(parent, text, makeCitation) {
  let last = 0;
  // a regex of this call's own: the nested calls below (bold, italic, link text) must not
  // move this loop's lastIndex (they did, and **bold** looped for ever)
  const inline = new RegExp(INLINE);
  for (let m = inline.exec(text); m; m = inline.exec(text)) {
    if (m.index > last) parent.append(text.slice(last, m.index));
    if (m[1] !== undefined) {
      const code = el("code");
      code.textContent = m[1];
      parent.append(code);
    } else if (m[2] !== undefined) {
      const a = el("a");
      a.href = m[3];
      a.rel = "noopener noreferrer";
      a.target = "_blank";
      renderInline(a, m[2], null);
      parent.append(a);
    } else if (m[4] !== undefined) {
      const numbers = m[4].split(",").map((s) => Number.parseInt(s.trim(), 10));
      if (makeCitation) {
        for (const n of numbers) parent.append(makeCitation(n));
      } else {
        parent.append(m[0]);
      }
    } else {
      const strong = m[5] !== undefined;
      const node = el(strong ? "strong" : "em");
      renderInline(node, m[5] ?? m[6] ?? m[7], makeCitation);
      parent.append(node);
    }
    last = inline.lastIndex;
  }
  if (last < text.length) parent.append(text.slice(last));
}

const LIST_ITEM = /^\s{0,3}(?:([-*+])|(\d{1,9})[.)])\s+(.*)$/;
const HEADING = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const FENCE = /^\s{0,3}(```|~~~)(.*)$/;
const QUOTE = /^\s{0,3}>\s?(.*)$/;

/** A DocumentFragment for the Markdown `text`; makeCitation(n) -> Node for "[n]". */
export function renderMarkdown(text, makeCitation = null) {
  const out = document.createDocumentFragment();
  const lines = String(text).replace(/\r\n?/g, "\n").split("\n");
  let para = null; // lines of the open paragraph
  let list = null; // {node, ordered}
  let quote = null; // lines of the open quote

  const closePara = () => {
    if (!para) return;
    const p = el("p");
    para.forEach((line, i) => {
      if (i) p.append(el("br"));
      renderInline(p, line, makeCitation);
    });
    out.append(p);
    para = null;
  };
  const closeList = () => { list = null; };
  const closeQuote = () => {
    if (!quote) return;
    const q = el("blockquote");
    q.append(renderMarkdown(quote.join("\n"), makeCitation));
    out.append(q);
    quote = null;
  };
  const closeAll = () => { closePara(); closeList(); closeQuote(); };

  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    let m;
    if ((m = FENCE.exec(line))) {
      closeAll();
      const body = [];
      for (i++; i < lines.length && !lines[i].trim().startsWith(m[1]); i++) body.push(lines[i]);
      const pre = el("pre");
      const code = el("code");
      code.textContent = body.join("\n");
      if (m[2].trim()) code.dataset.lang = m[2].trim();
      pre.append(code);
      out.append(pre);
      continue;
    }
    if (!line.trim()) { closeAll(); continue; }
    if ((m = QUOTE.exec(line))) {
      closePara(); closeList();
      (quote ||= []).push(m[1]);
      continue;
    }
    closeQuote();
    if ((m = HEADING.exec(line))) {
      closeAll();
      const h = el(`h${Math.min(6, m[1].length + 2)}`);
      renderInline(h, m[2], makeCitation);
      out.append(h);
      continue;
    }
    if ((m = LIST_ITEM.exec(line))) {
      closePara();
      const ordered = m[2] !== undefined;
      if (!list || list.ordered !== ordered) {
        const node = el(ordered ? "ol" : "ul");
        if (ordered && m[2] !== "1") node.start = Number.parseInt(m[2], 10);
        out.append(node);
        list = { node, ordered };
      }
      const li = el("li");
      renderInline(li, m[3], makeCitation);
      list.node.append(li);
      continue;
    }
    if (list && /^\s{2,}\S/.test(line)) { // a continuation line of the last item
      const li = list.node.lastElementChild;
      li.append(" ");
      renderInline(li, line.trim(), makeCitation);
      continue;
    }
    closeList();
    (para ||= []).push(line);
  }
  closeAll();
  return out;
}
