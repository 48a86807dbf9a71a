// Chat: streamed answers from POST /chat/stream, citations that open their passage,
// the conversation kept per session (session_id in this tab's sessionStorage).
"use strict";
(function () {
  const H = window.Heron, { $ } = H;
  const log = $("log"), form = $("ask"), message = $("message"), stop = $("stop"), send = $("send");
  const KEY = "heron.session";
  let controller = null;

  function sessionId() { return sessionStorage.getItem(KEY); }
  function setSession(id) {
    if (id) sessionStorage.setItem(KEY, id); else sessionStorage.removeItem(KEY);
    $("session").textContent = id ? "Session " + id.slice(0, 8) : "New conversation";
  }

  function markers(container, citations) {
    container.replaceChildren();
    if (!citations.length) return;
    container.append("Sources: ");
    citations.forEach((c, i) => {
      const label = `Source ${i + 1}: ${c.library}, ${c.page}` + (c.heading ? `, ${c.heading}` : "") +
        `, lines ${c.line_range[0]}–${c.line_range[1]}`;
      container.append(H.el("button", {
        type: "button", class: "cite", "aria-label": label, title: label,
        "data-page": c.page, text: `[${i + 1}]`, onclick: () => H.showPassage(c),
      }));
    });
  }

  function meta(container, answer) {
    const mode = answer.mode === "extractive" ? "extractive" : "generated";
    container.textContent = `${mode} · model ${answer.model}` +
      (answer.fallback ? ` · fallback: ${answer.fallback}` : "") +
      (answer.finish_reason === "length" ? " · cut at the token limit" : "");
  }

  function turn(question) {
    const answer = H.el("div", { class: "answer" });
    const sources = H.el("p", { class: "sources" });
    const info = H.el("p", { class: "meta" });
    const item = H.el("li", { class: "turn" },
      H.el("p", { class: "you" }, "You: ", H.el("span", { text: question })),
      H.el("p", { class: "sr-only", text: "Heron:" }), answer, sources, info);
    log.append(item);
    return { item, answer, sources, info };
  }

  async function history() {
    const id = sessionId();
    setSession(id);
    if (!id) return;
    await H.guard(log, "Conversation history", async () => {
      for (const t of await H.rpc("agent.history", { session_id: id })) {
        const view = turn(t.message);
        view.answer.textContent = t.answer.answer;
        markers(view.sources, t.answer.citations);
        meta(view.info, t.answer);
      }
    });
  }

  async function ask(question) {
    const view = turn(question);
    controller = new AbortController();
    send.disabled = true; stop.disabled = false;
    view.info.textContent = "Answering…";
    const payload = { message: question, session_id: sessionId() || undefined,
      model: $("model").value || undefined, library: $("library").value || undefined,
      answer: $("mode").value || undefined };
    try {
      for await (const ev of H.stream("/chat/stream", payload, controller.signal)) {
        if (ev.event === "token") {
          view.answer.append(ev.data.text);
          if (!view.answer.dataset.firstTokenAt) {
            view.answer.dataset.firstTokenAt = String(performance.timeOrigin + performance.now());
          }
        } else if (ev.event === "citations") {
          markers(view.sources, ev.data.citations);
        } else if (ev.event === "final") {
          view.answer.textContent = ev.data.answer;
          markers(view.sources, ev.data.citations);
          meta(view.info, ev.data);
          setSession(ev.data.session_id);
          view.item.dataset.done = "true";
        } else if (ev.event === "error") {
          view.info.replaceChildren(H.el("span", { class: "error", role: "alert", text: ev.data.message }));
        }
      }
    } catch (error) {
      const text = error.name === "AbortError" ? "Stopped." : error.message;
      view.info.replaceChildren(H.el("span", { class: error.name === "AbortError" ? "muted" : "error", text: text }));
    } finally {
      controller = null;
      send.disabled = false; stop.disabled = true;
    }
  }

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const question = message.value.trim();
    if (!question || controller) return;
    message.value = "";
    ask(question);
  });
  message.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); form.requestSubmit(); }
  });
  stop.addEventListener("click", () => { if (controller) controller.abort(); });
  $("new").addEventListener("click", () => { setSession(null); log.replaceChildren(); message.focus(); });

  async function options() {
    const [models, libs] = await Promise.all([
      fetch("/v1/models", { credentials: "same-origin" }).then((r) => r.json()).catch(() => null),
      H.rpc("library.list").catch(() => [])]);
    for (const m of (models && models.data) || []) $("model").append(H.el("option", { value: m.id, text: m.id }));
    for (const lib of libs) $("library").append(H.el("option", { value: lib.name, text: lib.name }));
    document.body.dataset.readyAt = String(performance.now());  // the pickers are filled
  }
  options();
  history();
})();
