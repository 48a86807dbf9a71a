// Chat: answers streamed from POST /chat/stream (resumed from the last event after a
// drop), shown as the server's sanitised HTML once whole; inline [n] markers and a
// sources list that open the passage beside the answer; copy, regenerate, stop; the
// conversations of sessions.* in a sidebar (those made on this page by the person signed
// in), the current one remembered by this browser. The conversation's room (?room=R, else
// the context's interventions room) is sent with each question, and the cards raised in
// it while the page is open are items of the conversation; a critical card's voice plays
// once, after the person's first gesture (as browsers require), unless they muted it.
"use strict";
(function () {
  const H = window.Heron, { $, t, el } = H;
  const log = $("log"), form = $("ask"), message = $("message"), stop = $("stop"), send = $("send");
  const KEY = "heron.session";
  const RESUMES = 3;
  const models = new Map();  // alias -> {provider, model, default}
  let controller = null;

  function sessionId() { return localStorage.getItem(KEY); }
  function setSession(id) {
    if (id) localStorage.setItem(KEY, id); else localStorage.removeItem(KEY);
    const url = new URL(location.href);
    if (id) url.searchParams.set("session", id); else url.searchParams.delete("session");
    history.replaceState(null, "", url);
  }

  // -- one answer ----------------------------------------------------------------------

  // A paged document's citation names its page, a Markdown page's its lines, a delegated
  // job's result (c.job) the job; the job's opens the jobs pane on it (/jobs?job=ID).
  const jobLink = (c) => "/jobs?job=" + encodeURIComponent(c.job);
  function citeLabel(c, n) {
    if (c.job) return t("chat.source_label_job", { n: n, job: c.job, prompt: c.heading });
    const where = c.pages
      ? t("chat.source_label_pages", { n: n, library: c.library, page: c.page, pages: H.pagesLabel(c.pages) })
      : t("chat.source_label", { n: n, library: c.library, page: c.page,
        first: c.line_range[0], last: c.line_range[1] });
    return where + (c.heading ? " · " + c.heading : "");
  }

  function openCite(link, c) {
    for (const open of document.querySelectorAll("[data-open-passage]")) open.removeAttribute("data-open-passage");
    link.setAttribute("data-open-passage", "true");
    H.showPassage(c, link);
  }

  // The server's HTML (markdown-it, then nh3: nothing in it can run) put in place through
  // an inert <template>; then markers get their labels, code blocks a copy button, and
  // tables a scrolling box.
  function showHtml(node, html, citations) {
    const holder = document.createElement("template");
    holder.innerHTML = html;
    node.replaceChildren(holder.content);
    node.classList.remove("streaming");
    for (const a of node.querySelectorAll("a.cite")) {
      const n = Number(a.dataset.cite), c = citations[n - 1];
      if (!c) continue;
      a.setAttribute("aria-label", citeLabel(c, n));
      a.title = citeLabel(c, n);
      a.dataset.page = c.page;
      if (c.job) { a.href = jobLink(c); a.dataset.job = c.job; continue; }
      a.addEventListener("click", (e) => { e.preventDefault(); openCite(a, c); });
    }
    for (const pre of node.querySelectorAll("pre")) {
      pre.tabIndex = 0;
      const box = el("div", { class: "code" });
      pre.replaceWith(box);
      const button = el("button", { type: "button", class: "plain small copy-code", text: t("chat.copy_code"),
        onclick: () => H.copy(pre.textContent, button) });
      box.append(button, pre);
    }
    for (const table of node.querySelectorAll("table")) {
      const box = el("div", { class: "table-wrap", tabindex: 0, role: "region", "aria-label": t("chat.table") });
      table.replaceWith(box);
      box.append(table);
    }
  }

  function sources(view, citations) {
    view.sources.replaceChildren();
    if (!citations.length) return;
    view.sources.append(el("h3", { class: "mini", text: t("chat.sources") }),
      el("ol", { class: "source-list" }, citations.map((c, i) => {
        if (c.job) {
          return el("li", {}, el("a", { class: "cite-source", href: jobLink(c), "data-job": c.job,
            "aria-label": citeLabel(c, i + 1), text: `${t("chat.job")} ${c.job} · ${c.heading}` }));
        }
        const button = el("button", { type: "button", class: "link cite-source", "data-page": c.page,
          "aria-label": citeLabel(c, i + 1), text: `${c.library} / ${c.page}` + (c.heading ? ` · ${c.heading}` : "") +
            (c.pages ? ` · ${H.pagesLabel(c.pages)}` : "") });
        button.addEventListener("click", () => openCite(button, c));
        return el("li", {}, button);
      })));
  }

  function related(view, items) {
    view.related.replaceChildren();
    if (!items || !items.length) return;
    view.related.append(el("h3", { class: "mini", text: t("chat.related") }),
      el("ul", { class: "related-list" }, items.map((r) => {
        const button = el("button", { type: "button", class: "link", text: `${r.library} / ${r.page}` + (r.heading ? ` · ${r.heading}` : "") });
        button.addEventListener("click", () => openCite(button, r));
        return el("li", {}, button, " ", el("span", { class: "score", text: H.num(r.score, 2) }));
      })));
  }

  const HOW = { message: "chat.how_message", context: "chat.how_context", model: "chat.how_model" };
  function grounding(view, g) {
    view.grounding.replaceChildren();
    if (!g || !g.query) return;
    view.grounding.append(
      el("span", { text: t("chat.searched") + " " }), el("q", { class: "g-query", text: g.query }),
      g.english ? " " + t("chat.searched_english") + " " : "", g.english ? el("q", { class: "g-english", text: g.english }) : "",
      g.libraries && g.libraries.length ? " · " + t("chat.in_libraries", { names: g.libraries.join(", ") }) : "",
      " · " + t(HOW[g.how] || "chat.how_message"));
  }

  function meta(view, answer) {
    const spec = models.get(answer.model);
    const mode = answer.mode === "extractive" ? t("chat.extractive") : t("chat.generated");
    view.meta.textContent = `${mode} · ${t("chat.model_named", { alias: answer.model })}` +
      (spec ? ` (${spec.provider})` : "");
  }

  // A fallback replaced what the model wrote: said plainly, the generated text one
  // click away (when the stream or the stored turn kept it).
  function notices(view, answer) {
    view.notice.replaceChildren();
    if (answer.fallback) {
      view.notice.append(el("p", { class: "notice", role: "note", text: t("chat.fallback") }),
        answer.generated
          ? el("details", { class: "generated" }, el("summary", { text: t("chat.show_generated") }),
            el("pre", { tabindex: 0 }, el("code", { text: answer.generated })))
          : null);
    } else if (answer.finish_reason === "length") {
      view.notice.append(el("p", { class: "notice", role: "note", text: t("chat.cut") }));
    }
  }

  function finish(view, answer) {
    showHtml(view.answer, answer.html || "", answer.citations || []);
    view.text = answer.answer;
    sources(view, answer.citations || []);
    related(view, answer.related);
    grounding(view, answer.grounding);
    notices(view, answer);
    meta(view, answer);
    view.actions.hidden = false;
    view.item.dataset.done = "true";
  }

  function turn(question) {
    const view = {
      question: question, text: "",
      answer: el("div", { class: "answer md" }),
      notice: el("div", { class: "notices" }),
      sources: el("div", { class: "sources" }),
      related: el("div", { class: "related" }),
      grounding: el("p", { class: "grounding" }),
      meta: el("span", { class: "meta" }),
    };
    const copyButton = el("button", { type: "button", class: "plain small", text: t("chat.copy"),
      onclick: () => H.copy(view.text, copyButton) });
    view.actions = el("div", { class: "actions", hidden: true }, copyButton,
      el("button", { type: "button", class: "plain small", text: t("chat.regenerate"),
        onclick: () => { if (!controller) ask(question); } }),
      view.meta);
    view.item = el("li", { class: "turn" },
      el("div", { class: "q" }, el("span", { class: "sr-only", text: t("chat.you") }), el("p", { class: "you", text: question })),
      el("article", { class: "a", "aria-label": t("chat.answer") },
        view.answer, view.notice, view.sources, view.related, view.grounding, view.actions));
    log.append(view.item);
    $("empty").hidden = true;
    return view;
  }

  // -- asking --------------------------------------------------------------------------

  function streaming(on) {
    send.disabled = on;
    stop.hidden = !on;
  }

  // A new conversation is made as the page's (sessions.create) before its first
  // question, so the sidebar lists it, and not what other clients ask. A server without
  // the method still answers: the conversation just starts with the answer.
  async function pageSession() {
    if (!sessionId()) {
      try {
        setSession((await H.rpc("sessions.create", { door: "page" })).session_id);
      } catch (error) {
        if (error.code !== -32601) throw error;
      }
    }
    return sessionId();
  }

  async function ask(question) {
    const view = turn(question);
    view.item.scrollIntoView({ block: "end" });
    controller = new AbortController();
    streaming(true);
    view.answer.classList.add("streaming");
    const text = document.createTextNode("");
    view.answer.append(el("span", { class: "muted thinking", text: t("chat.answering") }), text);
    const payload = { message: question,
      model: $("model").value || undefined, library: $("library").value || undefined,
      answer: $("mode").value || undefined, surface: "page", room: room || undefined };
    let streamId = null, lastId = null, done = false;
    const events = (resume) => resume
      ? H.stream("/chat/stream/" + encodeURIComponent(streamId), null, controller.signal, lastId)
      : H.stream("/chat/stream", payload, controller.signal);
    try {
      payload.session_id = (await pageSession()) || undefined;
      for (let attempt = 0; !done; attempt++) {
        try {
          for await (const ev of events(attempt > 0)) {
            if (ev.id) lastId = ev.id;
            if (ev.event === "stream") streamId = ev.data.stream_id;
            else if (ev.event === "token") {
              const thinking = view.answer.querySelector(".thinking");
              if (thinking) thinking.remove();
              text.appendData(ev.data.text);
              if (!view.answer.dataset.firstTokenAt) {
                view.answer.dataset.firstTokenAt = String(performance.timeOrigin + performance.now());
              }
            } else if (ev.event === "final") {
              finish(view, ev.data);
              if (ev.data.session_id !== sessionId() || !jobsFeed) followJobs(ev.data.session_id);
              setSession(ev.data.session_id);
              $("status").textContent = t("chat.ready");
              done = true;
            } else if (ev.event === "error") {
              view.notice.replaceChildren(el("p", { class: "error", role: "alert", text: ev.data.message }));
              done = true;
            }
          }
          if (!done) throw new TypeError("the stream ended early");
        } catch (error) {
          // A dropped connection: the answer goes on on the server; take it up again
          // after the last event seen. Anything else (stopped, refused) ends here.
          if (error.name === "AbortError" || error.status || !streamId || attempt >= RESUMES) throw error;
          await new Promise((ok) => setTimeout(ok, 300 * (attempt + 1)));
        }
      }
    } catch (error) {
      const stopped = error.name === "AbortError";
      const thinking = view.answer.querySelector(".thinking");
      if (thinking) thinking.remove();
      view.notice.replaceChildren(stopped
        ? el("p", { class: "muted stopped", text: t("chat.stopped") })
        : el("p", { class: "error", role: "alert", text: error.message }));
    } finally {
      controller = null;
      streaming(false);
      conversations();
    }
  }

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    // A question sent while the page still opens its conversation waits for it: opening
    // would otherwise clear the question's turn and abort its stream.
    if (!opened) { started.then(() => form.requestSubmit()); return; }
    const question = message.value.trim();
    if (!question || controller) return;
    message.value = "";
    ask(question);
  });
  message.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); form.requestSubmit(); }
  });
  stop.addEventListener("click", () => { if (controller) controller.abort(); });

  // -- the conversation's jobs ---------------------------------------------------------
  // A job the agent delegated in this conversation is an item of the log, live from
  // GET /jobs/stream?session=S: its state, its steps as they finish, Confirm/Deny while it
  // waits, the verdict on its criteria once done. A reconnect sends each job whole again:
  // events are kept by seq, so nothing shows twice.
  let jobsFeed = null;
  const jobItems = new Map();  // job id -> {item, events: Map(seq -> event)}
  const VERDICT = { true: "chat.job_ok", false: "chat.job_not_ok", null: "chat.job_unverified" };

  function jobItem(job) {
    let view = jobItems.get(job.id);
    if (!view) {
      view = { events: new Map(), item: el("li", { class: "turn job-item", "data-job": job.id, "aria-live": "polite" }) };
      jobItems.set(job.id, view);
      log.append(view.item);
      $("empty").hidden = true;
    }
    return view;
  }

  function showJob(job, events) {
    const view = jobItem(job);
    for (const e of events) view.events.set(e.seq, e);
    // A snapshot older than the one shown (Confirm's reply, arriving after the stream
    // already showed the job run and finish) must not put the item back in time.
    if (view.updatedAt && job.updated_at < view.updatedAt) return;
    view.updatedAt = job.updated_at;
    const steps = [...view.events.values()].sort((a, b) => a.seq - b.seq)
      .filter((e) => e.kind === "step_finished" || e.kind === "step_failed")
      .map((e) => el("li", { class: "job-step " + (e.payload.ok ? "ok" : "bad"), "data-step": e.payload.step },
        el("code", { text: e.payload.step }), " ",
        el("span", { text: e.payload.ok ? t("chat.job_step_ok") : t("chat.job_step_bad") })));
    const waiting = job.state === "waiting_for_confirmation";
    const decide = (action) => el("button", { type: "button", class: action === "deny" ? "plain small" : "small",
      "data-action": action, text: t("jobs." + action),
      onclick: () => H.guard(view.item, t("jobs." + action), async () => {
        showJob(await H.rpc("jobs." + action, { id: job.id, by: "web" }), []);
      }) });
    const result = job.result || null;
    view.item.dataset.state = job.state;
    view.item.replaceChildren(el("article", { class: "a job", "aria-label": t("chat.job") },
      el("p", { class: "job-head" }, el("span", { class: "mini", text: t("chat.job") }), " ",
        el("span", { class: `state state-${job.state}`, "data-state": job.state, text: t("jobs.state." + job.state, null, job.state) }), " ",
        el("a", { href: "/jobs?job=" + encodeURIComponent(job.id), text: job.prompt })),
      steps.length ? el("ol", { class: "job-steps" }, steps) : null,
      result && "ok" in result ? el("p", { class: "job-verdict", "data-ok": String(result.ok),
        text: t(VERDICT[result.ok]) + (result.unverified && result.unverified.length ? " " + result.unverified.join("; ") : "") }) : null,
      result && result.summary ? el("p", { class: "job-summary", text: result.summary }) : null,
      result && result.error ? el("p", { class: "error", text: result.error }) : null,
      waiting ? el("div", { class: "actions" }, decide("confirm"), decide("deny")) : null));
  }

  // -- the room's cards ----------------------------------------------------------------
  // Cards raised in the conversation's room from the moment the page opened, live from
  // GET /interventions/stream?room=R (after the room's latest card then): each an item of
  // the log, with its buttons; the Interventions pane keeps the room's whole history.
  const given = new URLSearchParams(location.search).get("room");
  const room = (given || document.querySelector(".talk").dataset.room || "").trim();
  const cardView = H.cards(log, () => "web", (node) => {
    log.append(el("li", { class: "turn card-item", "aria-live": "polite" }, node));
    $("empty").hidden = true;
    node.scrollIntoView({ block: "nearest" });
  });

  // Voice: a critical card's audio plays once (the ids heard are kept), after the first
  // click or key press on the page, never while this browser's person muted it.
  const MUTED = "heron.voice.muted", HEARD = "heron.voice.heard";
  const pending = [];
  let gestured = false;
  const muted = () => localStorage.getItem(MUTED) === "1";
  const heard = () => JSON.parse(localStorage.getItem(HEARD) || "[]");

  function play(node) {
    const audio = node.querySelector("audio");
    node.dataset.voice = "playing";
    audio.play().then(() => { node.dataset.voice = "played"; }, () => { node.dataset.voice = "blocked"; });
  }

  function speak(card, node) {
    if (card.severity !== "critical" || !node.querySelector("audio") || card.resolved_at) return;
    if (muted()) { node.dataset.voice = "muted"; return; }
    const ids = heard();
    if (ids.includes(card.id)) return;
    localStorage.setItem(HEARD, JSON.stringify([...ids, card.id].slice(-200)));
    if (gestured) play(node); else { node.dataset.voice = "waiting"; pending.push(node); }
  }

  function gesture() {
    if (gestured) return;
    gestured = true;
    for (const node of pending.splice(0)) if (!muted()) play(node);
  }
  document.addEventListener("pointerdown", gesture, { capture: true });
  document.addEventListener("keydown", gesture, { capture: true });

  function showVoice() {
    const button = $("voice");
    button.setAttribute("aria-pressed", String(muted()));
    button.textContent = t(muted() ? "chat.voice_unmute" : "chat.voice_mute");
  }
  $("voice").addEventListener("click", () => {
    localStorage.setItem(MUTED, muted() ? "0" : "1");
    if (muted()) for (const audio of log.querySelectorAll("audio")) audio.pause();
    showVoice();
  });
  showVoice();

  async function followCards() {
    if (!room) return;
    // Signed in with a key of one's own: in the room's roster (a channel set for one is kept).
    const person = document.querySelector(".talk").dataset.person;
    if (person) await H.rpc("people.join", { room: room, person: person }).catch(() => null);
    const [latest] = await H.rpc("interventions.list", { room: room, limit: 1 }).catch(() => []);
    const after = latest ? latest.id : 0;
    H.live(`/interventions/stream?room=${encodeURIComponent(room)}&after=${after}`, (ev) => {
      if (ev.event === "outcome" || ev.event === "resolved") { cardView.change(ev.event, ev.data); return; }
      if (ev.event !== "intervention") return;
      speak(ev.data, cardView.render(ev.data));
    }, (state) => { document.querySelector(".talk").dataset.cards = state; });
  }

  function followJobs(id) {
    if (jobsFeed) jobsFeed.close();
    jobsFeed = null;
    jobItems.clear();
    if (!id) return;
    jobsFeed = H.live("/jobs/stream?session=" + encodeURIComponent(id), (frame) => {
      if (frame.event === "job") showJob(frame.data.job, frame.data.events || []);
    });
  }

  // -- conversations -------------------------------------------------------------------

  function title(text) {
    $("conversation-h").textContent = text || t("chat.new_title");
    document.title = (text || t("pane.chat")) + " · Heron";
  }

  async function open(id, name) {
    if (controller) controller.abort();
    H.closePassage();
    log.replaceChildren();
    setSession(id);
    title(name);
    $("empty").hidden = Boolean(id);
    mark();
    if (!id) { followJobs(null); message.focus(); return; }
    await H.guard(log, t("chat.history"), async () => {
      for (const done of await H.rpc("agent.history", { session_id: id })) {
        finish(turn(done.message), done.answer);
      }
    });
    followJobs(id);
  }

  function mark() {
    for (const a of document.querySelectorAll("#conv-list a.conv")) {
      if (a.dataset.id === sessionId()) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
    }
  }

  function renaming(li, s) {
    const input = el("input", { class: "rename-input", value: s.title, "aria-label": t("chat.rename_to"), maxlength: 200 });
    const save = async () => {
      await H.guard(li, t("chat.rename"), async () => {
        await H.rpc("sessions.rename", { session_id: s.id, title: input.value });
        await conversations();
      });
    };
    input.addEventListener("keydown", (e) => {
      if (e.key === "Enter") { e.preventDefault(); save(); }
      if (e.key === "Escape") { e.stopPropagation(); conversations(); }
    });
    li.replaceChildren(input, el("button", { type: "button", class: "plain small", text: t("chat.save"), onclick: save }));
    input.focus();
    input.select();
  }

  function deleting(li, s) {
    const yes = el("button", { type: "button", class: "danger small", text: t("chat.delete_confirm"),
      onclick: () => H.guard(li, t("chat.delete"), async () => {
        await H.rpc("sessions.delete", { session_id: s.id });
        if (s.id === sessionId()) await open(null);
        await conversations();
      }) });
    li.replaceChildren(el("span", { class: "muted", text: t("chat.delete_ask", { title: s.title }) }), yes,
      el("button", { type: "button", class: "plain small", text: t("chat.cancel"), onclick: () => conversations() }));
    yes.focus();
  }

  async function conversations() {
    const list = $("conv-list");
    await H.guard(list, t("chat.conversations"), async () => {
      const found = await H.rpc("sessions.list", { limit: 100, door: "page" });
      if (!found.length) {
        list.replaceChildren(el("li", { class: "empty", text: t("chat.no_conversations") }));
        return;
      }
      list.replaceChildren(...found.map((s) => {
        const name = s.title || t("chat.untitled");
        const li = el("li", { class: "conv-item" });
        const link = el("a", { class: "conv", href: "/?session=" + encodeURIComponent(s.id), "data-id": s.id, text: name,
          title: name, onclick: (e) => { e.preventDefault(); open(s.id, name); } });
        li.append(link,
          el("button", { type: "button", class: "icon", "aria-label": t("chat.rename_named", { title: name }), title: t("chat.rename"),
            text: "✎", onclick: () => renaming(li, s) }),
          el("button", { type: "button", class: "icon", "aria-label": t("chat.delete_named", { title: name }), title: t("chat.delete"),
            text: "×", onclick: () => deleting(li, s) }));
        if (s.id === sessionId()) title(name);
        return li;
      }));
      mark();
    });
  }

  $("new").addEventListener("click", () => open(null));

  // -- pickers -------------------------------------------------------------------------

  async function options() {
    const [listed, libs] = await Promise.all([
      H.rpc("models.list").catch(() => []), H.rpc("library.list").catch(() => [])]);
    for (const m of listed) {
      models.set(m.alias, m);
      $("model").append(el("option", { value: m.alias, text: t("chat.model_option", { alias: m.alias, provider: m.provider }) }));
      if (m.default) $("model").options[0].textContent = t("chat.model_default_named", { alias: m.alias, provider: m.provider });
    }
    for (const lib of libs) $("library").append(el("option", { value: lib.name, text: lib.name }));
    document.body.dataset.readyAt = String(performance.now());  // the pickers are filled
  }

  // A link's conversation opens as asked; the one this browser remembers only when it is
  // in the sidebar: it may be another person's, who used this browser before.
  const linked = new URLSearchParams(location.search).get("session");
  followCards();
  let opened = false;
  const started = Promise.all([options(), conversations()]).then(() => {
    const given = linked || sessionId();
    const known = given && $("conv-list").querySelector(`a[data-id="${CSS.escape(given)}"]`);
    return open(linked || known ? given : null, known ? known.textContent : null);
  }).finally(() => { opened = true; });
})();
