// Jobnik dashboard: plain JavaScript over the manager's REST API, no build step.
// Routes (in the URL's hash): #/jobs?status=&priority=&name=&page=, #/jobs/<id>,
// #/stage-types, #/workers, #/dead-letters and #/schedules
"use strict";

const STATUSES = ["PENDING", "IN_PROGRESS", "PAUSED", "COMPLETED", "FAILED", "ABORTED"];
const PRIORITIES = ["VERY_HIGH", "HIGH", "MEDIUM", "LOW", "VERY_LOW"];
const FINAL = new Set(["COMPLETED", "FAILED", "ABORTED"]);
const REFRESH_MS = 2000;
const JOBS_PAGE_SIZE = 20;
const TASKS_PAGE_SIZE = 20;
const EVENTS_PAGE_SIZE = 50;
const TOKEN_KEY = "jobnik.token";

const view = document.getElementById("view");
const live = document.getElementById("live");
const autoRefresh = document.getElementById("auto-refresh");
const tokenButton = document.getElementById("token-button");
// Times show in UTC (as the CLI and the logs print them) or in the browser's own zone:
// the choice is kept in this browser once made.
const zoneSelect = document.getElementById("zone");
const LOCAL_ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone || "local";
zoneSelect.options[1].textContent = `Local (${LOCAL_ZONE})`;
zoneSelect.value = localStorage.getItem("jobnik.zone") === "local" ? "local" : "utc";

// ---- small DOM helpers -----------------------------------------------------------

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") el.className = value;
    else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key in el && typeof value !== "string") el[key] = value;
    else el.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

// How long a task's attempt took (or has run so far), from its start and end times.
function took(task) {
  if (!task.startTime) return "—";
  const end = task.endTime ? Date.parse(task.endTime) : Date.now();
  const seconds = Math.max(0, (end - Date.parse(task.startTime)) / 1000);
  const text = seconds < 10 ? `${seconds.toFixed(1)} s` : age(seconds);
  return task.endTime ? text : `${text} so far`;
}

function statusBadge(status) {
  return h("span", { class: `status status-${status}` }, status);
}

function when(iso) {
  if (!iso) return "—";
  return h("time", { datetime: iso }, clockTime(new Date(iso)));
}

// YYYY-MM-DD HH:MM:SS in the zone chosen, 24-hour, as the CLI prints UTC.
function clockTime(date) {
  if (zoneSelect.value === "utc") return `${date.toISOString().slice(0, 19).replace("T", " ")} UTC`;
  const two = (n) => String(n).padStart(2, "0");
  return `${date.getFullYear()}-${two(date.getMonth() + 1)}-${two(date.getDate())} ` +
    `${two(date.getHours())}:${two(date.getMinutes())}:${two(date.getSeconds())}`;
}

// How far a job or a stage is: the finer `progress` (running tasks' reports counted),
// where the manager gives it, else v1's `percentage` (completed tasks only).
function progressOf(entity) {
  const value = entity.progress ?? entity.percentage;
  return Math.floor(Number(value) || 0);  // never 100 before it is
}

// A task's data or result as JSON, cut to a line (the whole of it on hover).
function clipped(value) {
  if (value === undefined || value === null) return "—";
  const text = JSON.stringify(value);
  return text.length <= 60 ? text : h("span", { title: text }, `${text.slice(0, 59)}…`);
}

function bar(percentage, label) {
  const value = Math.max(0, Math.min(100, Number(percentage) || 0));
  return h("span", { class: "pair" },
    h("progress", { max: "100", value: String(value), "aria-label": label }),
    h("span", { class: "num" }, `${value} %`));
}

function say(text) {
  if (live.textContent !== text) live.textContent = text;
}

function errorBox(err) {
  if (err instanceof ApiError) {
    return h("div", { class: "error", role: "alert" },
      h("strong", {}, err.message), " ", err.code ? h("code", {}, err.code) : null,
      err.status ? h("span", { class: "muted" }, ` (HTTP ${err.status})`) : null);
  }
  return h("div", { class: "error", role: "alert" }, String(err && err.message || err));
}

// Re-rendering replaces nodes: keep the keyboard focus on the same control.
function focusedKey() {
  const active = document.activeElement;
  return active && active.dataset ? active.dataset.key : null;
}

function restoreFocus(key) {
  if (!key) return;
  const again = view.querySelector(`[data-key="${CSS.escape(key)}"]`);
  if (again && again !== document.activeElement) again.focus();
}

function keepFocus(render) {
  const key = focusedKey();
  render();
  restoreFocus(key);
}

// ---- the API -----------------------------------------------------------------------

class ApiError extends Error {
  constructor(status, message, code) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(path, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    throw new ApiError(0, `The manager could not be reached: ${err.message}`, "NETWORK_ERROR");
  }
  const text = await response.text();
  let data = null;
  if (text) {
    try { data = JSON.parse(text); } catch { data = null; }
  }
  if (!response.ok) {
    const message = data && data.message ? data.message : `${response.status} ${response.statusText}`;
    const error = new ApiError(response.status, message, data && data.code);
    if (response.status === 401) askToken(message);
    throw error;
  }
  return data;
}

function query(params) {
  const q = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== "" && value !== null && value !== undefined) q.set(key, value);
  }
  const s = q.toString();
  return s ? `?${s}` : "";
}

// ---- dialogs -----------------------------------------------------------------------

const confirmDialog = document.getElementById("confirm");

function confirmAction(title, text, okLabel, danger) {
  document.getElementById("confirm-title").textContent = title;
  document.getElementById("confirm-text").textContent = text;
  const ok = document.getElementById("confirm-ok");
  ok.textContent = okLabel;
  ok.className = danger ? "danger" : "";
  confirmDialog.returnValue = "cancel";
  return new Promise((resolve) => {
    confirmDialog.addEventListener("close", () => resolve(confirmDialog.returnValue === "ok"), { once: true });
    confirmDialog.showModal();
    ok.focus();
  });
}

const tokenDialog = document.getElementById("token-dialog");
const tokenInput = document.getElementById("token-input");

function askToken(message) {
  tokenButton.hidden = false;
  if (tokenDialog.open) return;
  const error = document.getElementById("token-error");
  error.hidden = !sessionStorage.getItem(TOKEN_KEY);
  error.textContent = message;
  tokenInput.value = "";
  tokenDialog.showModal();
  tokenInput.focus();
}

tokenDialog.addEventListener("close", () => {
  if (tokenDialog.returnValue === "ok" && tokenInput.value.trim()) {
    sessionStorage.setItem(TOKEN_KEY, tokenInput.value.trim());
    tokenInput.value = "";
    route();
  }
});
tokenButton.addEventListener("click", () => askToken("Give another token."));
if (sessionStorage.getItem(TOKEN_KEY)) tokenButton.hidden = false;

// ---- refresh -----------------------------------------------------------------------

let timer = null;
let current = null; // the page on screen: { refresh(): Promise }

function schedule() {
  clearTimeout(timer);
  timer = setTimeout(async () => {
    if (current && autoRefresh.checked && !document.hidden && !confirmDialog.open && !tokenDialog.open) {
      try { await current.refresh(); } catch { /* shown by the page */ }
    }
    schedule();
  }, REFRESH_MS);
}
autoRefresh.addEventListener("change", () => say(autoRefresh.checked ? "Live refresh on" : "Live refresh off"));
zoneSelect.addEventListener("change", () => {
  localStorage.setItem("jobnik.zone", zoneSelect.value);
  if (current) current.refresh();  // the same page, its times in the new zone
  say(zoneSelect.value === "utc" ? "Times in UTC" : `Times in ${LOCAL_ZONE}`);
});

// ---- the jobs list -----------------------------------------------------------------

function jobsPage(params) {
  const filters = {
    status: params.get("status") || "",
    priority: params.get("priority") || "",
    name: params.get("name") || "",
    id: params.get("id") || "",
    page: Math.max(1, Number(params.get("page")) || 1),
  };
  const go = (changes) => {
    const next = { ...filters, ...changes };
    const hash = `#/jobs${query({ status: next.status, priority: next.priority, name: next.name, id: next.id, page: next.page > 1 ? next.page : "" })}`;
    if (hash === location.hash) route();  // the same search again: answer it now
    else location.hash = hash;
  };

  const nameInput = h("input", { id: "f-name", type: "search", value: filters.name, maxlength: "100", placeholder: "part of a name", "data-key": "f-name" });
  const idInput = h("input", { id: "f-id", type: "search", value: filters.id, maxlength: "36", placeholder: "first digits", "data-key": "f-id" });
  const statusSelect = h("select", { id: "f-status", "data-key": "f-status" },
    h("option", { value: "" }, "Any"), STATUSES.map((s) => h("option", { value: s, selected: s === filters.status }, s)));
  const prioritySelect = h("select", { id: "f-priority", "data-key": "f-priority" },
    h("option", { value: "" }, "Any"), PRIORITIES.map((p) => h("option", { value: p, selected: p === filters.priority }, p)));
  const form = h("form", {
    class: "filters", role: "search", "aria-label": "Filter jobs",
    onsubmit: (e) => {
      e.preventDefault();
      go({ name: nameInput.value.trim(), id: idInput.value.trim(), status: statusSelect.value, priority: prioritySelect.value, page: 1 });
    },
  },
  h("div", { class: "field" }, h("label", { for: "f-name" }, "Name"), nameInput),
  h("div", { class: "field" }, h("label", { for: "f-id" }, "Id"), idInput),
  h("div", { class: "field" }, h("label", { for: "f-status" }, "Status"), statusSelect),
  h("div", { class: "field" }, h("label", { for: "f-priority" }, "Priority"), prioritySelect),
  h("button", { type: "submit" }, "Search"),
  h("button", { type: "button", class: "secondary", onclick: () => { location.hash = "#/jobs"; } }, "Clear"));
  statusSelect.addEventListener("change", () => form.requestSubmit());
  prioritySelect.addEventListener("change", () => form.requestSubmit());

  const results = h("section", { "aria-labelledby": "jobs-heading" });
  view.replaceChildren(h("h1", { id: "jobs-heading" }, "Jobs"), form, results);
  document.title = "Jobs · Jobnik";

  async function refresh() {
    let data;
    try {
      data = await api("GET", `/v1/jobs${query({
        page: filters.page, page_size: JOBS_PAGE_SIZE, status: filters.status,
        priority: filters.priority, name_contains: filters.name, id_prefix: filters.id, newest_first: true,
      })}`);
    } catch (err) {
      keepFocus(() => results.replaceChildren(errorBox(err)));
      return;
    }
    const pages = Math.max(1, Math.ceil(data.total / JOBS_PAGE_SIZE));
    const first = data.total ? (filters.page - 1) * JOBS_PAGE_SIZE + 1 : 0;
    const last = (filters.page - 1) * JOBS_PAGE_SIZE + data.items.length;
    const rows = data.items.map((job) => h("tr", { "data-job-id": job.id },
      h("td", {}, h("a", { href: `#/jobs/${job.id}` }, job.name)),
      h("td", {}, statusBadge(job.status)),
      h("td", { class: "hide-narrow" }, job.priority),
      h("td", {}, bar(progressOf(job), `Progress of ${job.name}`)),
      h("td", { class: "hide-narrow" }, when(job.creationTime)),
      h("td", { class: "hide-narrow" }, when(job.updateTime))));
    keepFocus(() => results.replaceChildren(
      h("p", { class: "muted" }, data.total ? `Jobs ${first}–${last} of ${data.total}` : "No jobs match."),
      listTable(["Name", "Status", { narrow: "Priority" }, "Progress", { narrow: "Created" }, { narrow: "Updated" }], rows, "Jobs"),
      pager(filters.page, pages, (page) => go({ page }), "jobs")));
    say(data.total ? `${data.total} jobs; page ${filters.page} of ${pages}` : "No jobs match");
  }
  return { refresh };
}

// A list's rows as a table under `columns`, its headings: one given as { narrow: "Name" }
// is hidden on a narrow screen, as its cells are.
function listTable(columns, rows, caption) {
  return h("div", { class: "table-wrap" }, h("table", {},
    caption ? h("caption", { class: "visually-hidden" }, caption) : null,
    h("thead", {}, h("tr", {}, columns.map((c) => typeof c === "string"
      ? h("th", { scope: "col" }, c)
      : h("th", { scope: "col", class: "hide-narrow" }, c.narrow)))),
    h("tbody", {}, rows)));
}

function pager(page, pages, goTo, key) {
  return h("nav", { class: "pager", "aria-label": `Pages of ${key}` },
    h("button", { type: "button", class: "secondary", disabled: page <= 1, "data-key": `${key}-prev`, onclick: () => goTo(page - 1) }, "Previous"),
    h("span", {}, `Page ${page} of ${pages}`),
    h("button", { type: "button", class: "secondary", disabled: page >= pages, "data-key": `${key}-next`, onclick: () => goTo(page + 1) }, "Next"));
}

// ---- a job's timeline ----------------------------------------------------------------

const SVG_NS = "http://www.w3.org/2000/svg";
const TIMELINE_EVENTS = 1000;  // the latest moves drawn: one page of the history
const RUN_ROWS = 12;  // task runs drawn per stage; the rest are counted

function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value !== null && value !== undefined) el.setAttribute(key, String(value));
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined) el.append(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return el;
}

// Each task attempt as a run: from its move to IN_PROGRESS to its next move (COMPLETED,
// FAILED, RETRIED, ABORTED, ...), or still running. `events` oldest first.
function taskRuns(events) {
  const open = new Map();
  const runs = [];
  for (const e of events) {
    if (e.entity !== "TASK" || !e.toStatus) continue;
    const t = Date.parse(e.time);
    const running = open.get(e.taskId);
    if (running && e.fromStatus === "IN_PROGRESS") {
      running.end = t;
      running.outcome = e.toStatus;
      running.reason = e.reason;
      open.delete(e.taskId);
    }
    if (e.toStatus === "IN_PROGRESS") {
      const run = { taskId: e.taskId, stageId: e.stageId, start: t, end: null, outcome: null, worker: e.worker, reason: null };
      open.set(e.taskId, run);
      runs.push(run);
    }
  }
  return runs;
}

// Runs side by side in rows, each in the first row free by its start.
function rowsOf(runs, now) {
  const ends = [];
  const placed = [];
  let hidden = 0;
  for (const run of [...runs].sort((a, b) => a.start - b.start)) {
    let row = ends.findIndex((end) => end <= run.start);
    if (row === -1) row = ends.length;
    if (row >= RUN_ROWS) { hidden += 1; continue; }
    ends[row] = run.end ?? now;
    placed.push({ run, row });
  }
  return { placed, rows: Math.max(1, ends.length), hidden };
}

function timelineChart(job, events) {
  const stages = job.stages || [];
  const now = Date.now();
  const start = Date.parse(job.creationTime);
  const ended = FINAL.has(job.status) ? Math.max(Date.parse(job.updateTime), ...stages.map((s) => Date.parse(s.endTime || job.updateTime))) : now;
  const span = Math.max(ended - start, 1000);
  const LABEL = 170, WIDTH = 1000, ROW = 9, GAP = 12;
  const x = (t) => LABEL + ((Math.min(Math.max(t, start), ended) - start) / span) * (WIDTH - LABEL - 10);
  const runs = taskRuns([...events].reverse());
  const parts = [];
  let y = 24;
  for (const stage of stages) {
    const mine = rowsOf(runs.filter((r) => r.stageId === stage.id), ended);
    const began = stage.startTime ? Date.parse(stage.startTime) : null;
    const done = stage.endTime ? Date.parse(stage.endTime) : (began ? ended : null);
    const lane = svg("g", { class: "tl-stage", "data-stage-order": stage.order },
      svg("text", { x: 0, y: y + 10, class: "tl-label" }, `${stage.order}. ${stage.type}`),
      // Before it started: waiting for its turn, an approval or a worker.
      svg("rect", { x: LABEL, y, width: Math.max(x(began ?? ended) - LABEL, 0), height: 12, class: "tl-wait" },
        svg("title", {}, `stage ${stage.order}: waiting until ${began ? new Date(began).toISOString() : "now"}`)),
      began === null ? null : svg("rect", { x: x(began), y, width: Math.max(x(done) - x(began), 2), height: 12, class: `tl-bar tl-${stage.status}` },
        svg("title", {}, `stage ${stage.order} ${stage.status}: ${age((done - began) / 1000)}`)));
    y += 12 + 4;
    for (const { run, row } of mine.placed) {
      const end = run.end ?? ended;
      lane.append(svg("rect", {
        x: x(run.start), y: y + row * ROW, width: Math.max(x(end) - x(run.start), 2), height: ROW - 2,
        class: `tl-run tl-${run.outcome || "IN_PROGRESS"}`, "data-task-id": run.taskId,
      }, svg("title", {}, `task ${run.taskId.slice(0, 8)} ${run.outcome || "running"}${run.worker ? ` by ${run.worker}` : ""}: ${age((end - run.start) / 1000)}${run.reason ? ` (${run.reason})` : ""}`)));
    }
    y += mine.rows * ROW;
    if (mine.hidden) {
      lane.append(svg("text", { x: LABEL, y: y + 9, class: "tl-more" }, `+ ${mine.hidden} more runs`));
      y += 12;
    }
    parts.push(lane);
    y += GAP;
  }
  const axis = [0, 0.25, 0.5, 0.75, 1].map((f) => {
    const t = start + f * span;
    return svg("text", { x: x(t), y: 12, class: "tl-axis", "text-anchor": f === 0 ? "start" : f === 1 ? "end" : "middle" },
      f === 0 ? clockTime(new Date(t)) : `+${span < 120_000 ? `${((t - start) / 1000).toFixed(1)} s` : age((t - start) / 1000)}`);
  });
  // Its size in its own units: the page scales it to the width at that aspect ratio.
  return svg("svg", { viewBox: `0 0 ${WIDTH} ${y}`, width: WIDTH, height: y, class: "timeline", role: "img",
    "aria-label": `Timeline of ${stages.length} stages and ${runs.length} task runs over ${age(span / 1000)}` },
  axis, parts);
}

// ---- a job ---------------------------------------------------------------------------

function jobPage(jobId) {
  const state = { job: null, stageId: null, tasksPage: 1, eventsPage: 1, error: null };
  const notice = h("div", {});
  const head = h("section", { "aria-labelledby": "job-heading" }, h("h1", { id: "job-heading" }, "Job"));
  const stagesBox = h("section", { "aria-labelledby": "stages-heading" });
  const tasksBox = h("section", { "aria-labelledby": "tasks-heading" });
  const eventsBox = h("section", { "aria-labelledby": "events-heading" });
  // What the job produced: its result and its tasks' assets, shown when there are any.
  const outputsBox = h("section", { "aria-labelledby": "outputs-heading", id: "outputs" });
  // Drawn from the latest moves, fetched only while it is open.
  const chart = h("div", { id: "timeline" });
  const timelineBox = h("details", { class: "timeline-box" },
    h("summary", {}, "Timeline: stages and task runs over time"), chart);
  timelineBox.addEventListener("toggle", () => { if (timelineBox.open) renderTimeline(state.job); });
  view.replaceChildren(h("p", {}, h("a", { href: "#/jobs" }, "← All jobs")), notice, head, outputsBox, stagesBox, timelineBox, tasksBox, eventsBox);

  async function renderTimeline(job) {
    if (!timelineBox.open || !job) return;
    let data;
    try {
      data = await api("GET", `/v1/jobs/${jobId}/events${query({ page: 1, page_size: TIMELINE_EVENTS, newest_first: true })}`);
    } catch (err) {
      chart.replaceChildren(errorBox(err));
      return;
    }
    const note = data.total > data.items.length
      ? h("p", { class: "muted" }, `The latest ${data.items.length} of ${data.total} moves.`) : null;
    chart.replaceChildren(timelineChart(job, data.items), note || "");
  }

  async function act(title, text, okLabel, danger, method, path, body) {
    if (!(await confirmAction(title, text, okLabel, danger))) return;
    try {
      await api(method, path, body);
      notice.replaceChildren();
      say(`${okLabel}: done`);
    } catch (err) {
      notice.replaceChildren(errorBox(err));
    }
    await refresh();
  }

  function renderHead(job) {
    document.title = `${job.name} · Jobnik`;
    const actions = h("div", { class: "actions", role: "group", "aria-label": "Job actions" });
    if (job.status === "PENDING" || job.status === "IN_PROGRESS") {
      actions.append(h("button", { type: "button", class: "secondary", "data-key": "pause",
        onclick: () => act("Pause job", `Pause “${job.name}”? Running tasks finish; nothing new is handed out.`, "Pause", false,
          "PUT", `/v1/jobs/${job.id}/status`, { status: "PAUSED" }) }, "Pause"));
    }
    if (job.status === "PAUSED") {
      actions.append(h("button", { type: "button", class: "secondary", "data-key": "resume",
        onclick: () => act("Resume job", `Resume “${job.name}”?`, "Resume", false,
          "PUT", `/v1/jobs/${job.id}/status`, { status: "PENDING" }) }, "Resume"));
    }
    if (job.status === "FAILED") {
      actions.append(h("button", { type: "button", "data-key": "retry",
        onclick: () => act("Retry job", `Run the failed stage of “${job.name}” again? Its failed and aborted tasks get a fresh set of attempts.`, "Retry", false,
          "POST", `/v1/jobs/${job.id}/retry`) }, "Retry"));
    }
    if (FINAL.has(job.status)) {
      actions.append(h("button", { type: "button", class: "danger", "data-key": "delete",
        onclick: async () => {
          if (!(await confirmAction("Delete job", `Delete “${job.name}”, its stages, tasks and history? This cannot be undone.`, "Delete", true))) return;
          try {
            await api("DELETE", `/v1/jobs/${job.id}`);
            say(`Job ${job.name} deleted`);
            location.hash = "#/jobs";
          } catch (err) {
            notice.replaceChildren(errorBox(err));
          }
        } }, "Delete"));
    }
    if (!FINAL.has(job.status)) {
      actions.append(h("button", { type: "button", class: "danger", "data-key": "abort",
        onclick: () => act("Abort job", `Abort “${job.name}”? Its unfinished stages and tasks are aborted. This cannot be undone.`, "Abort", true,
          "PUT", `/v1/jobs/${job.id}/status`, { status: "ABORTED" }) }, "Abort"));
      const select = h("select", { id: "job-priority", "data-key": "job-priority" },
        PRIORITIES.map((p) => h("option", { value: p, selected: p === job.priority }, p)));
      actions.append(h("form", { class: "priority", onsubmit: (e) => {
        e.preventDefault();
        const priority = select.value;
        act("Change priority", `Change the priority of “${job.name}” from ${job.priority} to ${priority}?`, "Change priority", false,
          "PATCH", `/v1/jobs/${job.id}/priority`, { priority });
      } }, h("label", { for: "job-priority" }, "Priority"), select,
      h("button", { type: "submit", class: "secondary", "data-key": "priority-set" }, "Set")));
    }
    const failedStage = (job.stages || []).find((st) => st.id === job.failedStageId);
    const why = (job.status === "FAILED" || job.status === "ABORTED") && job.reason
      ? h("div", { class: "error", role: "status", id: "job-reason" },
        h("strong", {}, job.status === "FAILED" ? "Failed: " : "Aborted: "), job.reason,
        failedStage ? h("span", {}, " · stage ", h("button", { type: "button", class: "link", "data-key": "failed-stage",
          onclick: () => { state.stageId = failedStage.id; state.tasksPage = 1; refresh(); } },
        `${failedStage.order} (${failedStage.type})`)) : null,
        job.failedTaskId ? h("span", {}, " · task ", h("span", { class: "mono", title: job.failedTaskId }, job.failedTaskId.slice(0, 8))) : null)
      : null;
    head.replaceChildren(
      h("h1", { id: "job-heading" }, job.name),
      why,
      h("div", { class: "job-head" },
        h("dl", {},
          h("div", { class: "pair" }, h("dt", {}, "Status"), h("dd", { id: "job-status" }, statusBadge(job.status))),
          h("div", { class: "pair" }, h("dt", {}, "Priority"), h("dd", {}, job.priority)),
          h("div", { class: "pair" }, h("dt", {}, "Progress"), h("dd", { id: "job-progress" }, bar(progressOf(job), "Job progress"))),
          h("div", { class: "pair" }, h("dt", {}, "Created"), h("dd", {}, when(job.creationTime))),
          job.uniqueKey ? h("div", { class: "pair" }, h("dt", {}, "Unique key"), h("dd", { class: "mono", id: "job-unique-key" }, job.uniqueKey)) : null,
          job.deadline ? h("div", { class: "pair" }, h("dt", {}, "Deadline"), h("dd", { id: "job-deadline" }, when(job.deadline))) : null,
          job.expiresAt ? h("div", { class: "pair" }, h("dt", {}, "Expires"), h("dd", { id: "job-expires" }, when(job.expiresAt))) : null,
          h("div", { class: "pair" }, h("dt", {}, "Id"), h("dd", { class: "mono" }, job.id)))),
      actions);
  }

  function renderStages(job) {
    const stages = job.stages || [];
    const items = stages.map((stage, i) => {
      const previous = i > 0 ? stages[i - 1] : null;
      const turnCame = !previous || previous.status === "COMPLETED";
      const s = stage.summary || {};
      const buttons = h("div", { class: "buttons" },
        h("button", { type: "button", class: "secondary", "aria-pressed": String(state.stageId === stage.id), "data-key": `tasks-${stage.id}`,
          onclick: () => { state.stageId = stage.id; state.tasksPage = 1; refresh(); } }, `Tasks of stage ${stage.order}`));
      if (stage.status === "WAITING" && turnCame && !FINAL.has(job.status)) {
        buttons.prepend(h("button", { type: "button", "data-key": `approve-${stage.id}`,
          onclick: () => act("Approve stage", `Approve stage ${stage.order} (${stage.type}) so that its tasks may run?`, "Approve", false,
            "PUT", `/v1/stages/${stage.id}/status`, { status: "PENDING" }) }, `Approve stage ${stage.order}`));
      }
      return h("li", { class: `stage-${stage.status}`, "data-stage-order": String(stage.order) },
        h("article", { class: "stage", "aria-current": state.stageId === stage.id ? "true" : null, "aria-labelledby": `stage-${stage.id}` },
          h("header", {},
            h("h3", { id: `stage-${stage.id}` }, `Stage ${stage.order}: `, h("span", { class: "mono" }, stage.type)),
            h("span", { class: "stage-status" }, statusBadge(stage.status)),
            bar(progressOf(stage), `Progress of stage ${stage.order}`)),
          h("dl", { class: "summary" },
            ["total", "pending", "inProgress", "completed", "failed", "retried", "aborted"].map((k) =>
              h("div", { class: "pair" }, h("dt", {}, k === "inProgress" ? "in progress" : k), h("dd", {}, s[k] ?? 0)))),
          h("p", { class: "times" }, "Started ", when(stage.startTime), " · ended ", when(stage.endTime)),
          stage.retryPolicy ? h("p", { class: "retry-policy" }, "Retries: ", retryPolicyText(stage.retryPolicy)) : null,
          stage.status === "WAITING" && !turnCame ? h("p", { class: "muted" }, "Waits for the stage before it to complete, then for approval.") : null,
          buttons));
    });
    stagesBox.replaceChildren(h("h2", { id: "stages-heading" }, "Stages"),
      items.length ? h("ol", { class: "timeline" }, items) : h("p", { class: "muted" }, "No stages yet."));
  }

  async function renderTasks(stages) {
    const stage = stages.find((s) => s.id === state.stageId);
    if (!stage) {
      tasksBox.replaceChildren(h("h2", { id: "tasks-heading" }, "Tasks"), h("p", { class: "muted" }, "No stage chosen."));
      return;
    }
    let data;
    try {
      data = await api("GET", `/v1/stages/${stage.id}/tasks${query({ page: state.tasksPage, page_size: TASKS_PAGE_SIZE })}`);
    } catch (err) {
      tasksBox.replaceChildren(h("h2", { id: "tasks-heading" }, `Tasks of stage ${stage.order}`), errorBox(err));
      return;
    }
    const pages = Math.max(1, Math.ceil(data.total / TASKS_PAGE_SIZE));
    const rows = data.items.map((t) => h("tr", {},
      h("td", { class: "mono" }, h("span", { title: t.id }, t.id.slice(0, 8))),
      h("td", { class: "result mono hide-narrow" }, clipped(t.data)),
      h("td", {}, statusBadge(t.status)),
      h("td", { class: "progress-cell" }, t.progress === undefined || t.progress === null ? "—" : `${t.progress} %`,
        t.progressMessage ? h("span", { class: "muted" }, ` ${t.progressMessage}`) : null),
      h("td", { class: "num" }, `${t.attempts} / ${t.maxAttempts}`),
      h("td", {}, t.worker || "—"),
      h("td", {}, t.reason || "—"),
      h("td", { class: "result mono" }, t.result === undefined || t.result === null ? "—" : JSON.stringify(t.result)),
      h("td", { class: "hide-narrow" }, when(t.startTime)),
      h("td", { class: "num took" }, took(t))));
    tasksBox.replaceChildren(
      h("h2", { id: "tasks-heading" }, `Tasks of stage ${stage.order} (${data.total})`),
      listTable(["Task", { narrow: "Input" }, "Status", "Progress", "Attempts", "Worker", "Reason", "Result", { narrow: "Started" }, "Took"], rows),
      pager(state.tasksPage, pages, (p) => { state.tasksPage = p; refresh(); }, "tasks"));
  }

  async function renderEvents() {
    let data;
    try {
      data = await api("GET", `/v1/jobs/${jobId}/events${query({ page: state.eventsPage, page_size: EVENTS_PAGE_SIZE, newest_first: true })}`);
    } catch (err) {
      eventsBox.replaceChildren(h("h2", { id: "events-heading" }, "History"), errorBox(err));
      return;
    }
    const pages = Math.max(1, Math.ceil(data.total / EVENTS_PAGE_SIZE));
    const rows = data.items.map((e) => h("tr", {},
      h("td", {}, when(e.time)),
      h("td", {}, e.entity),
      h("td", { class: "mono" }, h("span", { title: e.entityId }, String(e.entityId).slice(0, 8))),
      e.name
        ? h("td", { class: "entry" }, `${e.level}: ${e.name}`, e.message ? h("span", { class: "muted" }, ` ${e.message}`) : null)
        : h("td", {}, e.fromStatus ? statusBadge(e.fromStatus) : "—", " → ", statusBadge(e.toStatus)),
      h("td", { class: "hide-narrow" }, e.worker || "—"),
      h("td", { class: "hide-narrow" }, e.reason || "—"),
      h("td", { class: "by mono" }, e.principal || "—")));
    eventsBox.replaceChildren(
      h("h2", { id: "events-heading" }, `History (${data.total} events)`),
      listTable(["Time", "Of", "Id", "Change", { narrow: "Worker" }, { narrow: "Reason" }, "By"], rows),
      pager(state.eventsPage, pages, (p) => { state.eventsPage = p; refresh(); }, "events"));
  }

  async function renderOutputs(job) {
    let assets;
    try {
      assets = await api("GET", `/v1/jobs/${jobId}/assets${query({ page: 1, page_size: OUTPUTS_SHOWN })}`);
    } catch (err) {
      outputsBox.replaceChildren(errorBox(err));
      return;
    }
    if (job.result === undefined && !assets.total) {
      outputsBox.replaceChildren();
      return;
    }
    const rows = assets.items.map((a) => h("tr", {},
      h("td", {}, a.type),
      h("td", {}, a.name || "—"),
      h("td", { class: "mono" }, /^https?:\/\//.test(a.uri) ? h("a", { href: a.uri, rel: "noopener noreferrer" }, a.uri) : a.uri),
      h("td", {}, a.sizeBytes === undefined ? "—" : bytes(a.sizeBytes)),
      h("td", { class: "mono hide-narrow" }, a.taskId ? a.taskId.slice(0, 8) : "—"),
      h("td", { class: "hide-narrow" }, when(a.createdAt))));
    outputsBox.replaceChildren(
      h("h2", { id: "outputs-heading" }, "What it produced"),
      job.result !== undefined ? h("div", {}, h("h3", {}, "Result"), h("pre", { id: "job-result" }, JSON.stringify(job.result, null, 2))) : null,
      assets.total ? h("div", {},
        h("h3", {}, assets.total > assets.items.length ? `Assets (the first ${assets.items.length} of ${assets.total})` : `Assets (${assets.total})`),
        listTable(["Type", "Name", "Where", "Size", { narrow: "Task" }, { narrow: "Recorded" }], rows)) : null);
  }

  async function refresh() {
    let job;
    try {
      job = await api("GET", `/v1/jobs/${jobId}?should_return_stages=true`);
    } catch (err) {
      keepFocus(() => head.replaceChildren(h("h1", { id: "job-heading" }, "Job"), errorBox(err)));
      return;
    }
    const stages = job.stages || [];
    if (!state.stageId && stages.length) {
      // The stage that failed the job, else the first still running or to run.
      const failed = stages.find((s) => s.id === job.failedStageId);
      state.stageId = (failed || stages.find((s) => !FINAL.has(s.status)) || stages[stages.length - 1]).id;
    }
    const key = focusedKey();
    state.job = job;
    await Promise.all([renderTasks(stages), renderEvents(), renderTimeline(job), renderOutputs(job)]);
    renderHead(job);
    renderStages(job);
    restoreFocus(key);
    const done = stages.filter((s) => s.status === "COMPLETED").length;
    say(`Job ${job.status}, ${progressOf(job)} %; ${done} of ${stages.length} stages completed`);
  }
  return { refresh };
}

// ---- stage types ---------------------------------------------------------------------

// A list page's data: the answer to GET `path`, or null with the error shown in `box`.
async function fetchFor(box, path) {
  try {
    return await api("GET", path);
  } catch (err) {
    keepFocus(() => box.replaceChildren(errorBox(err)));
    return null;
  }
}

const OUTPUTS_SHOWN = 100;

function bytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i += 1; }
  return i === 0 ? `${n} B` : `${n.toFixed(1)} ${units[i]}`;
}

// A retry policy in words: "wait 5 s, 2 times longer each time, at most 5 min 0 s; jitter 50 %;
// never retried: ValidationError".
function retryPolicyText(p) {
  const parts = [`wait ${age(p.initialDelaySeconds)}, ${p.multiplier} times longer each time, at most ${age(p.maxDelaySeconds)}`];
  if (p.jitter) parts.push(`jitter ${Math.round(p.jitter * 100)} %`);
  if (p.nonRetryableErrors && p.nonRetryableErrors.length) parts.push(`never retried: ${p.nonRetryableErrors.join(", ")}`);
  return parts.join("; ");
}

function age(seconds) {
  if (seconds === null || seconds === undefined) return "—";
  if (seconds < 60) return `${Math.round(seconds)} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ${Math.round(seconds % 60)} s`;
  return `${Math.floor(seconds / 3600)} h ${Math.floor((seconds % 3600) / 60)} min`;
}

// A stage type's limits in words: "3 in flight, 20/s (burst 20)", or "—".
function limitsText(t) {
  const parts = [];
  if (t.maxInFlight != null) parts.push(`${t.maxInFlight} in flight`);
  if (t.ratePerSecond != null) parts.push(`${t.ratePerSecond}/s (burst ${t.burst})`);
  return parts.length ? parts.join(", ") : "—";
}

// A list page's frame: its heading, what it lists, a place for notices, and the list.
function listPage(id, title, about) {
  const box = h("section", { "aria-labelledby": `${id}-heading` });
  const notice = h("div", {});
  view.replaceChildren(h("h1", { id: `${id}-heading` }, title), h("p", { class: "muted" }, about), notice, box);
  document.title = `${title} · Jobnik`;
  return { box, notice };
}

function stageTypesPage() {
  const { box, notice } = listPage("types", "Stage types", "Work in stages that may run: tasks waiting to be claimed, tasks in flight, failed tasks, and how long the oldest has waited. A paused stage type hands out none of its tasks, in any job, until it is resumed; a limited one no more than its limits allow, across every worker.");

  async function toggle(t) {
    const pausing = !t.paused;
    const text = pausing
      ? `No task of stage type ${t.type} will be handed out, in any job, until it is resumed. Running tasks go on.`
      : `Tasks of stage type ${t.type} will be handed out again.`;
    if (!(await confirmAction(pausing ? "Pause stage type?" : "Resume stage type?", text, pausing ? "Pause" : "Resume", false))) return;
    try {
      await api(pausing ? "PUT" : "DELETE", `/v1/stage-types/${encodeURIComponent(t.type)}/pause`);
      notice.replaceChildren();
      say(`Stage type ${t.type} ${pausing ? "paused" : "resumed"}`);
    } catch (err) {
      notice.replaceChildren(errorBox(err));
    }
    await refresh();
  }

  async function refresh() {
    const data = await fetchFor(box, "/v1/stage-types");
    if (!data) return;
    const rows = data.items.map((t) => h("tr", { "data-stage-type": t.type },
      h("th", { scope: "row", class: "mono" },
        h("a", { href: `#/stage-types/${encodeURIComponent(t.type)}`, title: `Flow of ${t.type} over the last hour` }, t.type)),
      h("td", { class: "num waiting" }, t.waiting),
      h("td", { class: "num in-flight" }, t.inFlight),
      h("td", { class: "num" }, t.expiring),
      h("td", { class: "num failed" }, t.failed),
      h("td", { class: "num" }, age(t.oldestWaitingSeconds)),
      h("td", { class: "paused" }, t.paused ? statusBadge("PAUSED") : "—"),
      h("td", { class: "limits" }, limitsText(t)),
      h("td", {}, h("button", { type: "button", class: "secondary", "data-key": `toggle-${t.type}`,
        onclick: () => toggle(t) }, `${t.paused ? "Resume" : "Pause"} ${t.type}`))));
    keepFocus(() => box.replaceChildren(data.items.length
      ? listTable(["Stage type", "Waiting", "In flight", "Lease expiring", "Failed", "Oldest waiting", "Paused", "Limits", "Action"], rows, "Stage types")
      : h("p", {}, "No stage has work to hand out.")));
    say(`${data.total} stage types with work`);
  }
  return { refresh };
}

// ---- a stage type's flow -------------------------------------------------------------

const FLOW_SERIES = [["created", "Created"], ["completed", "Completed"], ["failed", "Failed"], ["retried", "Retried"]];

// Per minute, a group of four bars (created, completed, failed, retried) on one scale.
function flowChart(type, minutes) {
  const WIDTH = 960, HEIGHT = 180, TOP = 18, BOTTOM = 20, LEFT = 40;
  const most = Math.max(1, ...minutes.flatMap((m) => FLOW_SERIES.map(([k]) => m[k])));
  const slot = (WIDTH - LEFT) / minutes.length;
  const bar = Math.max(1, (slot - 2) / FLOW_SERIES.length);
  const y = (n) => TOP + (HEIGHT - TOP - BOTTOM) * (1 - n / most);
  const parts = [];
  minutes.forEach((m, i) => {
    FLOW_SERIES.forEach(([key, label], j) => {
      if (!m[key]) return;
      parts.push(svg("rect", { x: LEFT + i * slot + 1 + j * bar, y: y(m[key]), width: bar, height: y(0) - y(m[key]), class: `flow-bar flow-${key}`, "data-minute": m.start, "data-series": key },
        svg("title", {}, `${clockTime(new Date(m.start)).slice(0, 16)}: ${m[key]} ${label.toLowerCase()}`)));
    });
  });
  const axis = [0, Math.floor((minutes.length - 1) / 2), minutes.length - 1].map((i, n) =>
    svg("text", { x: LEFT + i * slot + (n === 2 ? slot : 0), y: HEIGHT - 4, class: "tl-axis", "text-anchor": n === 0 ? "start" : n === 2 ? "end" : "middle" },
      clockTime(new Date(minutes[i].start)).slice(11, 16)));
  const scale = [most, 0].map((n) => svg("text", { x: LEFT - 4, y: y(n) + 4, class: "tl-axis", "text-anchor": "end" }, String(n)));
  const totals = FLOW_SERIES.map(([key, label]) => `${minutes.reduce((sum, m) => sum + m[key], 0)} ${label.toLowerCase()}`).join(", ");
  return svg("svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, width: WIDTH, height: HEIGHT, class: "flow", role: "img",
    "aria-label": `Tasks of ${type} a minute over ${minutes.length} minutes: ${totals}` },
  svg("line", { x1: LEFT, x2: WIDTH, y1: y(0), y2: y(0), class: "flow-base" }), scale, axis, parts);
}

function stageTypePage(type) {
  const { box, notice } = listPage("flow", `Stage type ${type}`, "Its tasks created, completed, failed and retried each minute over the last hour, in every job, from the event log.");
  view.prepend(h("p", {}, h("a", { href: "#/stage-types" }, "← All stage types")));
  notice.remove();

  async function refresh() {
    const data = await fetchFor(box, `/v1/stage-types/${encodeURIComponent(type)}/flow?minutes=60`);
    if (!data) return;
    const legend = h("ul", { class: "flow-legend" }, FLOW_SERIES.map(([key, label]) =>
      h("li", {}, h("span", { class: `swatch flow-${key}`, "aria-hidden": "true" }), label)));
    const busy = data.minutes.filter((m) => FLOW_SERIES.some(([k]) => m[k]));
    const rows = busy.slice().reverse().map((m) => h("tr", { "data-minute": m.start },
      h("th", { scope: "row" }, when(m.start)),
      FLOW_SERIES.map(([key]) => h("td", { class: `num ${key}` }, m[key]))));
    keepFocus(() => box.replaceChildren(legend, flowChart(type, data.minutes),
      busy.length
        ? listTable(["Minute", ...FLOW_SERIES.map(([, label]) => label)], rows, `Minutes of ${type} with moves, newest first`)
        : h("p", {}, "No task of this type moved in the last hour.")));
    say(`${busy.length} minutes with moves`);
  }
  return { refresh };
}

// ---- workers -------------------------------------------------------------------------

function workersPage() {
  const { box } = listPage("workers", "Workers", "Named workers seen claiming lately, or holding a task: what they claim, the tasks they hold, when each was last seen.");

  async function refresh() {
    const data = await fetchFor(box, "/v1/workers");
    if (!data) return;
    const now = Date.now();
    const rows = data.items.map((w) => h("tr", { "data-worker": w.name },
      h("th", { scope: "row", class: "mono" }, w.name),
      h("td", {}, w.stageTypes.join(", ")),
      h("td", { class: "num in-flight" }, w.inFlight),
      h("td", { class: "last-seen" }, `${age(Math.max(0, (now - Date.parse(w.lastSeen)) / 1000))} ago`),
      h("td", {}, w.firstSeen ? when(w.firstSeen) : "—"),
      h("td", { class: "mono" }, w.principal || "—")));
    keepFocus(() => box.replaceChildren(data.items.length
      ? listTable(["Worker", "Stage types", "In flight", "Last seen", "First seen", "Token"], rows, "Workers")
      : h("p", {}, `No worker has claimed in the last ${age(data.windowSeconds)}.`)));
    say(`${data.total} workers`);
  }
  return { refresh };
}

function deadLettersPage() {
  const { box, notice } = listPage("dead", "Dead letters", "Tasks that failed for good, the latest first, with the reason of their last failure. Retry replays the task's FAILED job (its failed stage runs again); Discard takes the task off this list and leaves it FAILED.");

  async function handle(verb, d) {
    const retrying = verb === "retry";
    const text = retrying
      ? `Retry job “${d.jobName}”? Its failed stage runs again, this task with fresh attempts.`
      : `Discard task ${d.task.id.slice(0, 8)} of “${d.jobName}” from the dead letters? It stays FAILED.`;
    if (!(await confirmAction(retrying ? "Retry dead letter?" : "Discard dead letter?", text, retrying ? "Retry" : "Discard", !retrying))) return;
    try {
      const done = await api("POST", `/v1/dead-letters/${verb}`, { taskIds: [d.task.id] });
      notice.replaceChildren(...done.skipped.map((k) => h("div", { class: "error", role: "status" }, k.message)));
      say(`${retrying ? "Retried" : "Discarded"}: ${done.tasks.length} task`);
    } catch (err) {
      notice.replaceChildren(errorBox(err));
    }
    await refresh();
  }

  async function refresh() {
    const data = await fetchFor(box, `/v1/dead-letters${query({ page: 1, page_size: 50 })}`);
    if (!data) return;
    const rows = data.items.map((d) => {
      const last = d.errors.length ? d.errors[d.errors.length - 1].reason : d.task.reason;
      return h("tr", { "data-task-id": d.task.id },
        h("td", { class: "mono", title: d.task.id }, d.task.id.slice(0, 8)),
        h("td", {}, h("a", { href: `#/jobs/${d.jobId}` }, d.jobName), " ", statusBadge(d.jobStatus)),
        h("td", { class: "mono" }, d.stageType),
        h("td", { class: "num" }, d.task.attempts),
        h("td", { class: "hide-narrow" }, when(d.task.endTime)),
        h("td", { class: "reason" }, last || "—"),
        h("td", {}, h("div", { class: "buttons" },
          d.jobStatus === "FAILED" ? h("button", { type: "button", "data-key": `retry-${d.task.id}`, onclick: () => handle("retry", d) }, "Retry") : null,
          h("button", { type: "button", class: "secondary", "data-key": `discard-${d.task.id}`, onclick: () => handle("discard", d) }, "Discard"))));
    });
    const more = data.total > data.items.length ? h("p", { class: "muted" }, `The latest ${data.items.length} of ${data.total}.`) : null;
    keepFocus(() => box.replaceChildren(data.items.length
      ? h("div", {}, listTable(["Task", "Job", "Stage type", "Attempts", { narrow: "Ended" }, "Last error", "Actions"], rows, "Dead letters"), more || "")
      : h("p", {}, "No task has failed for good.")));
    say(`${data.total} dead letters`);
  }
  return { refresh };
}

// ---- schedules -----------------------------------------------------------------------

function scheduleTiming(sc) {
  if (sc.cron) return sc.timezone === "UTC" ? sc.cron : `${sc.cron} (${sc.timezone})`;
  return `every ${age(sc.intervalSeconds)}`;
}

function schedulesPage() {
  const { box, notice } = listPage("schedules", "Schedules", "Named schedules make a job from their template at each time of a cron expression or an interval. Run now makes one at once; a paused schedule makes none until it is resumed, and goes on from its next time.");

  async function act(sc, verb) {
    const name = encodeURIComponent(sc.name);
    const asks = {
      run: ["Run schedule now?", `Make the job of schedule ${sc.name} now, beside its times.`, "Run now", false],
      pause: ["Pause schedule?", `Schedule ${sc.name} will make no job until it is resumed.`, "Pause", false],
      resume: ["Resume schedule?", `Schedule ${sc.name} goes on from its next time; the times it was paused for are not made up.`, "Resume", false],
      delete: ["Delete schedule?", `Delete schedule ${sc.name} and its runs? The jobs it made stay.`, "Delete", true],
    };
    if (!(await confirmAction(...asks[verb]))) return;
    const calls = {
      run: ["POST", `/v1/schedules/${name}/run`],
      pause: ["PUT", `/v1/schedules/${name}/pause`],
      resume: ["DELETE", `/v1/schedules/${name}/pause`],
      delete: ["DELETE", `/v1/schedules/${name}`],
    };
    try {
      const done = await api(...calls[verb]);
      notice.replaceChildren(verb === "run" && done.jobId
        ? h("p", { role: "status" }, "Made job ", h("a", { href: `#/jobs/${done.jobId}` }, done.jobId.slice(0, 8)))
        : "");
      say(`Schedule ${sc.name}: ${verb === "run" ? "run now" : verb === "delete" ? "deleted" : `${verb}d`}`);
    } catch (err) {
      notice.replaceChildren(errorBox(err));
    }
    await refresh();
  }

  async function refresh() {
    const data = await fetchFor(box, `/v1/schedules${query({ page: 1, page_size: 100 })}`);
    if (!data) return;
    const rows = data.items.map((sc) => h("tr", { "data-schedule": sc.name },
      h("th", { scope: "row", class: "mono", title: sc.description || "" }, sc.name),
      h("td", { class: "mono timing" }, scheduleTiming(sc)),
      h("td", { class: "next" }, sc.paused ? statusBadge("PAUSED") : when(sc.nextRunAt)),
      h("td", { class: "last" }, sc.lastJobId ? h("a", { href: `#/jobs/${sc.lastJobId}` }, when(sc.lastRunAt)) : "—"),
      h("td", { class: "num runs" }, sc.runCount),
      h("td", { class: "num skipped" }, sc.skippedCount),
      h("td", {}, h("div", { class: "buttons" },
        h("button", { type: "button", "data-key": `run-${sc.name}`, onclick: () => act(sc, "run") }, `Run ${sc.name} now`),
        h("button", { type: "button", class: "secondary", "data-key": `toggle-${sc.name}`,
          onclick: () => act(sc, sc.paused ? "resume" : "pause") }, `${sc.paused ? "Resume" : "Pause"} ${sc.name}`),
        h("button", { type: "button", class: "secondary", "data-key": `delete-${sc.name}`, onclick: () => act(sc, "delete") }, `Delete ${sc.name}`)))));
    keepFocus(() => box.replaceChildren(data.items.length
      ? listTable(["Schedule", "When", "Next", "Last job", "Jobs made", "Skipped", "Actions"], rows, "Schedules")
      : h("p", {}, "No schedule yet: PUT /v1/schedules/{name}, jobnik schedules put, or the SDK's put_schedule.")));
    say(`${data.total} schedules`);
  }
  return { refresh };
}

// ---- routing -------------------------------------------------------------------------

async function route() {
  const hash = location.hash || "#/jobs";
  const [path, search] = hash.slice(1).split("?");
  const params = new URLSearchParams(search || "");
  const match = path.match(/^\/jobs\/([0-9a-fA-F-]{36})$/);
  const typeMatch = path.match(/^\/stage-types\/([^/]+)$/);
  const pages = {
    "/stage-types": stageTypesPage, "/workers": workersPage, "/dead-letters": deadLettersPage,
    "/schedules": schedulesPage,
  };
  const page = match ? jobPage(match[1])
    : typeMatch ? stageTypePage(decodeURIComponent(typeMatch[1]))
    : pages[path] ? pages[path]() : jobsPage(params);
  current = page;
  await page.refresh();
  if (current === page) schedule();
}

let lastPath = null;
window.addEventListener("hashchange", () => {
  const path = location.hash.split("?")[0];
  route().then(() => {
    if (path !== lastPath) view.focus();  // a new page: start reading it from the top
    lastPath = path;
  });
});
lastPath = (location.hash || "#/jobs").split("?")[0];
route();
