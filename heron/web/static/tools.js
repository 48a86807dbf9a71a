// Tools: every tool with its source, safety and provider-safe name; routing explained.
"use strict";
(function () {
  const H = window.Heron, { $ } = H;

  async function load() {
    await H.guard($("tools"), "The tool list", async () => {
      const [listed, names] = await Promise.all([H.rpc("tools.list"),
        H.rpc("tools.names", { profile: $("profile").value }).catch(() => [])]);
      const encoded = new Map(names.map((n) => [n.name, n.encoded]));
      if (listed.servers.length) {
        $("servers").replaceChildren(H.el("h3", { text: "MCP servers" }), H.table(["Server", "Transport", "Tools", "Error"],
          listed.servers.map((s) => [s.name, s.transport, String(s.tools), s.error || "–"])));
      }
      $("tools").replaceChildren(H.table(["Tool", "Source", "Safety", `Name for ${$("profile").value}`, "Description"],
        listed.tools.map((t) => [H.el("code", { text: t.name }), t.source, t.safety,
          H.el("code", { text: encoded.get(t.name) || "–" }), t.description])));
    });
  }

  function rows(route) {
    return [...route.results, ...route.dropped].map((r) => [
      H.el("td", { class: "num", text: r.rank }), H.el("code", { text: r.name }), H.el("code", { text: r.encoded }),
      H.el("td", { class: "num", text: H.num(r.score) }), H.el("td", { class: "num", text: H.num(r.dense_score) }),
      H.el("td", { class: "num", text: H.num(r.lexical_score) }),
      H.el("span", { class: r.kept ? "ok" : "bad", text: r.kept ? "offered" : "not offered" }), r.reason]);
  }

  $("explain").addEventListener("submit", async (e) => {
    e.preventDefault();
    await H.guard($("route"), "Routing explained", async () => {
      const route = await H.rpc("tools.route", { query: $("q").value, profile: $("profile").value });
      $("route").replaceChildren(
        H.el("p", { class: "muted", text: `mode ${route.mode}, provider ${route.profile}: ${route.results.length} offered` }),
        ...route.warnings.map((w) => H.el("p", { class: "note", text: w })),
        H.table(["Rank", "Tool", "Provider name", "Score", "Dense", "Lexical", "Offered", "Why"], rows(route)));
    });
  });
  $("profile").addEventListener("change", load);

  load();
})();
