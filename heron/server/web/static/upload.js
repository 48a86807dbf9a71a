// Files added to a folder library (POST /upload/{library}, heron.server.features.uploads): chosen
// or dropped on the form, or dropped on a library's row in the list; the bytes' progress
// while they are sent, then the index's stages from the answer's events, one line per
// file (added, replaced, or refused with the server's reason).
"use strict";
(function () {
  const H = window.Heron, { $, t, el } = H;
  const csrf = document.querySelector('meta[name="heron-csrf"]').content;
  const context = document.querySelector('meta[name="heron-context"]').content;
  let writable = new Set();

  // The libraries files may be added to: folders, not git, not Heron's own docs.
  async function libraries() {
    await H.guard($("upload-out"), t("upload.title"), async () => {
      const statuses = await H.rpc("library.status");
      const folders = statuses.filter((s) => s.kind === "local" && !s.builtin);
      writable = new Set(folders.map((s) => s.name));
      const select = $("upload-library");
      const chosen = select.value;
      select.replaceChildren(...folders.map((s) => el("option", { value: s.name, text: s.name })));
      if (writable.has(chosen)) select.value = chosen;
      if (!folders.length) H.note($("upload-progress"), t("upload.none"));
    });
  }

  // Frames of an event stream read so far: {event, data}; the rest waits in buffer.text.
  function* frames(buffer) {
    let cut;
    while ((cut = buffer.text.indexOf("\n\n")) >= 0) {
      const block = buffer.text.slice(0, cut);
      buffer.text = buffer.text.slice(cut + 2);
      let event = "message", data = "";
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) event = line.slice(7);
        else if (line.startsWith("data: ")) data += line.slice(6);
      }
      if (data) yield { event: event, data: JSON.parse(data) };
    }
  }

  function line(outcome) {
    if (outcome.ok) {
      return el("li", { class: "ok", "data-ok": "true",
        text: t(outcome.replaced ? "upload.replaced" : "upload.added", { path: outcome.path }) });
    }
    return el("li", { class: "bad", "data-ok": "false", text: outcome.error });
  }

  // Send files to library name; resolves once the server has answered in full.
  function send(name, files) {
    const out = $("upload-out"), progress = $("upload-progress");
    if (!name) { H.note(progress, t("upload.none")); return Promise.resolve(); }
    if (!files.length) { H.note(progress, t("upload.no_files")); return Promise.resolve(); }
    const bar = el("progress", { id: "upload-bar", max: 1, value: 0, "aria-labelledby": "upload-label" });
    const label = el("span", { id: "upload-label", text: t("upload.sending", { name: name, done: 0, total: 0 }) });
    progress.replaceChildren(el("div", { class: "row" }, label, bar));
    progress.dataset.state = "running";
    out.replaceChildren();
    const form = new FormData();
    for (const file of files) form.append("file", file, file.name);
    form.append("folder", $("upload-folder").value.trim());
    form.append("replace", $("upload-replace").checked ? "true" : "false");
    const xhr = new XMLHttpRequest();
    const buffer = { text: "" };
    let read = 0;
    const finish = (state, text) => {
      progress.dataset.state = state;
      bar.max = 1; bar.value = state === "done" ? 1 : 0;
      label.textContent = text;
      document.dispatchEvent(new CustomEvent("heron:libraries-changed"));
    };
    const take = () => {
      if (xhr.status !== 200) return;
      buffer.text += xhr.responseText.slice(read);
      read = xhr.responseText.length;
      for (const frame of frames(buffer)) {
        const d = frame.data;
        if (frame.event === "file") out.append(line(d));
        else if (frame.event === "stage" && d.total) {
          bar.max = Math.max(d.total, 1); bar.value = d.done;
          label.textContent = t("libraries.stage_" + d.name, { name: name, done: d.done, total: d.total }, d.name);
        } else if (frame.event === "done") {
          const r = d.index || {};
          finish("done", t("upload.done", { name: name, added: d.added, refused: d.refused,
            pages: r.pages === undefined ? "–" : r.pages, seconds: H.num(r.seconds || 0, 1) }));
        } else if (frame.event === "error") {
          finish("failed", t("upload.failed", { name: name, error: d.message }));
        }
      }
    };
    return new Promise((resolve) => {
      xhr.upload.onprogress = (e) => {
        if (!e.lengthComputable) return;
        bar.max = e.total; bar.value = e.loaded;
        label.textContent = t("upload.sending", { name: name,
          done: Math.round(e.loaded / 1024), total: Math.round(e.total / 1024) });
      };
      xhr.onprogress = take;
      xhr.onload = () => {
        if (xhr.status === 401) { location.assign("/signin?next=" + encodeURIComponent(location.pathname)); return resolve(); }
        if (xhr.status !== 200) {
          let message = "HTTP " + xhr.status;
          try { message = JSON.parse(xhr.responseText).error.message; } catch (e) { /* not JSON */ }
          progress.dataset.state = "failed";
          H.fail(progress, { message: message }, t("upload.title"));
          return resolve();
        }
        take();
        resolve();
      };
      xhr.onerror = () => {
        progress.dataset.state = "failed";
        H.fail(progress, { message: t("upload.network") }, t("upload.title"));
        resolve();
      };
      xhr.open("POST", "/upload/" + encodeURIComponent(name));
      xhr.setRequestHeader("accept", "text/event-stream");
      if (csrf) xhr.setRequestHeader("x-heron-csrf", csrf);
      if (context) xhr.setRequestHeader("x-heron-context", context);
      xhr.send(form);
    });
  }

  // A drop target: highlighted while files are dragged over it; on drop, onfiles(files).
  function droppable(node, over, onfiles) {
    node.addEventListener("dragover", (e) => {
      const target = over(e);
      if (!target || !e.dataTransfer || !Array.from(e.dataTransfer.types).includes("Files")) return;
      e.preventDefault();
      e.dataTransfer.dropEffect = "copy";
      for (const lit of document.querySelectorAll(".over, .drop-over")) if (lit !== target.node) lit.classList.remove("over", "drop-over");
      target.node.classList.add(target.css);
    });
    node.addEventListener("dragleave", (e) => {
      const target = over(e);
      if (target && !target.node.contains(e.relatedTarget)) target.node.classList.remove(target.css);
    });
    node.addEventListener("drop", (e) => {
      const target = over(e);
      if (!target || !e.dataTransfer) return;
      e.preventDefault();
      target.node.classList.remove(target.css);
      onfiles(target, Array.from(e.dataTransfer.files));
    });
  }

  // The form's zone: the library chosen in the form.
  droppable($("drop"), () => ({ node: $("drop"), css: "over" }),
    (_, files) => send($("upload-library").value, files));
  // Each folder library's row of the list (filled by libraries.js): that library.
  droppable($("libs"), (e) => {
    const row = e.target instanceof Element ? e.target.closest("tr") : null;
    const name = row && row.querySelector("th") ? row.querySelector("th").textContent : null;
    return name && writable.has(name) ? { node: row, css: "drop-over", name: name } : null;
  }, (target, files) => { $("upload-library").value = target.name; send(target.name, files); });

  // Files dropped anywhere else are not opened in place of the page.
  for (const kind of ["dragover", "drop"]) {
    window.addEventListener(kind, (e) => {
      if (e.dataTransfer && Array.from(e.dataTransfer.types).includes("Files")) e.preventDefault();
    });
  }

  $("upload").addEventListener("submit", (e) => {
    e.preventDefault();
    send($("upload-library").value, Array.from($("upload-files").files)).then(() => { $("upload-files").value = ""; });
  });

  // The choice follows the list (a library added, removed, or its files changed).
  new MutationObserver(() => libraries()).observe($("libs"), { childList: true });
  libraries();
})();
