// Shared by every pane: the page's words (t, from messages.<lang>.js), JSON-RPC calls,
// Server-Sent Events read from fetch (POST /chat/stream, and the GET streams, which
// reconnect and resume from the last id after a drop, as EventSource does), DOM building with
// textContent only (data never becomes markup), empty states and errors, the passage
// panel, the language picker, and $(id), the element of that id.
"use strict";
(function () {
  const csrf = document.querySelector('meta[name="heron-csrf"]').content;
  // The page's context (heron.server.http.contexts): every call it makes is in it.
  const context = document.querySelector('meta[name="heron-context"]').content;
  const messages = window.HeronMessages || {};
  const NOT_FOUND = -32601;
  const $ = (id) => document.getElementById(id);
  let nextId = 1;

  // t("jobs.items", {n: 3}): the catalogue's message with {n} filled in; a key it does
  // not hold (a job event kind added later) reads as fallback, else as the key.
  function t(key, values, fallback) {
    const known = Object.prototype.hasOwnProperty.call(messages, key);
    const text = known ? messages[key] : fallback !== undefined ? String(fallback) : key;
    return text.replace(/\{(\w+)\}/g, (all, name) =>
      values && values[name] !== undefined && values[name] !== null ? String(values[name]) : all);
  }

  function headers() {
    const h = { "content-type": "application/json" };
    if (csrf) h["x-heron-csrf"] = csrf;
    if (context) h["x-heron-context"] = context;
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
      throw new RpcError({ code: 401, message: t("error.signed_out") });
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

  // Frames of a text/event-stream body ("\n\n"-separated), as {event, data, id}.
  function* frames(buffer) {
    let cut;
    while ((cut = buffer.text.indexOf("\n\n")) >= 0) {
      const block = buffer.text.slice(0, cut);
      buffer.text = buffer.text.slice(cut + 2);
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

  // A text/event-stream answer read from fetch: POST with payload (as /chat/stream
  // takes), or GET with lastId sent as Last-Event-ID (to resume one). Yields frames;
  // onopen() once the server has accepted it.
  async function* stream(url, payload, signal, lastId, onopen) {
    const post = payload !== undefined && payload !== null;
    const h = headers();
    if (lastId) h["last-event-id"] = lastId;
    const response = await fetch(url, {
      method: post ? "POST" : "GET", headers: h, signal: signal,
      body: post ? JSON.stringify(payload) : undefined, credentials: "same-origin",
    });
    signInAgain(response);
    if (!response.ok) {
      const body = await response.json().catch(() => ({}));
      const error = new Error((body.error && body.error.message) || "HTTP " + response.status);
      error.status = response.status;
      throw error;
    }
    if (onopen) onopen();
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    const buffer = { text: "" };
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer.text += value;
      yield* frames(buffer);
    }
  }

  // A GET event stream that stays true: after a drop it reconnects (1 s, then up to 10 s
  // apart) sending the last id it saw as Last-Event-ID, so the server replays only what
  // was missed: what EventSource does, for every event name, and seeing the server's
  // status (a 4xx is not retried). onframe({event, data, id}); onstate("open" |
  // "retrying" | "ended" | "failed", error); ended(): whether a stream the server closed
  // is finished (a job that ended) rather than cut.
  function live(url, onframe, onstate, ended) {
    const controller = new AbortController();
    const state = (s, error) => { if (onstate) onstate(s, error); };
    let lastId = null;
    (async () => {
      for (let delay = 1000; ;) {
        try {
          const frames = stream(url, null, controller.signal, lastId, () => { delay = 1000; state("open"); });
          for await (const frame of frames) {
            if (frame.id) lastId = frame.id;
            onframe(frame);
          }
          if (ended && ended()) { state("ended"); return; }
        } catch (error) {
          if (error.name === "AbortError") return;
          if (error.status && error.status < 500) { state("failed", error); return; }
        }
        if (controller.signal.aborted) return;
        state("retrying");
        await new Promise((ok) => setTimeout(ok, delay));
        delay = Math.min(delay * 2, 10000);
      }
    })();
    return { close: () => controller.abort() };
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

  // A table in a scrolling box of its own, so a wide one never widens the page; the box
  // takes focus, so it scrolls from the keyboard too.
  function table(head, rows, label) {
    return el("div", { class: "table-wrap", tabindex: 0, role: "region", "aria-label": label || head.join(", ") },
      el("table", {},
        el("thead", {}, el("tr", {}, head.map((h) => el("th", { scope: "col", text: h })))),
        el("tbody", {}, rows.map((cells) => el("tr", {}, cells.map((c) =>
          c instanceof Node && (c.tagName === "TD" || c.tagName === "TH") ? c : el("td", {}, c)))))));
  }

  function num(x, digits) {
    if (x === null || x === undefined) return "–";
    return typeof x === "number" ? x.toFixed(digits === undefined ? 3 : digits) : String(x);
  }

  const locale = document.documentElement.lang || undefined;
  function when(value) {
    if (!value) return t("never");
    const date = typeof value === "number" ? new Date(value * 1000) : new Date(value);
    return isNaN(date) ? String(value) : date.toLocaleString(locale);
  }

  // A neutral message where there is nothing to show yet, with what to do next.
  function empty(container, text, hint) {
    container.replaceChildren(el("div", { class: "empty", role: "status" },
      el("p", { text: text }), hint ? el("p", { class: "muted", text: hint }) : null));
  }

  function note(container, text) {
    container.replaceChildren(el("p", { class: "note", role: "status", text: text }));
  }

  // An error shown where it happened: Heron's own sentence, the server's words (what
  // went wrong and what to do, never a traceback) beneath it.
  function fail(container, error, what) {
    if (error && error.code === NOT_FOUND) {
      note(container, t("error.absent", { what: what || "" }));
      return;
    }
    container.replaceChildren(el("div", { class: "error", role: "alert" },
      el("p", { class: "error-lead", text: t("error.failed", { what: what || "" }) }),
      error && error.message ? el("p", { class: "error-detail", text: error.message }) : null));
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

  // Copy text to the clipboard; where the Clipboard API is not offered (a page not
  // served from loopback or https), through a selected, hidden text area.
  async function copy(text, button) {
    try {
      await navigator.clipboard.writeText(text);
    } catch (e) {
      const area = el("textarea", { class: "sr-only", "aria-hidden": "true" });
      area.value = text;
      document.body.append(area);
      area.select();
      document.execCommand("copy");
      area.remove();
    }
    if (button) {
      const label = button.textContent;
      button.textContent = t("copied");
      setTimeout(() => { button.textContent = label; }, 1500);
    }
  }

  // A paged document's pages as a reader cites them ("p. 12", "pp. 12–13"); "" for none.
  function pagesLabel(pages) {
    if (!pages) return "";
    return pages[0] === pages[1] ? t("cite.page", { n: pages[0] })
      : t("cite.pages", { first: pages[0], last: pages[1] });
  }

  // Where a passage's source opens: a web URL as itself (at its lines or page), a local
  // path on this server's /source view, at its lines; a local PDF's original, at its page.
  function sourceLink(p) {
    if (isWebUrl(p.source)) {
      return el("a", { href: p.source, target: "_blank", rel: "noopener noreferrer", text: p.source });
    }
    if (p.pages && /#page=\d+$/.test(p.source)) {
      const q = new URLSearchParams({ library: p.library, page: p.page });
      return el("a", { href: "/source/file?" + q + "#page=" + p.pages[0], target: "_blank",
        rel: "noopener", text: p.source });
    }
    const q = new URLSearchParams({ library: p.library, page: p.page, first: p.lines[0], last: p.lines[1] });
    return el("a", { href: "/source?" + q + "#L" + p.lines[0], text: p.source });
  }

  let opener = null;
  // The passage a citation names, shown in the page's <aside id="passage">; Escape or
  // the close button hides it and gives focus back to what opened it.
  async function showPassage(cite, from) {
    const aside = $("passage");
    const body = $("passage-body");
    opener = from || document.activeElement;
    aside.hidden = false;
    document.body.classList.add("has-passage");
    body.replaceChildren(el("p", { class: "muted", text: t("loading") }));
    const lines = cite.line_range || cite.lines || [1, 1];
    await guard(body, t("passage.title"), async () => {
      const p = await rpc("library.passage",
        { library: cite.library, page: cite.page, first: lines[0], last: lines[1] });
      body.replaceChildren(el("dl", { class: "fields" },
        el("dt", { text: t("passage.library") }), el("dd", { class: "p-library", text: p.library }),
        el("dt", { text: t("passage.page") }), el("dd", { class: "p-page", text: p.page }),
        el("dt", { text: t("passage.page_title") }), el("dd", { class: "p-title", text: p.title }),
        el("dt", { text: t("passage.heading") }), el("dd", { class: "p-heading", text: p.heading || "–" }),
        el("dt", { text: t("passage.lines") }), el("dd", { class: "p-lines", text: p.lines[0] + "–" + p.lines[1] }),
        p.pages ? el("dt", { text: t("passage.pages") }) : null,
        p.pages ? el("dd", { class: "p-pages", text: pagesLabel(p.pages) }) : null,
        el("dt", { text: t("passage.source") }), el("dd", { class: "p-source" }, sourceLink(p))),
      el("pre", { class: "p-text", tabindex: 0 }, el("code", { text: p.text })));
    });
    $("passage-h").focus();
  }

  function closePassage() {
    const aside = $("passage");
    if (!aside || aside.hidden) return;
    aside.hidden = true;
    document.body.classList.remove("has-passage");
    for (const open of document.querySelectorAll("[data-open-passage]")) open.removeAttribute("data-open-passage");
    if (opener && opener.isConnected) opener.focus();
    opener = null;
  }

  const close = $("passage-close");
  if (close) close.addEventListener("click", closePassage);
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape") closePassage();
  });

  // The language picker: remembered in a cookie the server reads (a year, this site only).
  const picker = $("lang");
  if (picker) {
    picker.addEventListener("change", () => {
      document.cookie = "heron_lang=" + encodeURIComponent(picker.value) + "; path=/; max-age=31536000; samesite=strict";
      location.reload();
    });
  }

  // -- intervention cards: the Interventions pane's and the chat's ---------------------
  // cards(container, by, place): render(card) shows a card (accept, dismiss, its own
  // buttons through interventions.act as by()), or replaces the one with its id;
  // change(event, data) shows an outcome or an end told by the stream. place(node) puts
  // a new card in the page (the pane: newest first; the chat: in the conversation).
  const ICONS = { info: "ℹ", warning: "⚠", critical: "✖" };

  function sameOrigin(url) {
    try { return new URL(url, location.href).origin === location.origin; } catch (e) { return false; }
  }

  function cards(container, by, place) {
    const byId = (id) => container.querySelector(`article.card[data-id="${CSS.escape(String(id))}"]`);

    // Ended one way or another: the actions go, the card says why.
    function settle(node, text, outcome) {
      node.classList.add("done");
      if (outcome) node.dataset.outcome = outcome;
      node.dataset.state = outcome ? "decided" : "resolved";
      const actions = node.querySelector(".card-actions");
      if (actions) actions.remove();
      node.querySelector(".card-out").textContent = text;
    }

    function decided(node, value, who) {
      settle(node, t("interventions.decided." + value, { by: who || t("interventions.someone") }), value);
    }

    async function outcome(card, node, value) {
      const who = by();
      await guard(node.querySelector(".card-out"), t("interventions.outcome"), async () => {
        await rpc("interventions.outcome", { id: card.id, outcome: value, by: who });
        decided(node, value, who);
      });
    }

    function render(card) {
      const severity = ICONS[card.severity] ? card.severity : "info";
      const out = el("p", { class: "card-out", role: "status" });
      const audio = card.audio_url && sameOrigin(card.audio_url);
      // A spoken card shows what it says (its transcript), whether or not it is heard.
      const said = card.spoken && (audio || card.spoken !== card.text);
      const node = el("article", { class: `card sev-${severity}`, "data-id": card.id, "data-state": "active",
        "aria-labelledby": `card-${card.id}` },
        el("h2", { id: `card-${card.id}`, class: "card-title" },
          el("span", { class: "sev-icon", "aria-hidden": "true", text: ICONS[severity] }),
          el("span", { class: "sev-name", text: t("interventions.severity." + severity) }),
          el("span", { class: "card-kind", text: card.kind })),
        el("p", { class: "card-text", text: card.text }),
        said ? el("p", { class: "muted card-transcript", text: t("interventions.spoken", { text: card.spoken }) }) : null,
        el("p", { class: "meta", text: `${card.room} · ${when(card.created_at)}` +
          (card.seen_before ? " · " + t("interventions.seen_before", { n: card.seen_before }) : "") }),
        audio ? el("audio", { controls: true, preload: "none", src: new URL(card.audio_url, location.href).href, "aria-label": t("interventions.audio") }) : null,
        el("div", { class: "row card-actions" },
          el("button", { type: "button", text: t("interventions.accept"), onclick: () => outcome(card, node, "accept") }),
          el("button", { type: "button", class: "plain", text: t("interventions.dismiss"), onclick: () => outcome(card, node, "dismiss") }),
          (card.actions || []).map((a, i) => el("button", { type: "button", class: "plain", text: a.label,
            onclick: () => guard(out, a.label, async () => {
              const done = await rpc("interventions.act", { id: card.id, action: i, by: by() });
              const now = done.intervention;
              if (now.resolved_at) settle(node, t("interventions.action_done", { label: a.label }));
              else if (now.outcome) decided(node, now.outcome, now.outcome_by);
              else out.textContent = t("interventions.action_done", { label: a.label });
            }) }))),
        out);
      const old = byId(card.id);
      if (old) old.replaceWith(node); else place(node);
      if (card.outcome) decided(node, card.outcome, card.outcome_by);
      else if (card.resolved_at) settle(node, t("interventions.resolved"));
      return node;
    }

    // Another tab or client decided, or the condition went away: the card says so.
    function change(event, data) {
      const node = byId(data.id);
      if (!node) return;
      if (event === "outcome" && data.outcome) decided(node, data.outcome, data.outcome_by);
      if (event === "resolved" && !node.dataset.outcome) settle(node, t("interventions.resolved"));
    }

    return { render, change };
  }

  window.Heron = { $, t, rpc, pagesLabel, stream, live, el, table, num, when, empty, note, fail, guard, methods,
    showPassage, closePassage, isWebUrl, copy, cards };
})();
