// Libraries: status, pages, add, re-index with live progress, search with scores.
"use strict";
(function () {
  const H = window.Heron, { $, t, el } = H;

  async function load() {
    await H.guard($("libs"), t("libraries.list"), async () => {
      const statuses = await H.rpc("library.status");
      if (!statuses.length) { H.empty($("libs"), t("libraries.none"), t("libraries.none_hint")); return; }
      $("libs").replaceChildren(H.table(
        [t("libraries.col.library"), t("libraries.col.kind"), t("libraries.col.source"), t("libraries.col.pages"),
          t("libraries.col.chunks"), t("libraries.col.synced"), t("libraries.col.error"), t("libraries.col.actions")],
        statuses.map((s) => [
          el("th", { scope: "row", text: s.name }), s.kind, el("td", { class: "wrap" }, el("code", { text: s.source })),
          el("td", { class: "num", text: s.pages }), el("td", { class: "num", text: s.chunks }),
          H.when(s.last_sync),
          s.last_error ? el("span", { class: "bad", text: s.last_error }) : "–",
          el("span", { class: "row tight" },
            el("button", { type: "button", class: "small", text: t("libraries.reindex"), "aria-label": t("libraries.reindex_named", { name: s.name }),
              onclick: () => reindex(s.name) }),
            el("button", { type: "button", class: "plain small", text: t("libraries.pages"), "aria-label": t("libraries.pages_named", { name: s.name }),
              onclick: () => pages(s.name, s.kind === "local" && !s.builtin) })),
        ]), t("libraries.list")));
      const select = $("q-library");
      select.replaceChildren(el("option", { value: "", text: t("libraries.all") }));
      for (const s of statuses) select.append(el("option", { value: s.name, text: s.name }));
    });
  }

  // A library's pages; in a folder library (removable), each with a button that deletes
  // its file and its records (library.remove_file) on a second click: the first asks.
  async function pages(name, removable) {
    const out = $("pages");
    await H.guard(out, t("libraries.pages"), async () => {
      const list = await H.rpc("library.pages", { name: name });
      const head = [t("libraries.col.page"), t("libraries.col.title"), t("libraries.col.collection"), t("libraries.col.path"), t("libraries.col.chunks")];
      out.replaceChildren(el("h3", { text: t("libraries.pages_of", { name: name, n: list.length }) }),
        el("div", { id: "pages-out", role: "status" }),
        H.table(removable ? [...head, t("libraries.col.actions")] : head,
          list.map((p) => [p.page, p.title, p.collection || "–", el("code", { text: p.path }), el("td", { class: "num", text: p.chunks }),
            removable ? el("button", { type: "button", class: "plain small", text: t("libraries.remove"),
              "aria-label": t("libraries.remove_named", { path: p.path, name: name }),
              onclick: (e) => remove(name, p.path, e.currentTarget) }) : null].filter((c) => c !== null)),
          t("libraries.pages_of", { name: name, n: list.length })));
    });
  }

  async function remove(name, path, button) {
    if (!button.dataset.armed) {
      button.dataset.armed = "true";
      button.textContent = t("libraries.remove_confirm");
      return;
    }
    button.disabled = true;
    await H.guard($("pages-out"), t("libraries.remove"), async () => {
      await H.rpc("library.remove_file", { name: name, path: path });
      await pages(name, true);
      H.note($("pages-out"), t("libraries.removed", { path: path, name: name }));
      load();
    });
  }

  async function reindex(name) {
    const out = $("progress");
    const bar = el("progress", { id: "index-bar", max: 1, value: 0, "aria-labelledby": "index-label" });
    const label = el("span", { id: "index-label", text: t("libraries.indexing_start", { name: name }) });
    out.replaceChildren(el("div", { class: "row" }, label, bar));
    await H.guard(out, t("libraries.reindex"), async () => {
      const task = await H.rpc("library.reindex", { name: name });
      for (;;) {
        const p = await H.rpc("library.progress", { task: task.task });
        const stage = p.stage || {};
        if (stage.name && stage.total) {
          // The stage under way moves per unit (chunks as they embed), not per page group.
          bar.max = stage.total;
          bar.value = stage.done;
          label.textContent = t("libraries.stage_" + stage.name, { name: name, done: stage.done, total: stage.total });
        } else if (p.total !== null) {
          bar.max = Math.max(p.total, 1);
          bar.value = p.total ? p.done : 1;
          label.textContent = t("libraries.indexing", { name: name, done: p.done, total: p.total });
        }
        if (p.state !== "running") {
          bar.max = 1; bar.value = p.state === "done" ? 1 : 0;
          const r = p.report || {};
          label.textContent = p.state === "done"
            ? t("libraries.indexed", { name: name, pages: r.pages, added: r.added, changed: r.changed,
              removed: r.removed, unchanged: r.unchanged, seconds: H.num(r.seconds, 2) })
            : t("libraries.index_failed", { name: name, error: p.error });
          out.dataset.state = p.state;
          load();
          return;
        }
        await new Promise((ok) => setTimeout(ok, 100));
      }
    });
  }

  $("add").addEventListener("submit", async (e) => {
    e.preventDefault();
    const name = $("add-name").value.trim();
    const source = $("add-source").value.trim();
    await H.guard($("add-out"), t("libraries.add"), async () => {
      // No source: a new, empty folder library to add files to (upload.js).
      if (source) await H.rpc("library.add", { name: name, source: source });
      else await H.rpc("library.create", { name: name });
      $("add-out").replaceChildren(el("p", { role: "status",
        text: t(source ? "libraries.added" : "libraries.created", { name: name }) }));
      await load();
      if (source) await reindex(name);
    });
  });

  $("search").addEventListener("submit", async (e) => {
    e.preventDefault();
    const out = $("results");
    await H.guard(out, t("libraries.search"), async () => {
      const found = await H.rpc("search.query", { query: $("q").value,
        library: $("q-library").value || undefined, mode: $("q-mode").value, top_k: 10 });
      if (!found.length) { H.empty(out, t("libraries.nothing_found")); return; }
      out.replaceChildren(el("ol", { class: "results" }, found.map((r) => {
        const c = r.components;
        return el("li", {},
          el("strong", { class: "r-title", text: r.title || r.page }),
          r.heading ? el("span", { text: " › " + r.heading }) : null,
          el("div", { class: "muted", text: r.pages
            ? `${r.library} / ${r.page}, ${H.pagesLabel(r.pages)}`
            : t("libraries.where", { library: r.library, page: r.page, first: r.lines[0], last: r.lines[1] }) }),
          el("p", { class: "r-snippet", text: r.snippet }),
          el("div", { class: "scores", text:
            t("libraries.scores", { score: H.num(r.score), fused: H.num(c.fused), dense: H.num(c.dense), lexical: H.num(c.lexical) }) +
            (c.rerank !== null && c.rerank !== undefined ? " · " + t("libraries.rerank", { rerank: H.num(c.rerank) }) : "") }),
          el("button", { type: "button", class: "plain small", text: t("libraries.open_passage"),
            onclick: (ev) => H.showPassage(r, ev.currentTarget) }));
      })));
    });
  });

  // Files added from the form or a row (upload.js): the counts change.
  document.addEventListener("heron:libraries-changed", load);
  load();
})();
