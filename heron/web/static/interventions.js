// Interventions: live cards for a room from GET /interventions/stream?room=R; accept or
// dismiss with interventions.outcome; play a card's audio when it has some.
"use strict";
(function () {
  const H = window.Heron, { $ } = H;
  const cards = $("cards");
  let watch = null;

  function sameOrigin(url) {
    try { return new URL(url, location.href).origin === location.origin; } catch (e) { return false; }
  }

  function decided(node, value, by) {
    node.classList.add("done");
    node.dataset.outcome = value;
    node.querySelector(".card-out").textContent = `${value} by ${by}`;
    for (const b of node.querySelectorAll("button")) b.disabled = true;
  }

  function byId(id) { return cards.querySelector(`[data-id="${CSS.escape(String(id))}"]`); }

  async function outcome(card, node, value) {
    const by = $("by").value || "web";
    await H.guard(node.querySelector(".card-out"), "Recording outcomes", async () => {
      await H.rpc("interventions.outcome", { id: card.id, outcome: value, by: by });
      decided(node, value, by);
    });
  }

  function render(card) {
    const old = byId(card.id);
    const node = H.el("article", { class: `card ${card.severity || ""}`, "data-id": card.id,
      "aria-labelledby": `card-${card.id}` },
      H.el("h2", { id: `card-${card.id}`, text: `${card.kind} · ${card.severity}` }),
      H.el("p", { class: "card-text", text: card.text }),
      card.spoken && card.spoken !== card.text ? H.el("p", { class: "muted", text: "Spoken: " + card.spoken }) : null,
      H.el("p", { class: "meta", text: `${card.room} · ${typeof card.created_at === "number" ? H.when(card.created_at) : card.created_at}` +
        (card.seen_before ? " · seen before" : "") }),
      card.audio_url && sameOrigin(card.audio_url)
        ? H.el("audio", { controls: true, preload: "none", src: new URL(card.audio_url, location.href).href, "aria-label": "Spoken card" }) : null,
      H.el("div", { class: "row" },
        H.el("button", { type: "button", text: "Accept", onclick: () => outcome(card, node, "accept") }),
        H.el("button", { type: "button", class: "plain", text: "Dismiss", onclick: () => outcome(card, node, "dismiss") }),
        (card.actions || []).map((a) => H.el("button", { type: "button", class: "plain", text: a.label,
          onclick: () => H.guard(node.querySelector(".card-out"), a.label, async () => {
            await H.rpc(a.method, a.params || {});
            node.querySelector(".card-out").textContent = `${a.label}: done`;
          }) }))),
      H.el("p", { class: "card-out", role: "status" }));
    if (old) old.replaceWith(node); else cards.prepend(node);
    if (card.outcome) decided(node, card.outcome, card.outcome_by || "someone");
  }

  // Another tab or client decided, or the condition went away: the card says so.
  function change(event, data) {
    const node = byId(data.id);
    if (!node) return;
    if (event === "outcome" && data.outcome) decided(node, data.outcome, data.outcome_by || "someone");
    if (event === "resolved") {
      node.classList.add("done");
      node.querySelector(".card-out").textContent = "resolved";
    }
  }

  async function start(room) {
    if (watch) watch.abort();
    cards.replaceChildren();
    const known = await H.methods().catch(() => new Set());
    if (!known.has("interventions.outcome")) {
      H.note(cards, "Interventions are not available on this server (its API is absent).");
      $("watching").textContent = "";
      return;
    }
    watch = new AbortController();
    $("watching").textContent = `Watching room ${room}`;
    try {
      for await (const ev of H.stream(`/interventions/stream?room=${encodeURIComponent(room)}`, null, watch.signal)) {
        if (ev.event === "outcome" || ev.event === "resolved") change(ev.event, ev.data);
        else if (ev.data && ev.data.id !== undefined && ev.data.text !== undefined) render(ev.data);
      }
      $("watching").textContent = `Stream of room ${room} ended`;
    } catch (error) {
      if (error.name !== "AbortError") H.fail(cards, error, "The intervention stream");
    }
  }

  $("room-form").addEventListener("submit", (e) => { e.preventDefault(); start($("room").value.trim()); });
  const given = new URLSearchParams(location.search).get("room");
  if (given) $("room").value = given;
  start($("room").value.trim());
})();
