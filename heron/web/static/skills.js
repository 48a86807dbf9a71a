// Skills: directories in precedence order, diagnostics, shadowed and orphans, usage, search.
"use strict";
(function () {
  const H = window.Heron, { $ } = H;

  function list(title, items, text) {
    return [H.el("h3", { text: `${title} (${items.length})` }),
      items.length ? H.el("ul", {}, items.map((x) => H.el("li", { text: text(x) }))) : H.el("p", { class: "muted", text: "none" })];
  }

  async function load() {
    await H.guard($("dirs"), "Skill status", async () => {
      const s = await H.rpc("skills.status");
      $("dirs").replaceChildren(H.el("ol", {}, s.dirs.map((d) =>
        H.el("li", {}, H.el("code", { text: d.path }), ` (${d.source}) `,
          d.exists ? `files: ${d.files}` : H.el("span", { class: "bad", text: "missing" })))),
      H.el("p", { class: "muted", text: `${s.skills} skills from ${s.files} files; ${s.index.records} indexed, ${s.index.current} current.` }));
      $("diagnostics").replaceChildren(
        ...list("Parse diagnostics", s.recovered, (r) => `${r.name} (${r.path}): ${r.diagnostics.join("; ")}`),
        ...list("Failed to parse", s.failed, (f) => `${f.path}: ${f.reason}`),
        ...list("Shadowed duplicates", s.shadowed, (x) => `${x.name}: ${x.shadowed} is shadowed by ${x.kept}`),
        ...list("Orphans in the index", s.index.orphans, (o) => `${o.name} (${o.path})`),
        ...list("Not indexed", s.index.not_indexed, (n) => n),
        ...list("Skipped directories", s.skipped_dirs, (d) => `${d.path}: ${d.reason}`));
    });
    await H.guard($("usage"), "Skill usage", async () => {
      const stats = await H.rpc("skills.usage");
      $("usage").replaceChildren(H.table(["Query kind", "Queries", "Reported", "Hit rate", "Top-1 rate"],
        stats.map((k) => [k.kind, H.el("td", { class: "num", text: k.queries }), H.el("td", { class: "num", text: k.reported }),
          H.el("td", { class: "num", text: k.hit_rate === null ? "–" : (100 * k.hit_rate).toFixed(0) + " %" }),
          H.el("td", { class: "num", text: k.top_rate === null ? "–" : (100 * k.top_rate).toFixed(0) + " %" })])));
    });
  }

  $("search").addEventListener("submit", async (e) => {
    e.preventDefault();
    await H.guard($("results"), "Skill search", async () => {
      const hits = await H.rpc("skills.search", { query: $("q").value, top_k: 5 });
      if (!hits.length) { H.note($("results"), "No skill fits."); return; }
      $("results").replaceChildren(H.el("ol", { class: "results" }, hits.map((h) => H.el("li", {},
        H.el("strong", { text: h.name }), H.el("p", { text: h.description }),
        H.el("div", { class: "scores", text: `score ${H.num(h.score)} · dense ${H.num(h.dense_score)} · lexical ${H.num(h.lexical_score)}` })))));
    });
  });

  load();
})();
