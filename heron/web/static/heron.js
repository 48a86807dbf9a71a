// Shared by every pane: JSON-RPC calls, a Server-Sent Events reader for fetch bodies,
// DOM building with textContent only (data never becomes markup), common notes, and
// $(id), the element of that id.
"use strict";
(function () {
  const csrf = document.querySelector('meta[name="heron-csrf"]').content;
  const NOT_FOUND = -32601;
  const $ = (id) => document.getElementById(id);
  let nextId = 1;

  function headers() {
    const h = { "content-type": "application/json" };
    if (csrf) h["x-heron-csrf"] = csrf;
    return h;
  }

  class RpcError extends Error {
    constructor(error) {
      super(error.message);
      this.code = error.code;
      this.data = error.data;
    }
  }

  function signInAgain(response) {
    if (response.status === 401) {
      location.assign("/signin?next=" + encodeURIComponent(location.pathname));
      throw new RpcError({ code: 401, message: "Signed out: sign in again." });
    }
  }

  async function rpc(method, params) {
    const body = { jsonrpc: "2.0", id: nextId++, method: method, params: params || {} };
    const response = await fetch("/rpc", {
      method: "POST", headers: headers(), body: JSON.stringify(body), credentials: "same-origin",
    });
    signInAgain(response);
    const answer = await response.json();
    if (answer.error) throw new RpcError(answer.error);
    return answer.result;
  }

  // A text/event-stream answer, read from fetch (any event name; POST when payload is
  // given, as /chat/stream takes): yields {event, data, id}.
  async function* stream(url, payload, signal) {
    const post = payload !== undefined && payload !== null;
    const response = await fetch(url, {
      method: post ? "POST" : "GET", headers: headers(), signal: signal,
      body: post ? JSON.stringify(payload) : undefined, credentials: "same-origin",
    });
    signInAgain(response);
    if (!response.ok) {
      const body = await response.json().catch(() => ({}));
      throw new Error((body.error && body.error.message) || "HTTP " + response.status);
    }
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const frame = { event: "message", data: "", id: null };
        for (const line of block.split("\n")) {
          const at = line.indexOf(":");
          if (at <= 0) continue;
          const key = line.slice(0, at);
          const val = line.slice(at + 1).replace(/^ /, "");
          if (key === "event") frame.event = val;
          else if (key === "data") frame.data += val;
          else if (key === "id") frame.id = val;
        }
        if (frame.data) yield { event: frame.event, id: frame.id, data: JSON.parse(frame.data) };
      }
    }
  }

  // el("a", {href: x, text: y}, child...): attributes set as attributes, text as text.
  function el(tag, attrs, ...kids) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "text") node.textContent = String(value);
      else if (key === "class") node.className = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else if (key === "href") node.setAttribute("href", safeHref(value));
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const kid of kids.flat()) {
      if (kid === null || kid === undefined) continue;
      node.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
    }
    return node;
  }

  // Only http(s) and same-origin paths become links: never javascript: or data:.
  function safeHref(url) {
    try {
      const parsed = new URL(String(url), location.href);
      return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed.href : "#";
    } catch (e) {
      return "#";
    }
  }

  function isWebUrl(url) {
    return /^https?:\/\//i.test(String(url));
  }

  function table(head, rows) {
    return el("table", {},
      el("thead", {}, el("tr", {}, head.map((h) => el("th", { scope: "col", text: h })))),
      el("tbody", {}, rows.map((cells) => el("tr", {}, cells.map((c) =>
        c instanceof Node && c.tagName === "TD" ? c : el("td", {}, c))))));
  }

  function num(x, digits) {
    if (x === null || x === undefined) return "–";
    return typeof x === "number" ? x.toFixed(digits === undefined ? 3 : digits) : String(x);
  }

  function when(seconds) {
    return seconds ? new Date(seconds * 1000).toLocaleString() : "never";
  }

  function note(container, text) {
    container.replaceChildren(el("p", { class: "note", role: "status", text: text }));
  }

  function fail(container, error, what) {
    if (error && error.code === NOT_FOUND) {
      note(container, (what || "This") + " is not available on this server (its API is absent).");
    } else {
      container.replaceChildren(el("p", { class: "error", role: "alert", text: error.message }));
    }
  }

  // Run fn; an absent method (-32601) or any error is shown in container, never thrown.
  async function guard(container, what, fn) {
    try {
      return await fn();
    } catch (error) {
      fail(container, error, what);
      return undefined;
    }
  }

  let discovered = null;
  function methods() {
    discovered = discovered || rpc("rpc.discover").then((doc) => new Set(doc.methods.map((m) => m.name)));
    return discovered;
  }

  // The passage a citation names, shown in the page's <aside id="passage">.
  async function showPassage(cite) {
    const aside = $("passage");
    const body = $("passage-body");
    aside.hidden = false;
    body.replaceChildren(el("p", { class: "muted", text: "Loading…" }));
    const lines = cite.line_range || cite.lines || [1, 1];
    await guard(body, "The passage view", async () => {
      const p = await rpc("library.passage",
        { library: cite.library, page: cite.page, first: lines[0], last: lines[1] });
      const where = isWebUrl(p.source)
        ? el("a", { href: p.source, target: "_blank", rel: "noopener noreferrer", text: p.source })
        : el("code", { text: p.source });
      body.replaceChildren(el("dl", { class: "fields" },
        el("dt", { text: "Library" }), el("dd", { class: "p-library", text: p.library }),
        el("dt", { text: "Page" }), el("dd", { class: "p-page", text: (p.collection ? p.collection + " / " : "") + p.page }),
        el("dt", { text: "Title" }), el("dd", { class: "p-title", text: p.title }),
        el("dt", { text: "Heading" }), el("dd", { class: "p-heading", text: p.heading || "–" }),
        el("dt", { text: "Lines" }), el("dd", { class: "p-lines", text: p.lines[0] + "–" + p.lines[1] }),
        el("dt", { text: "Source" }), el("dd", { class: "p-source" }, where)),
      el("pre", { class: "p-text", text: p.text }));
    });
    $("passage-h").focus();
  }

  const close = $("passage-close");
  if (close) {
    close.addEventListener("click", () => { $("passage").hidden = true; });
  }

  window.Heron = { $, rpc, stream, el, table, num, when, note, fail, guard, methods, showPassage, isWebUrl };
})();
