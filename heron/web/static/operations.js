// Operations: the doctor's checks (ops.doctor) and the latest watchdog report.
"use strict";
(function () {
  const H = window.Heron, { $ } = H;
  // The watchdog's method, whichever name this server gives it.
  const STATUS = { ok: "ok", warn: "warn", skip: "muted", fail: "bad", failed: "bad" };
  const WATCHDOG = ["ops.watchdog", "watchdog.report", "watchdog.latest", "ops.watchdog_report"];

  async function doctor() {
    $("doctor").replaceChildren(H.el("p", { class: "muted", text: "Running checks…" }));
    await H.guard($("doctor"), "The doctor", async () => {
      const d = await H.rpc("ops.doctor", { checks: [], offline: $("offline").checked });
      $("doctor").replaceChildren(
        H.el("p", { class: d.ok ? "ok" : "bad", text: `${d.ok ? "All checks pass" : "Some checks fail"} (${H.num(d.seconds, 2)} s)` }),
        H.table(["Check", "Status", "Detail", "Fix", "Seconds"], d.checks.map((c) => [
          c.name, H.el("span", { class: STATUS[c.status] || (c.ok ? "ok" : "bad"), text: c.status || (c.ok ? "ok" : "failed") }),
          c.detail || "–", c.fix || "–", H.el("td", { class: "num", text: H.num(c.seconds, 2) })])));
    });
  }

  function describe(value) {
    if (value === null || typeof value !== "object") return H.el("span", { text: String(value) });
    if (Array.isArray(value)) return H.el("ol", {}, value.map((v) => H.el("li", {}, describe(v))));
    return H.el("dl", { class: "fields" }, Object.entries(value).flatMap(([k, v]) =>
      [H.el("dt", { text: k }), H.el("dd", {}, describe(v))]));
  }

  async function watchdog() {
    await H.guard($("watchdog"), "The watchdog report", async () => {
      const known = await H.methods();
      const name = WATCHDOG.find((m) => known.has(m));
      if (!name) { H.note($("watchdog"), "The watchdog report is not available on this server (its API is absent)."); return; }
      $("watchdog").replaceChildren(describe(await H.rpc(name)));
    });
  }

  $("doctor-form").addEventListener("submit", (e) => { e.preventDefault(); doctor(); });
  doctor();
  watchdog();
})();
