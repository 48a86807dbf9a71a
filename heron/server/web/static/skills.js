// Skills: directories in precedence order, diagnostics, shadowed and orphans, usage, search.
"use strict";
(function () {
  const H = window.Heron, { $, t, el } = H;
  const NOT_FOUND = -32004;

  function list(title, items, text) {
    return [el("h3", { text: t(title, { n: items.length }) }),
      items.length ? el("ul", {}, items.map((x) => el("li", { text: text(x) }))) : el("p", { class: "muted", text: t("skills.none_listed") })];
  }

  async function load() {
    await H.guard($("dirs"), t("skills.dirs"), async () => {
      const s = await H.rpc("skills.status");
      $("dirs").replaceChildren(el("ol", { class: "dirs" }, s.dirs.map((d) =>
        el("li", {}, el("code", { text: d.path }), ` (${d.source}) `,
          d.exists ? t("skills.files", { n: d.files }) : el("span", { class: "muted", text: t("skills.missing") })))),
      s.skills
        ? el("p", { class: "muted", text: t("skills.summary", { skills: s.skills, files: s.files, records: s.index.records, current: s.index.current }) })
        : el("div", { class: "empty" }, el("p", { text: t("skills.none") }), el("p", { class: "muted", text: t("skills.none_hint") })));
      $("diagnostics").replaceChildren(
        ...list("skills.recovered", s.recovered, (r) => `${r.name} (${r.path}): ${r.diagnostics.join("; ")}`),
        ...list("skills.failed", s.failed, (f) => `${f.path}: ${f.reason}`),
        ...list("skills.shadowed", s.shadowed, (x) => t("skills.shadowed_by", { name: x.name, shadowed: x.shadowed, kept: x.kept })),
        ...list("skills.orphans", s.index.orphans, (o) => `${o.name} (${o.path})`),
        ...list("skills.not_indexed", s.index.not_indexed, (n) => n),
        ...list("skills.skipped", s.skipped_dirs, (d) => `${d.path}: ${d.reason}`));
    });
    await H.guard($("usage"), t("skills.usage"), async () => {
      const stats = await H.rpc("skills.usage");
      if (!stats.length) { H.empty($("usage"), t("skills.no_usage")); return; }
      $("usage").replaceChildren(H.table([t("skills.col.kind"), t("skills.col.queries"), t("skills.col.reported"), t("skills.col.hit"), t("skills.col.top")],
        stats.map((k) => [k.kind, el("td", { class: "num", text: k.queries }), el("td", { class: "num", text: k.reported }),
          el("td", { class: "num", text: k.hit_rate === null ? "–" : (100 * k.hit_rate).toFixed(0) + " %" }),
          el("td", { class: "num", text: k.top_rate === null ? "–" : (100 * k.top_rate).toFixed(0) + " %" })]), t("skills.usage")));
    });
  }

  $("search").addEventListener("submit", async (e) => {
    e.preventDefault();
    const out = $("results");
    try {
      const hits = await H.rpc("skills.search", { query: $("q").value, top_k: 5 });
      if (!hits.length) { H.empty(out, t("skills.no_fit")); return; }
      out.replaceChildren(el("ol", { class: "results" }, hits.map((h) => el("li", {},
        el("strong", { text: h.name }), el("p", { text: h.description }),
        el("div", { class: "scores", text: t("skills.scores", { score: H.num(h.score), dense: H.num(h.dense_score), lexical: H.num(h.lexical_score) }) })))));
    } catch (error) {
      // Nothing indexed yet is a state to explain, not an error to show.
      if (error.code === NOT_FOUND) H.empty(out, t("skills.none"), t("skills.none_hint"));
      else H.fail(out, error, t("skills.search"));
    }
  });

  load();
})();
