// Libraries: status, pages, add, re-index with live progress, search with scores.
"use strict";
(function () {
  const H = window.Heron, { $ } = H;

  async function load() {
    await H.guard($("libs"), "Library status", async () => {
      const statuses = await H.rpc("library.status");
      if (!statuses.length) { H.note($("libs"), "No libraries yet: add one below."); return; }
      $("libs").replaceChildren(H.table(
        ["Library", "Kind", "Source", "Pages", "Chunks", "Last sync", "Last error", "Actions"],
        statuses.map((s) => [
          s.name, s.kind, s.source,
          H.el("td", { class: "num", text: s.pages }), H.el("td", { class: "num", text: s.chunks }),
          H.when(s.last_sync),
          s.last_error ? H.el("span", { class: "bad", text: s.last_error }) : "–",
          H.el("span", { class: "row" },
            H.el("button", { type: "button", text: "Re-index", "aria-label": "Re-index " + s.name,
              onclick: () => reindex(s.name) }),
            H.el("button", { type: "button", class: "plain", text: "Pages", "aria-label": "Pages of " + s.name,
              onclick: () => pages(s.name) })),
        ])));
      const select = $("q-library");
      select.replaceChildren(H.el("option", { value: "", text: "all" }));
      for (const s of statuses) select.append(H.el("option", { value: s.name, text: s.name }));
    });
  }

  async function pages(name) {
    const out = $("pages");
    await H.guard(out, "The pages list", async () => {
      const list = await H.rpc("library.pages", { name: name });
      out.replaceChildren(H.el("h3", { text: `Pages of ${name} (${list.length})` }),
        H.table(["Page", "Title", "Collection", "Path", "Chunks"],
          list.map((p) => [p.page, p.title, p.collection || "–", p.path, H.el("td", { class: "num", text: p.chunks })])));
    });
  }

  async function reindex(name) {
    const out = $("progress");
    const bar = H.el("progress", { id: "index-bar", max: 1, value: 0, "aria-labelledby": "index-label" });
    const label = H.el("span", { id: "index-label", text: `Indexing ${name}: starting…` });
    out.replaceChildren(H.el("div", { class: "row" }, label, bar));
    await H.guard(out, "Re-indexing with progress", async () => {
      const task = await H.rpc("library.reindex", { name: name });
      for (;;) {
        const t = await H.rpc("library.progress", { task: task.task });
        if (t.total !== null) {
          bar.max = Math.max(t.total, 1);
          bar.value = t.total ? t.done : 1;
          label.textContent = `Indexing ${name}: ${t.done} of ${t.total} changed pages`;
        }
        if (t.state !== "running") {
          bar.max = 1; bar.value = t.state === "done" ? 1 : 0;
          const r = t.report || {};
          label.textContent = t.state === "done"
            ? `Indexed ${name}: ${r.pages} pages, ${r.added} added, ${r.changed} changed, ${r.removed} removed, ${r.unchanged} unchanged (${H.num(r.seconds, 2)} s)`
            : `Indexing ${name} failed: ${t.error}`;
          out.dataset.state = t.state;
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
    await H.guard($("add-out"), "Adding a library", async () => {
      await H.rpc("library.add", { name: name, source: $("add-source").value.trim() });
      $("add-out").replaceChildren(H.el("p", { role: "status", text: `Added ${name}.` }));
      await load();
      await reindex(name);
    });
  });

  $("search").addEventListener("submit", async (e) => {
    e.preventDefault();
    const out = $("results");
    await H.guard(out, "Search", async () => {
      const found = await H.rpc("search.query", { query: $("q").value,
        library: $("q-library").value || undefined, mode: $("q-mode").value, top_k: 10 });
      if (!found.length) { H.note(out, "Nothing found."); return; }
      out.replaceChildren(H.el("ol", { class: "results" }, found.map((r) => {
        const c = r.components;
        return H.el("li", {},
          H.el("strong", { class: "r-title", text: r.title || r.page }),
          r.heading ? H.el("span", { text: " › " + r.heading }) : null,
          H.el("div", { class: "muted", text: `${r.library} / ${r.page}, lines ${r.lines[0]}–${r.lines[1]}` }),
          H.el("p", { class: "r-snippet", text: r.snippet }),
          H.el("div", { class: "scores", text:
            `score ${H.num(r.score)} · fused ${H.num(c.fused)} · dense ${H.num(c.dense)} · lexical ${H.num(c.lexical)}` +
            (c.rerank !== null && c.rerank !== undefined ? ` · rerank ${H.num(c.rerank)}` : "") }),
          H.el("button", { type: "button", class: "plain", text: "Open passage",
            onclick: () => H.showPassage(r) }));
      })));
    });
  });

  load();
})();
