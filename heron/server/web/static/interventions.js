// Interventions: live cards for a room from GET /interventions/stream?room=R, resumed
// after a drop from the last card seen; accept or dismiss with interventions.outcome; a
// card's own buttons (Confirm, Ping) through interventions.act, which runs the stored
// action as the person named in "by"; a card whose condition ended, or that someone
// decided, shows so and offers nothing more.
"use strict";
(function () {
  const H = window.Heron, { $, t, el } = H;
  const cards = $("cards");
  const view = H.cards(cards, () => $("by").value || "web", (node) => cards.prepend(node));
  let watch = null;

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
      if (ev.event === "outcome" || ev.event === "resolved") { view.change(ev.event, ev.data); return; }
      if (ev.event !== "intervention") return;
      const placeholder = cards.querySelector(".empty");
      if (placeholder) placeholder.remove();
      cards.dataset.received = String(Number(cards.dataset.received) + 1);  // counts replays too
      view.render(ev.data);
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
