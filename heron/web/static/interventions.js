// Interventions: live cards for a room from GET /interventions/stream?room=R, resumed
// after a drop from the last card seen; accept or dismiss with interventions.outcome; a
// card's own buttons (Confirm, Ping) through interventions.act, which runs the stored
// action as the person named in "by"; a card whose condition ended, or that someone
// decided, shows so and offers nothing more.
"use strict";
(function () {
  const H = window.Heron, { $, t, el } = H;
  const cards = $("cards");
  const ICONS = { info: "ℹ", warning: "⚠", critical: "✖" };
  let watch = null;

  function sameOrigin(url) {
    try { return new URL(url, location.href).origin === location.origin; } catch (e) { return false; }
  }

  function byId(id) { return cards.querySelector(`[data-id="${CSS.escape(String(id))}"]`); }

  // Ended one way or another: the actions go, the card says why.
  function settle(node, text, outcome) {
    node.classList.add("done");
    if (outcome) node.dataset.outcome = outcome;
    node.dataset.state = outcome ? "decided" : "resolved";
    const actions = node.querySelector(".card-actions");
    if (actions) actions.remove();
    node.querySelector(".card-out").textContent = text;
  }

  function decided(node, value, by) {
    settle(node, t("interventions.decided." + value, { by: by || t("interventions.someone") }), value);
  }

  async function outcome(card, node, value) {
    const by = $("by").value || "web";
    await H.guard(node.querySelector(".card-out"), t("interventions.outcome"), async () => {
      await H.rpc("interventions.outcome", { id: card.id, outcome: value, by: by });
      decided(node, value, by);
    });
  }

  function render(card) {
    const severity = ICONS[card.severity] ? card.severity : "info";
    const out = el("p", { class: "card-out", role: "status" });
    const node = el("article", { class: `card sev-${severity}`, "data-id": card.id, "data-state": "active",
      "aria-labelledby": `card-${card.id}` },
      el("h2", { id: `card-${card.id}`, class: "card-title" },
        el("span", { class: "sev-icon", "aria-hidden": "true", text: ICONS[severity] }),
        el("span", { class: "sev-name", text: t("interventions.severity." + severity) }),
        el("span", { class: "card-kind", text: card.kind })),
      el("p", { class: "card-text", text: card.text }),
      card.spoken && card.spoken !== card.text ? el("p", { class: "muted", text: t("interventions.spoken", { text: card.spoken }) }) : null,
      el("p", { class: "meta", text: `${card.room} · ${H.when(card.created_at)}` +
        (card.seen_before ? " · " + t("interventions.seen_before", { n: card.seen_before }) : "") }),
      card.audio_url && sameOrigin(card.audio_url)
        ? el("audio", { controls: true, preload: "none", src: new URL(card.audio_url, location.href).href, "aria-label": t("interventions.audio") }) : null,
      el("div", { class: "row card-actions" },
        el("button", { type: "button", text: t("interventions.accept"), onclick: () => outcome(card, node, "accept") }),
        el("button", { type: "button", class: "plain", text: t("interventions.dismiss"), onclick: () => outcome(card, node, "dismiss") }),
        (card.actions || []).map((a, i) => el("button", { type: "button", class: "plain", text: a.label,
          onclick: () => H.guard(out, a.label, async () => {
            const done = await H.rpc("interventions.act", { id: card.id, action: i, by: $("by").value || "web" });
            const now = done.intervention;
            if (now.resolved_at) settle(node, t("interventions.action_done", { label: a.label }));
            else if (now.outcome) decided(node, now.outcome, now.outcome_by);
            else out.textContent = t("interventions.action_done", { label: a.label });
          }) }))),
      out);
    const old = byId(card.id);
    if (old) old.replaceWith(node); else cards.prepend(node);
    if (card.outcome) decided(node, card.outcome, card.outcome_by);
    else if (card.resolved_at) settle(node, t("interventions.resolved"));
  }

  // Another tab or client decided, or the condition went away: the card says so.
  function change(event, data) {
    const node = byId(data.id);
    if (!node) return;
    if (event === "outcome" && data.outcome) decided(node, data.outcome, data.outcome_by);
    if (event === "resolved" && !node.dataset.outcome) settle(node, t("interventions.resolved"));
  }

  async function start(room) {
    if (watch) watch.close();
    cards.replaceChildren();
    cards.dataset.received = "0";
    const known = await H.methods().catch(() => new Set());
    if (!known.has("interventions.outcome")) {
      H.note(cards, t("error.absent", { what: t("pane.interventions") }));
      $("watching").textContent = "";
      return;
    }
    H.empty(cards, t("interventions.none"), t("interventions.none_hint"));
    watch = H.live(`/interventions/stream?room=${encodeURIComponent(room)}`, (ev) => {
      if (ev.event === "outcome" || ev.event === "resolved") { change(ev.event, ev.data); return; }
      if (ev.event !== "intervention") return;
      const placeholder = cards.querySelector(".empty");
      if (placeholder) placeholder.remove();
      cards.dataset.received = String(Number(cards.dataset.received) + 1);  // counts replays too
      render(ev.data);
    }, (state, error) => {
      $("watching").dataset.state = state;
      if (state === "failed") { H.fail(cards, error, t("pane.interventions")); $("watching").textContent = ""; return; }
      $("watching").textContent = t(state === "open" ? "interventions.watching" : "interventions.reconnecting", { room: room });
    });
  }

  $("room-form").addEventListener("submit", (e) => { e.preventDefault(); start($("room").value.trim()); });
  const given = new URLSearchParams(location.search).get("room");
  if (given) $("room").value = given;
  start($("room").value.trim());
})();
