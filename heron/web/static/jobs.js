// Jobs: create, list, one job's detail with its events arriving live; confirm, deny, abort.
"use strict";
(function () {
  const H = window.Heron, { $ } = H;
  const FINAL = new Set(["completed", "aborted", "failed"]);
  let current = null, follow = null;

  async function list() {
    await H.guard($("jobs"), "Jobs", async () => {
      const jobs = await H.rpc("jobs.list", { limit: 50 });
      if (!jobs.length) { H.note($("jobs"), "No jobs yet."); return; }
      $("jobs").replaceChildren(H.table(["Job", "State", "Risk", "Prompt", "Created"],
        jobs.map((j) => [H.el("button", { type: "button", class: "plain", text: j.id,
          "aria-label": `Open job ${j.id}: ${j.prompt}`, onclick: () => open(j.id) }),
        H.el("span", { class: "state", "data-job": j.id, text: j.state }), j.risk_level, j.prompt, j.created_at])));
    });
  }

  function fields(job) {
    const pairs = [["Id", job.id], ["State", job.state], ["Prompt", job.prompt],
      ["Success criteria", job.success_criteria || "–"], ["Risk", job.risk_level],
      ["Needs confirmation", job.requires_confirmation ? "yes" : "no"],
      ["Confirmed by", job.confirmed_by ? `${job.confirmed_by} at ${job.confirmed_at}` : "–"],
      ["Result", job.result ? (job.result.summary || JSON.stringify(job.result)) : "–"]];
    $("job-fields").replaceChildren(...pairs.flatMap(([k, v]) =>
      [H.el("dt", { text: k }), H.el("dd", { class: "f-" + k.toLowerCase().replace(/ /g, "-"), text: v })]));
    const waiting = job.state === "waiting_for_confirmation";
    $("confirm").disabled = !waiting;
    $("deny").disabled = !waiting;
    $("abort").disabled = FINAL.has(job.state);
  }

  async function refresh() {
    if (!current) return;
    fields(await H.rpc("jobs.get", { id: current }));
    list();
  }

  async function open(id) {
    if (follow) follow.abort();
    current = id;
    $("detail").hidden = false;
    $("events").replaceChildren();
    await H.guard($("job-fields"), "The job", refresh);
    $("job-h").focus();
    follow = new AbortController();
    try {
      for await (const ev of H.stream(`/jobs/${encodeURIComponent(id)}/events/stream`, null, follow.signal)) {
        const e = ev.data;
        $("events").append(H.el("li", { class: "event", "data-kind": e.kind },
          H.el("strong", { text: e.kind }), " ", H.el("span", { class: "muted", text: e.time }),
          Object.keys(e.payload || {}).length ? H.el("pre", { text: JSON.stringify(e.payload) }) : null));
        refresh();
      }
    } catch (error) {
      if (error.name !== "AbortError") H.fail($("events"), error, "The event stream");
    }
  }

  for (const action of ["confirm", "deny", "abort"]) {
    $(action).addEventListener("click", async () => {
      await H.guard($("job-fields"), "Job " + action, async () => {
        fields(await H.rpc("jobs." + action, { id: current, by: $("by").value || "web" }));
        list();
      });
    });
  }

  $("create").addEventListener("submit", async (e) => {
    e.preventDefault();
    await H.guard($("jobs"), "Creating jobs", async () => {
      const job = await H.rpc("jobs.create", { prompt: $("prompt").value,
        success_criteria: $("criteria").value, risk_level: $("risk").value,
        requires_confirmation: $("confirm-first").checked });
      await list();
      open(job.id);
    });
  });
  $("refresh").addEventListener("click", list);

  list();
})();
