// Jobs: create, list, and one job beside the list: its fields and its events arriving
// live (resumed after a drop), each a readable row: the step, its exit code,
// its output in a block that opens; confirm, deny, abort.
"use strict";
(function () {
  const H = window.Heron, { $, t, el } = H;
  const FINAL = new Set(["completed", "aborted", "failed"]);
  let current = null, follow = null;

  function state(s) {
    return el("span", { class: `state state-${s}`, "data-state": s, text: t("jobs.state." + s, null, s) });
  }

  async function list() {
    await H.guard($("jobs"), t("jobs.list"), async () => {
      const jobs = await H.rpc("jobs.list", { limit: 50 });
      if (!jobs.length) { H.empty($("jobs"), t("jobs.none"), t("jobs.none_hint")); return; }
      $("jobs").replaceChildren(el("ul", { class: "job-list" }, jobs.map((j) => el("li", {},
        el("button", { type: "button", class: "job-row" + (j.id === current ? " current" : ""), "data-job": j.id,
          "aria-current": j.id === current ? "true" : null, onclick: () => open(j.id) },
        el("span", { class: "job-prompt", text: j.prompt }),
        el("span", { class: "job-meta" }, state(j.state), " ", el("span", { class: "muted", text: H.when(j.created_at) })))))));
    });
  }

  function fields(job) {
    const pairs = [["id", el("code", { text: job.id })], ["state", state(job.state)], ["prompt", job.prompt],
      ["criteria", job.success_criteria || "–"], ["risk", t("jobs.risk_" + job.risk_level)],
      ["needs_confirmation", job.requires_confirmation ? t("yes") : t("no")],
      ["confirmed_by", job.confirmed_by ? t("jobs.by_at", { by: job.confirmed_by, at: H.when(job.confirmed_at) }) : "–"],
      ["result", job.result ? (job.result.summary || t("jobs.result_fields", { n: Object.keys(job.result).length })) : "–"]];
    $("job-fields").replaceChildren(...pairs.flatMap(([k, v]) =>
      [el("dt", { text: t("jobs.field." + k) }), el("dd", { class: "f-" + k.replace(/_/g, "-") }, v)]));
    $("job-fields").dataset.state = job.state;
    const waiting = job.state === "waiting_for_confirmation";
    $("confirm").disabled = !waiting;
    $("deny").disabled = !waiting;
    $("abort").disabled = FINAL.has(job.state);
    return job;
  }

  async function refresh() {
    if (!current) return;
    const job = fields(await H.rpc("jobs.get", { id: current }));
    list();
  }

  // A value of an event's payload, read as text: short values inline, long ones (a
  // command's output) in a block that opens.
  function value(v) {
    if (v === null || v === undefined) return "–";
    if (Array.isArray(v)) return t("jobs.items", { n: v.length });
    if (typeof v === "object") return Object.entries(v).map(([k, x]) => `${k}: ${typeof x === "object" ? "…" : x}`).join(", ");
    return String(v);
  }

  function event(e) {
    const p = e.payload || {};
    const ok = p.ok === true ? "ok" : p.ok === false || e.kind === "step_failed" ? "bad" : "";
    const head = el("div", { class: "event-head" },
      el("span", { class: `kind ${ok}`, text: t("jobs.kind." + e.kind, null, e.kind) }),
      p.step ? el("code", { class: "step", text: p.step }) : null,
      p.exit_code !== undefined ? el("span", { class: `exit ${p.exit_code === 0 ? "ok" : "bad"}`, text: t("jobs.exit", { code: p.exit_code }) }) : null,
      p.seconds !== undefined ? el("span", { class: "muted", text: H.num(p.seconds, 2) + " s" }) : null,
      el("time", { class: "muted", text: H.when(e.time) }));
    const rest = Object.entries(p).filter(([k]) => !["step", "ok", "exit_code", "seconds", "stdout", "stderr"].includes(k));
    const output = ["stdout", "stderr"].filter((k) => p[k]).map((k) => el("details", { class: "output" },
      el("summary", { text: t("jobs.output", { stream: k }) }), el("pre", { tabindex: 0 }, el("code", { text: p[k] }))));
    return el("li", { class: "event", "data-kind": e.kind, "data-seq": e.seq }, head,
      rest.length ? el("dl", { class: "event-fields" }, rest.flatMap(([k, v]) =>
        [el("dt", { text: k }), el("dd", { text: value(v) })])) : null,
      output);
  }

  async function open(id) {
    if (follow) follow.close();
    current = id;
    $("detail").hidden = false;
    $("events").replaceChildren();
    await H.guard($("job-fields"), t("jobs.job"), refresh);
    $("job-h").focus();
    const seen = new Set();
    let finished = false;
    follow = H.live(`/jobs/${encodeURIComponent(id)}/events/stream`, (frame) => {
      const e = frame.data;
      if (seen.has(e.seq)) return;  // already shown (a replay after a reconnect)
      seen.add(e.seq);
      finished = finished || FINAL.has((e.payload || {}).to) || e.kind === "completed";
      $("events").append(event(e));
      refresh();
    }, (s, error) => { if (s === "failed") H.fail($("events"), error, t("jobs.events")); }, () => finished);
  }

  for (const action of ["confirm", "deny", "abort"]) {
    $(action).addEventListener("click", async () => {
      await H.guard($("job-fields"), t("jobs." + action), async () => {
        fields(await H.rpc("jobs." + action, { id: current, by: $("by").value || "web" }));
        list();
      });
    });
  }

  $("create").addEventListener("submit", async (e) => {
    e.preventDefault();
    await H.guard($("jobs"), t("jobs.create"), async () => {
      const job = await H.rpc("jobs.create", { prompt: $("prompt").value,
        success_criteria: $("criteria").value, risk_level: $("risk").value,
        requires_confirmation: $("confirm-first").checked });
      current = job.id;
      await list();
      open(job.id);
    });
  });
  $("refresh").addEventListener("click", list);

  list();
  const given = new URLSearchParams(location.search).get("job");  // the chat's job links
  if (given) open(given);
})();
