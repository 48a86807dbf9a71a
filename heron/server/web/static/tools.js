// Tools: every tool with its source, safety and provider-safe name; routing explained.
"use strict";
(function () {
  const H = window.Heron, { $, t, el } = H;

  async function load() {
    await H.guard($("tools"), t("tools.list"), async () => {
      const [listed, names] = await Promise.all([H.rpc("tools.list"),
        H.rpc("tools.names", { profile: $("profile").value }).catch(() => [])]);
      const encoded = new Map(names.map((n) => [n.name, n.encoded]));
      if (listed.servers.length) {
        $("servers").replaceChildren(el("h3", { text: t("tools.servers") }), H.table(
          [t("tools.col.server"), t("tools.col.transport"), t("tools.col.tools"), t("tools.col.error")],
          listed.servers.map((s) => [s.name, s.transport, String(s.tools), s.error || "–"]), t("tools.servers")));
      }
      if (!listed.tools.length) { H.empty($("tools"), t("tools.none")); return; }
      $("tools").replaceChildren(H.table([t("tools.col.tool"), t("tools.col.source"), t("tools.col.safety"),
        t("tools.col.name_for", { provider: $("profile").value }), t("tools.col.description")],
        listed.tools.map((x) => [el("code", { text: x.name }), x.source, x.safety,
          el("code", { text: encoded.get(x.name) || "–" }), el("td", { class: "wrap", text: x.description })]), t("tools.list")));
    });
  }

  function rows(route) {
    return [...route.results, ...route.dropped].map((r) => [
      el("td", { class: "num", text: r.rank }), el("code", { text: r.name }), el("code", { text: r.encoded }),
      el("td", { class: "num", text: H.num(r.score) }), el("td", { class: "num", text: H.num(r.dense_score) }),
      el("td", { class: "num", text: H.num(r.lexical_score) }),
      el("span", { class: r.kept ? "ok" : "muted", "data-kept": String(r.kept), text: r.kept ? t("tools.offered") : t("tools.not_offered") }),
      el("td", { class: "wrap", text: r.reason })]);
  }

  $("explain").addEventListener("submit", async (e) => {
    e.preventDefault();
    await H.guard($("route"), t("tools.explain"), async () => {
      const route = await H.rpc("tools.route", { query: $("q").value, profile: $("profile").value });
      $("route").replaceChildren(
        el("p", { class: "muted", text: t("tools.route_summary", { mode: route.mode, provider: route.profile, n: route.results.length }) }),
        ...route.warnings.map((w) => el("p", { class: "note", text: w })),
        H.table([t("tools.col.rank"), t("tools.col.tool"), t("tools.col.provider_name"), t("tools.col.score"), t("tools.col.dense"),
          t("tools.col.lexical"), t("tools.col.offered"), t("tools.col.why")], rows(route), t("tools.explain")));
    });
  });
  $("profile").addEventListener("change", load);

  load();
})();
