// Operations: the watchdog's checks as a status board (ops.board: green, amber or red,
// failing first, with the detail, the last change and the last runs as a strip), and
// the doctor's checks (ops.doctor) in the same form.
"use strict";
(function () {
  const H = window.Heron, { $, t, el } = H;
  const ICONS = { green: "✔", amber: "▲", red: "✖", grey: "–" };
  // A doctor status as a board colour (a skipped check is neither good nor bad).
  const DOCTOR = { ok: "green", warn: "amber", skip: "grey", fail: "red", failed: "red" };

  function tile(colour, name, status, detail, extra) {
    return el("li", { class: `tile c-${colour}`, "data-colour": colour },
      el("div", { class: "tile-head" },
        el("span", { class: "tile-icon", "aria-hidden": "true", text: ICONS[colour] }),
        el("strong", { class: "tile-name", text: name }),
        el("span", { class: "tile-status", text: status })),
      detail ? el("p", { class: "tile-detail", text: detail }) : null,
      extra);
  }

  function strip(runs) {
    if (!runs.length) return null;
    return el("ol", { class: "strip", "aria-label": t("ops.last_runs", { n: runs.length }) },
      runs.map((r) => el("li", { class: r.ok ? "run ok" : "run bad",
        title: `${H.when(r.at)}: ${t("ops.status." + r.status, null, r.status)}` },
      el("span", { class: "sr-only", text: `${H.when(r.at)}: ${t("ops.status." + r.status, null, r.status)}` }))));
  }

  async function watchdog() {
    await H.guard($("watchdog"), t("ops.watchdog"), async () => {
      const board = await H.rpc("ops.board");
      if (!board.report) { H.empty($("watchdog"), t("ops.no_report"), t("ops.no_report_hint")); return; }
      const failing = board.checks.filter((c) => c.colour !== "green").length;
      $("watchdog").replaceChildren(
        el("p", { class: "board-summary " + (failing ? "bad" : "ok") },
          failing ? t("ops.failing", { n: failing }) : t("ops.all_pass"), " · ",
          el("span", { class: "muted", text: t("ops.last_run", { at: H.when(board.report.started) }) })),
        el("ul", { class: "board" }, board.checks.map((c) => tile(c.colour, c.name, t("ops.status." + c.status, null, c.status), c.detail,
          [el("p", { class: "muted tile-when", text: t("ops.changed", { at: H.when(c.changed) }) }), strip(c.runs)]))));
    });
  }

  async function doctor() {
    $("doctor").replaceChildren(el("p", { class: "muted", text: t("ops.running") }));
    await H.guard($("doctor"), t("ops.doctor"), async () => {
      const d = await H.rpc("ops.doctor", { checks: [], offline: $("offline").checked });
      const order = { red: 0, amber: 1, grey: 2, green: 3 };
      const checks = d.checks.map((c) => ({ c: c, colour: DOCTOR[c.status] || (c.ok ? "green" : "red") }))
        .sort((a, b) => order[a.colour] - order[b.colour]);
      $("doctor").replaceChildren(
        el("p", { class: "board-summary " + (d.ok ? "ok" : "bad"), text: (d.ok ? t("ops.all_pass") : t("ops.some_fail")) +
          " · " + t("ops.seconds", { s: H.num(d.seconds, 2) }) }),
        el("ul", { class: "board" }, checks.map(({ c, colour }) => tile(colour, c.name,
          t("ops.doctor_status." + (c.status || (c.ok ? "ok" : "fail"))), c.detail,
          c.fix && colour !== "green" ? el("p", { class: "tile-fix" }, el("span", { text: t("ops.fix") + " " }), el("code", { text: c.fix })) : null))));
    });
  }

  $("doctor-form").addEventListener("submit", (e) => { e.preventDefault(); doctor(); });
  watchdog();
  doctor();
})();
