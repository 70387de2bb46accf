// amrita-memory admin, operations pages: the job progress view polls its JSON endpoint.
// Without JavaScript the page reloads itself (a <noscript> meta refresh) instead.
document.addEventListener("DOMContentLoaded", () => {
  const box = document.getElementById("job");
  if (!box || box.dataset.state !== "running") return;
  const $ = (id) => document.getElementById(id);
  const show = (el, text) => {
    el.textContent = text || "";
    el.classList.toggle("hidden", !text);
  };
  const tick = async () => {
    let job;
    try {
      const response = await fetch(box.dataset.poll, { headers: { Accept: "application/json" }, credentials: "same-origin" });
      if (!response.ok) throw new Error(String(response.status));
      job = await response.json();
    } catch (err) {
      window.setTimeout(tick, 2000);
      return;
    }
    const bar = $("job-bar");
    if (job.total > 0) {
      bar.max = job.total;
      bar.value = job.done;
    } else if (job.state !== "running") {
      bar.max = 1;
      bar.value = 1;
    }
    const state = $("job-state");
    const key = "stateLabel" + job.state.charAt(0).toUpperCase() + job.state.slice(1);
    state.textContent = state.dataset[key] || job.state;
    $("job-phase").textContent = job.phase_label || job.phase;
    $("job-progress").classList.toggle("hidden", job.state !== "running");
    $("job-counts").classList.toggle("hidden", !(job.total > 0));
    $("job-count").textContent = job.done + "/" + job.total;
    $("job-percent").textContent = job.percent === null ? "" : "(" + job.percent + "%)";
    show($("job-result"), job.result_label || job.result);
    show($("job-error"), job.error);
    box.dataset.state = job.state;
    if (job.state === "running") window.setTimeout(tick, 400);
  };
  window.setTimeout(tick, 200);
});
