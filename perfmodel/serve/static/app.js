// perfmodel's planner page: builds the Python API's keywords from the form, asks the JSON API, draws the answer.
// Every piece of text from the user or the server is inserted with textContent (never innerHTML).
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const HINTS = {
  predict: "One prediction: step time and its breakdown, throughput, memory, time to train, cost and energy.",
  compare: "The same workload on several systems and GPU counts (e.g. h100-sxm, b200:fp8 at 256,512,1024; or a count each: gb300@512, h100-sxm@1024).",
  plan: "The cheapest GPU count of each candidate that trains the tokens within the deadline (within a budget alone, the fastest), losses included.",
};
const WHOLE = ["tp", "pp", "cp", "ep", "mbs", "gbs", "seq_len", "max_gpus"];
const NUMBER = ["usd_per_gpu_hour", "budget_usd", "confidence"];
const INPUT_OF = { deadline_s: "deadline_days", model_file: "model_file", hardware_files: "hardware_files", scenario_file: "scenario_file", system: "gpu" };
const DEFAULT_MODEL = "llama3.1-70b";
// The fields a scenario answers: those the form fills by default would override the scenario's own (keywords
// override a file, as flags do: Llama 3.1 405B's campaign ran as 70B on 256 H100), and the others' hints ("fp8
// (default)", "model default") are not the scenario's.
const FROM_SCENARIO = ["model", "tokens", "seq_len", "gbs", "gpu", "precision", "n_gpus", "usd_per_gpu_hour"];
// The GPU count field's hint follows the question (Predict and Compare share the field): Compare's list, "256 or
// 256,512,1024", was offered under Predict, which refuses a list.
const COUNT_HINTS = { predict: "e.g. 256", compare: "256 or 256,512,1024" };
let question = "predict";
let asked = null; // the question answered on the page and its request body, for the downloads
let names = { models: {}, accelerators: {} }; // ids to the names the CLI's tables and plots print (/api/catalogue)
let precisions = new Set(); // the precisions of the catalogue's accelerators (/api/catalogue), in its order

const $ = (selector) => document.querySelector(selector);

function element(tag, text, attributes = {}) {
  const made = document.createElement(tag);
  if (text !== undefined && text !== null) made.textContent = String(text);
  for (const [name, value] of Object.entries(attributes)) made.setAttribute(name, value);
  return made;
}

// A legend's coloured square, before the name of what is drawn in its colour.
const swatch = (colour) => element("span", null, { class: "swatch", style: `background: ${colour}` });

function svgElement(tag, attributes, text) {
  const made = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) made.setAttribute(name, value);
  if (text !== undefined) made.textContent = String(text);
  return made;
}

// ---- numbers as a capacity planner reads them: measured and predicted values to a fixed count of significant
// digits, trailing zeros kept ("29.0%" beside "29.6%", "2.00×" beside "1.37×"); counts whole; round values (axis
// ticks, the user's own goal) as written.
// A value the answer gives: neither null (JSON's "none") nor undefined (a field the answer lacks).
const present = (x) => x !== null && x !== undefined;

function number(x, digits = 3) {
  if (!present(x) || Number.isNaN(x)) return "–";
  return Number(x).toLocaleString("en-US", { minimumSignificantDigits: digits, maximumSignificantDigits: digits });
}
const whole = (n) => (!present(n) ? "–" : Number(n).toLocaleString("en-US", { maximumFractionDigits: 0 }));
const counted = (n, noun) => `${whole(n)} ${noun}${n === 1 ? "" : "s"}`; // "1 size", not "1 sizes"
const plain = (x) => Number(x).toLocaleString("en-US", { maximumSignificantDigits: 6 });
function usd(x) {
  if (!present(x)) return "–";
  const scaled = [[1e9, "B"], [1e6, "M"], [1e3, "k"]].find(([size]) => Math.abs(x) >= size);
  return scaled ? `$${number(x / scaled[0], 3)}${scaled[1]}` : `$${number(x, 3)}`;
}
// A large count in trillions, billions or millions (tokens, GPU-hours), to three significant digits.
const compact = (n) => (n >= 1e12 ? `${number(n / 1e12)}T` : n >= 1e9 ? `${number(n / 1e9)}B` : n >= 1e6 ? `${number(n / 1e6)}M` : number(n));
const chance = (p) => (!present(p) ? "–" : p < 0.01 ? "< 0.01" : p > 0.99 ? "> 0.99" : p.toFixed(2));
const percent = (x) => (!present(x) ? "–" : `${(100 * x).toFixed(1)}%`);
const days = (seconds) => (!present(seconds) ? null : seconds / 86400);

// Models and accelerators by name, as the CLI's tables and plots print them (outputs/plot.py series_label); the id
// where it is the user's own file.
const modelName = (p) => names.models[p.model] || p.model;
// A campaign whose phases differ in precision has none of its own (null).
const seriesName = (p) => `${names.accelerators[p.accelerator] || p.accelerator}${p.precision ? ` ${p.precision.toUpperCase()}` : ""}`;

// ---- the form
function showQuestion(chosen) {
  question = chosen;
  for (const button of document.querySelectorAll("#questions button")) {
    button.classList.toggle("chosen", button.dataset.question === chosen);
  }
  for (const part of document.querySelectorAll("[data-for]")) {
    part.hidden = !part.dataset.for.split(" ").includes(chosen);
  }
  $("#hint").textContent = HINTS[chosen];
  const counts = $("#n_gpus");
  if (COUNT_HINTS[chosen]) counts.dataset.hint = COUNT_HINTS[chosen];
  if (!scenarioGiven()) counts.placeholder = counts.dataset.hint; // a scenario's own count: "the scenario's"
  if (asked && asked.question !== chosen) $("#result").hidden = true;
  $("#error").hidden = true;
}

function shown(input) {
  return !input.closest("[hidden]");
}

function listOf(text) {
  return text.split(/[\s,]+/).filter((part) => part !== "");
}

// A plan's candidates, each "ID[:PRECISION[,PRECISION...]]" (plan()'s own syntax) in a comma-separated list: a
// precision after a comma belongs to the candidate before it. Split at every comma, "b200:fp8,bf16" (B200 in two
// precisions) was refused as "--gpu bf16: unknown accelerator or system 'bf16'".
function candidates(text) {
  const found = [];
  for (const part of listOf(text)) {
    const last = found.length - 1;
    if (last >= 0 && found[last].includes(":") && precisions.has(part.toLowerCase())) found[last] += `,${part}`;
    else found.push(part);
  }
  return found;
}

// A number typed as text stays text when it is not one, so that the API refuses it with its own message.
const numeric = (text) => (text !== "" && Number.isFinite(Number(text)) ? Number(text) : text);

// The deadline typed in days as plan()'s deadline_s, checked here, in the field's unit: -1 day was refused as
// "deadline_s=-86400: allowed a finite number above 0", a name and a value the form does not show.
// plan()'s bound on deadline_s (/api/catalogue's limits), said here in days too.
let maxDeadlineDays = Infinity;
function seconds(daysText) {
  const count = Number(daysText);
  if (!(count > 0 && count <= maxDeadlineDays)) {
    const most = Math.floor(maxDeadlineDays).toLocaleString("en-US");
    throw { error: `deadline_days=${daysText}: allowed a number of days above 0 up to ${most}`, field: "deadline_days" };
  }
  return count * 86400;
}

// Predict's GPU and count fields are Compare's too, and a list typed there was refused in the API's words:
// "n_gpus=[64, 128]: Input should be a valid integer", "unknown GPU 'h100-sxm, b200'".
function one(name, value, noun) {
  if (question === "predict" && listOf(value).length > 1) throw { error: `${name}=${value}: Predict answers one ${noun}; Compare takes several`, field: name };
  return value;
}

// The Python API's keywords of the form's shown fields; a number field the browser cannot read is refused here, and
// a plan without a goal (plan()'s own line names the CLI's flags, --deadline and --budget, which the form lacks).
function keywords() {
  const body = {};
  for (const input of $("#question").querySelectorAll("[name]")) {
    if (!shown(input)) continue;
    if (input.validity && input.validity.badInput) throw { error: `${input.name}: not a number`, field: input.name };
    const value = input.value.trim();
    if (value === "") continue;
    const name = input.name;
    if (name === "deadline_days") body.deadline_s = seconds(value);
    else if (name === "gpu") body.gpu = question === "predict" ? one(name, value, "GPU or system") : question === "plan" ? candidates(value) : listOf(value);
    else if (name === "n_gpus") {
      const counts = listOf(one(name, value, "GPU count")).map(numeric);
      body.n_gpus = counts.length > 1 ? counts : counts[0];
    } else if (WHOLE.includes(name) || NUMBER.includes(name)) body[name] = numeric(value);
    else body[name] = value;
  }
  // Systems all at their own counts (b200@32) leave the count field's untouched default unsent: the API refuses a
  // count no row uses, which a typed one is and the pre-filled 256 is not.
  const counts = $("#n_gpus");
  if (Array.isArray(body.gpu) && body.gpu.every((g) => g.includes("@")) && counts.value.trim() === counts.defaultValue) delete body.n_gpus;
  if (question === "plan" && body.deadline_s === undefined && body.budget_usd === undefined) {
    throw { error: "deadline_days and budget_usd: both empty; a plan needs a goal: a deadline in days, a budget in USD, or both", field: "deadline_days" };
  }
  return body;
}

// A scenario chosen from the list or uploaded.
const scenarioGiven = () => $("#scenario").value !== "" || $("#scenario_file").files.length > 0;

// A scenario chosen (bundled or uploaded) empties the fields it answers, so that only what is typed there overrides
// it; none chosen, they are the form's defaults again.
function scenarioChosen() {
  const chosen = scenarioGiven();
  for (const name of FROM_SCENARIO) {
    const input = $(`[name=${name}]`), hint = chosen ? "the scenario's" : input.dataset.hint;
    input.value = chosen ? "" : name === "model" ? DEFAULT_MODEL : input.defaultValue || "";
    if (input.tagName === "SELECT") input.options[0].textContent = hint;
    else input.placeholder = hint;
  }
  $("#gpu").required = !chosen;
  modelFileChosen();
}

// A model file chosen empties the Model list, as a scenario does the fields it answers (the list showed
// llama3.1-70b while the file's model was answered); a model picked from the list drops the file.
function modelFileChosen() {
  const model = $("#model"), file = $("#model_file").files.length > 0, scenario = scenarioGiven();
  if (file) model.value = "";
  else if (model.value === "" && !scenario) model.value = DEFAULT_MODEL;
  model.options[0].textContent = file ? "the model file's" : scenario ? "the scenario's" : model.dataset.hint;
}

function modelPicked() {
  if ($("#model").value === "") return;
  $("#model_file").value = "";
  modelFileChosen();
}

async function uploads(body) {
  const scenario = $("#scenario_file").files[0];
  if (scenario) {
    delete body.scenario;
    body.scenario_file = { name: scenario.name, text: await scenario.text() };
  }
  const model = $("#model_file").files[0];
  if (model) {
    delete body.model;
    body.model_file = { name: model.name, text: await model.text() };
  }
  const hardware = [...$("#hardware_files").files];
  if (hardware.length) body.hardware_files = await Promise.all(hardware.map(async (f) => ({ name: f.name, text: await f.text() })));
  return body;
}

function shareLink() {
  const params = new URLSearchParams({ q: question });
  for (const input of $("#question").querySelectorAll("[name]")) {
    if (input.value.trim() !== "" && shown(input)) params.set(input.name, input.value.trim());
  }
  return `${location.pathname}?${params}`;
}

// A link's value a list does not offer (a model id since renamed, a typo) is added to it, so that the API refuses it
// with its own line; a <select> set to a value it lacks shows nothing and the question ran without it.
function refill(params) {
  if (params.has("q") && HINTS[params.get("q")]) showQuestion(params.get("q"));
  if (params.has("scenario")) { // the fields it answers left to it, but those the link names
    $("#scenario").value = params.get("scenario");
    scenarioChosen();
  }
  for (const input of $("#question").querySelectorAll("[name]")) {
    if (params.has(input.name)) {
      const value = params.get(input.name);
      if (input.tagName === "SELECT" && ![...input.options].some((o) => o.value === value)) input.append(element("option", value, { value }));
      input.value = value;
    } else if (input.closest("details") || input.name === "budget_usd" || input.name === "max_gpus") input.value = "";
  }
  // A link that fixes part of the layout shows it: folded away, pp=2 answered a layout the form seemed to leave open.
  unfold((input) => input.value !== "");
}

// The form's folded sections that hold a field `shows` picks are opened.
function unfold(shows) {
  for (const folded of document.querySelectorAll("#question details")) {
    if ([...folded.querySelectorAll("[name]")].some(shows)) folded.open = true;
  }
}

// ---- asking the API
async function run(event) {
  if (event) event.preventDefault();
  for (const wrong of document.querySelectorAll(".wrong")) wrong.classList.remove("wrong");
  $("#error").hidden = true;
  $("#run").disabled = true;
  $("#status").textContent = question === "plan" ? "Planning…" : "Predicting…";
  const link = shareLink();
  history.replaceState(null, "", link);
  $("#share").href = link;
  $("#share").hidden = false;
  const started = performance.now();
  let response, answer, body;
  try {
    body = await uploads(keywords());
    response = await fetch(`/api/${question}`, {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
    });
    answer = await response.json();
  } catch (error) {
    answer = error.error ? error : { error: `no answer from the server (${error.message})`, field: null };
  } finally {
    $("#run").disabled = false;
  }
  if (!response || !response.ok) return refused(answer);
  try {
    draw(answer); // a page bug left the status on "Planning…" and showed nothing: say so instead
  } catch (error) {
    return refused({ error: `page error: ${error.message}`, field: null });
  }
  asked = { question, body };
  $("#status").textContent = `answered in ${number((performance.now() - started) / 1000, 2)} s`;
}

function refused(answer) {
  $("#status").textContent = "";
  $("#result").hidden = true;
  $("#error").textContent = `error: ${answer.error}`;
  $("#error").hidden = false;
  const name = INPUT_OF[answer.field] || answer.field;
  const input = name && (document.getElementById(name) || $("#question").querySelector(`[name="${CSS.escape(name)}"]`));
  if (input) input.classList.add("wrong");
  unfold((field) => field === input); // the layout's fields are folded away: tp=3 marked a field not seen
}

async function download(format) {
  const response = await fetch(`/api/export/${asked.question}?format=${format}`, {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(asked.body),
  });
  if (!response.ok) return refused(await response.json());
  const link = element("a", null, { href: URL.createObjectURL(await response.blob()), download: `perfmodel-${asked.question}.${format}` });
  document.body.append(link);
  link.click();
  link.remove();
}

// ---- drawing the answer
function cell(value, text, key, low, high) {
  const td = element("td", text);
  if (key) {
    td.dataset.key = key;
    td.dataset.value = JSON.stringify(value ?? null); // the JSON answer's own value, for the tests and for copying
  }
  // No range beside no value: a candidate without a plan read "– – – –" (its value and range each "–").
  if (present(value) && present(low) && present(high)) td.append(element("span", `${low} – ${high}`, { class: "range" }));
  return td;
}

// A table of `headings` over `rows`; the headings in `text` head columns of text, aligned left.
function table(headings, rows, text = []) {
  const made = element("table");
  const head = element("tr");
  for (const heading of headings) head.append(element("th", heading, text.includes(heading) ? { class: "text" } : {}));
  const thead = element("thead");
  thead.append(head);
  made.append(thead);
  const body = element("tbody");
  // Each cell named by its heading, which a phone's width prints above its value (style.css): at 420 px a plan's
  // table showed its first three columns and scrolled its days, cost and P(deadline) off the screen.
  for (const row of rows) {
    [...row.children].forEach((td, i) => { td.dataset.label = headings[i]; });
    body.append(row);
  }
  made.append(body);
  return made;
}

function row(label, ...cells) {
  const tr = element("tr");
  tr.append(element("td", label), ...cells);
  return tr;
}

// The parallel degrees as the CLI prints them (outputs/plan_report.py layout_label), virtual stages included: a
// layout without its VP cannot be launched; and a MoE model's expert parallelism, which a comparison's rows left out
// (Qwen3-30B-A3B's EP16 on H100).
const stages = (l) => `TP${l.tp} PP${l.pp} VP${l.vp} CP${l.cp} DP${l.dp}${l.ep > 1 ? ` EP${l.ep}` : ""}${l.etp > 1 ? ` ETP${l.etp}` : ""}`;

// The layout as the CLI's tables print it (plan_report.py full_layout): degrees, micro-batch, the global batch where
// `batch` (a count whose batch grows keeps its step time while its throughput doubles: 70B on 512 and 1,024 H100,
// 4.06 and 4.09 s at GBS 512 and 1,024, read as no speed-up), ZeRO stage and recompute. A comparison's rows left the
// last two out: 70B at TP1 PP1 on 256 H100 read as a layout that cannot fit, for the CLI's ZeRO-3
// recompute-selective.
function fullLayout(l, batch = true) {
  const recompute = l.recompute === "none" ? "" : ` recompute-${l.recompute}${l.recompute_layers ? ` (first ${l.recompute_layers} layers)` : ""}`;
  return `${stages(l)} MBS${l.mbs}${batch ? ` GBS${l.gbs}` : ""} ZeRO-${l.zero}${recompute}`;
}

function layout(p) {
  const l = p.parallelism;
  return `${stages(l)}, micro-batch ${l.mbs}, global batch ${l.gbs}, sequence ${l.seq_len}, recompute ${l.recompute}, ZeRO-${l.zero}`;
}

// ---- beyond the evidence (docs/calibration.md "How far from evidence"): a prediction's `evidence.beyond` names the
// axes ("; "-separated) on which no measured run the calibration saw is like it, `evidence.widening` how much wider
// that made its 80% interval (every range shown is the widened one). As the CLI does (outputs/plan_report.py,
// campaign_report.py), a comparison's or a plan's row is marked `*` (a campaign's when a phase is), a campaign's
// phase `[e]`, each with a footnote, and a prediction is warned under its tables.
const BEYOND = "*", BEYOND_PHASE = "[e]";
const EVIDENCE_DOC = 'docs/validation.md, "How far from evidence"';
const axesOf = (p) => (p.evidence && p.evidence.beyond ? p.evidence.beyond.split("; ") : []);
const beyond = (p) => (p.phases || [p]).some((q) => axesOf(q).length > 0); // a campaign: any of its phases
const beyondMark = (p, mark = BEYOND) => (p && beyond(p) ? ` ${mark}` : ""); // p: none for a candidate without a plan
const times = (x) => `${x.toFixed(2)}x`;
const isMoe = (e) => e.model_class.startsWith("MoE");

// An axis as the CLI's warning words it (planning/evidence.py axis_text), the accelerator family unnamed: the
// JSON's evidence does not name it.
function axisText(p, axis) {
  const e = p.evidence, family = "its accelerator family", format = (p.precision || "").toUpperCase();
  const best = present(e.best_measured_model_tflops_per_gpu) ? ` (${number(e.best_measured_model_tflops_per_gpu)} model TFLOP/s per GPU, row ${e.best_measured_row})` : "";
  const texts = {
    "accelerator family": `no measured run on ${family} (interval: generation protocol)`,
    "number format": `no ${format} run on ${family} (interval: precision protocol)`,
    "model class": `no ${e.model_class} model measured on ${family}`,
    "scale band": `no ${e.model_class} model measured on ${e.scale_band} of ${family}`,
    "layout class": `layout class ${e.layout_class} never measured for ${e.model_class} models on ${family}`,
    "above best measured": `${times(e.ratio_to_best_measured || 0)} the model TFLOP/s per GPU of the best measured run of this model on ${family} in ${format}${best}`,
  };
  return texts[axis] || axis;
}

const widenedBy = (e) => e.widened_by.split("; ").join(", ");
// Whether every axis beyond widened the interval: the two lists compared as sets, not as joined strings (an order
// apart is no difference).
const allWidened = (e) => {
  const widened = new Set(e.widened_by.split("; "));
  const axes = new Set(e.beyond.split("; "));
  return widened.size === axes.size && [...axes].every((axis) => widened.has(axis));
};

// What the axes did to the 80% interval, naming those that widened it where not all did (a MoE interval is not
// widened: Evidence.warning).
function widening(e) {
  if (e.widened_by) return `80% interval ${times(e.widening)} as wide${allWidened(e) ? "" : ` (by ${widenedBy(e)})`}`;
  return isMoe(e) ? "80% interval not widened: its MoE models are each predicted by a fit without them" : "80% interval not widened";
}

// The lines under a table: `head`, then one per line of `lines` (none: no note).
function footnote(head, lines, kind = "note") {
  if (!lines.length) return [];
  const box = element("div", null, { class: `evidence ${kind}` }), list = element("ul");
  for (const line of lines) list.append(element("li", line));
  box.append(element("p", head), list);
  return [box];
}

// A line per finding of the marked rows (`runs`: each row's name and prediction), naming the rows it is true of, as
// the CLI's campaign groups its phases (campaign_report.py evidence_notes); `where`: the rows' own row, if any.
function findings(runs, said, where = "") {
  const found = new Map();
  for (const [name, p] of runs) {
    if (!p || !beyond(p)) continue;
    const text = said(p);
    found.set(text, [...(found.get(text) || []), name]);
  }
  return [...found].map(([text, names]) => `${names.join(", ")}${where ? ` (${where})` : ""}: ${text}`);
}

// A marked row of a comparison or a plan: its axes and what they did to its interval; a campaign's, its phases'
// axes, each phase told under the phases' table.
function rowFinding(p) {
  if (!p.phases) return `${axesOf(p).join(", ")}; ${widening(p.evidence)}`;
  return `${[...new Set(p.phases.flatMap(axesOf))].join(", ")} in phases marked ${BEYOND_PHASE} below`;
}

const rowsNote = (runs) => footnote(`${BEYOND} beyond the measured runs the calibration saw (${EVIDENCE_DOC}); the 80% ranges shown are the widened ones, and Predict with a row's settings names each axis:`, findings(runs, rowFinding));

// The lines of a campaign's marked phases, as `perfmodel predict` notes them (`where`: the row of a comparison or a
// plan they are of), and their footnote.
const phaseLines = (campaign, where = "") => findings(campaign.phases.map((p) => [p.phase, p]),
  (p) => axesOf(p).map((axis) => axisText(p, axis)).join("; ") + (p.evidence.widened_by ? ` (80% interval ${times(p.evidence.widening)} as wide)` : ""), where);
const phasesEvidence = (lines) => footnote(`${BEYOND_PHASE} beyond the measured runs the calibration saw (${EVIDENCE_DOC}; perfmodel explain --phase NAME shows it):`, lines);

// The warning `perfmodel predict` prints under its table: each axis, and the interval on a predicted time it became.
function evidenceWarning(p) {
  const e = p.evidence, lines = axesOf(p).map((axis) => axisText(p, axis));
  if (e && e.widened_by) lines.push(`80% interval ${times(e.widening)} as wide: x${(p.step_time_s_low / p.step_time_s).toFixed(3)}-x${(p.step_time_s_high / p.step_time_s).toFixed(3)} on a predicted time (${widenedBy(e)})`);
  else if (e && isMoe(e) && lines.length) lines.push(widening(e));
  return footnote(`Warning: beyond the measured runs (${EVIDENCE_DOC}):`, lines, "warning");
}

// A prediction's figures, or a campaign's totals (which have no one step time: its phases' differ).
function summary(p, heading = "Prediction") {
  const lowDays = days(p.time_to_train_s_low), highDays = days(p.time_to_train_s_high);
  return table([heading, "value (80% range)"], [
    ...(present(p.step_time_s) ? [row("Step time, s", cell(p.step_time_s, number(p.step_time_s), "step_time_s", number(p.step_time_s_low), number(p.step_time_s_high)))] : []),
    row("Tokens per second", cell(p.tokens_per_s, number(p.tokens_per_s), "tokens_per_s")),
    row("MFU (of the precision's dense peak)", cell(p.mfu_of_precision, percent(p.mfu_of_precision), "mfu_of_precision")),
    // GiB, as the CLI and vendors quote HBM (an H100's 80 GB is 80 GiB): in the _gb keys' 1e9 bytes it reads 85.9.
    row("Memory per GPU, GiB", cell(p.memory_per_gpu_gib, `${number(p.memory_per_gpu_gib)} of ${number(p.memory_capacity_gib)}`, "memory_per_gpu_gib")),
    row("Time to train, days", cell(p.time_to_train_days, number(p.time_to_train_days), "time_to_train_days", number(lowDays), number(highDays))),
    row("… with failures and losses, days", cell(p.time_to_train_with_losses_days, number(p.time_to_train_with_losses_days), "time_to_train_with_losses_days")),
    row("GPU-hours", cell(p.gpu_hours, number(p.gpu_hours), "gpu_hours", number(p.gpu_hours_low), number(p.gpu_hours_high))),
    row(`Cost at ${usd(p.usd_per_gpu_hour)}/GPU-hour`, cell(p.cost_usd, usd(p.cost_usd), "cost_usd", usd(p.cost_usd_low), usd(p.cost_usd_high))),
    ...priceRange(p),
    row("Energy, MWh", cell(p.energy_kwh, number(p.energy_kwh / 1000), "energy_kwh")),
  ]);
}

// The cost at the price's low and high quote: which offer is bought, not a chance, so a row of its own and never
// shown as the 80% range (cost_usd_at_min_price/_at_max_price are the price range; cost_usd_low/high the model's 80% range).
function priceRange(p) {
  const low = p.min_usd_per_gpu_hour, high = p.max_usd_per_gpu_hour;
  if (!present(low) || !present(high) || low === high) return [];
  return [row(`Cost at the low and high price (${usd(low)} to ${usd(high)}/GPU-hour)`, element("td", `${usd(p.cost_usd_at_min_price)} – ${usd(p.cost_usd_at_max_price)}`))];
}

// The parts the step time is the sum of (physics/step.py BREAKDOWN, then a MoE model's exposed expert all-to-all,
// which a dense model's breakdown lacks): without EP, DeepSeek-V3's shares were of 4.52 s, not its 4.86 s step.
const PARTS = [["compute_s", "compute", "#1f5fa8"], ["tp_comm_exposed_s", "TP comm.", "#6c8ebf"], ["cp_comm_exposed_s", "CP comm.", "#8fb3de"],
  ["pp_bubble_s", "pipeline bubble", "#d9822b"], ["pp_comm_exposed_s", "PP comm.", "#e8b07a"], ["dp_comm_exposed_s", "DP comm.", "#5b9e6f"],
  ["optimizer_s", "optimizer", "#9b6cb0"], ["other_s", "other", "#9aa5b1"], ["ep_comm_exposed_s", "EP all-to-all", "#c25b7a"]];

function breakdown(p) {
  const step = PARTS.reduce((sum, [key]) => sum + (p.breakdown[key] || 0), 0);
  // Each part's name beside its colour in the bar below: the bar's colours were named only in tooltips.
  const rows = PARTS.filter(([key]) => p.breakdown[key] !== undefined).map(([key, name, colour]) => {
    const tr = row(name, cell(p.breakdown[key], number(p.breakdown[key]), `breakdown.${key}`), element("td", percent(p.breakdown[key] / step)));
    tr.firstChild.prepend(swatch(colour));
    return tr;
  });
  const box = element("div");
  box.append(table(["Step time breakdown", "s", "share"], rows));
  const width = 420, bar = svgElement("svg", { width, height: 30, viewBox: `0 0 ${width} 30`, role: "img", "aria-label": "step time breakdown" });
  let x = 0;
  for (const [key, name, colour] of PARTS) {
    const share = (p.breakdown[key] || 0) / step;
    if (share <= 0) continue;
    const rect = svgElement("rect", { x, y: 4, width: share * width, height: 22, fill: colour });
    rect.append(svgElement("title", {}, `${name}: ${percent(share)}`));
    bar.append(rect);
    x += share * width;
  }
  box.append(bar);
  return box;
}

function describe(p) {
  return `${modelName(p)} on ${whole(p.n_gpus)} × ${seriesName(p)} (${p.system}), ${compact(p.tokens_to_train)} tokens`;
}

function drawPredict(p) {
  $("#title").textContent = describe(p);
  $("#verdict").textContent = `Layout: ${layout(p)}${p.fits_in_memory ? "" : " — does not fit in memory"}`;
  const tables = element("div", null, { class: "tables" });
  tables.append(summary(p), breakdown(p));
  $("#tables").replaceChildren(tables, ...evidenceWarning(p));
}

// A campaign's figures of a phase, or of the whole run (its total row, `ranged`: each with its 80% range; a phase's
// beside its figures pushed the table's cost and energy off a 1,280 px screen).
function campaignFigures(p, ranged = false) {
  const range = (low, high) => (ranged ? [low, high] : []);
  return [
    cell(p.tokens_to_train, compact(p.tokens_to_train), "tokens_to_train"), cell(p.step_time_s, number(p.step_time_s), "step_time_s"),
    cell(p.time_to_train_days, number(p.time_to_train_days), "time_to_train_days", ...range(number(days(p.time_to_train_s_low)), number(days(p.time_to_train_s_high)))),
    cell(p.gpu_hours, whole(p.gpu_hours), "gpu_hours", ...range(compact(p.gpu_hours_low), compact(p.gpu_hours_high))),
    cell(p.cost_usd, usd(p.cost_usd), "cost_usd", ...range(usd(p.cost_usd_low), usd(p.cost_usd_high))),
    cell(p.energy_kwh, number(p.energy_kwh / 1000), "energy_kwh", ...range(number(p.energy_kwh_low / 1000), number(p.energy_kwh_high / 1000))),
    cell(p.goodput, percent(p.goodput), "goodput"),
  ];
}

// A campaign (a scenario with [[phase]] tables: README "Campaigns"): a row per phase, as `perfmodel predict` prints
// them, and the total row (its 80% range each phase's bound summed, planning/campaign.py); the totals' summary below.
// The phases' precision is a column where they differ (the title names a common one): with it, the table's energy and
// goodput were past a 1,280 px screen.
function drawCampaign(c) {
  const precision = (p) => (c.precision ? [] : [element("td", p.precision ? p.precision.toUpperCase() : "")]);
  const up = new Set(c.phases.map((p) => p.n_gpus)).size > 1 ? "up to " : "";
  $("#title").textContent = `${modelName(c)} campaign of ${counted(c.phases.length, "phase")} on ${up}${whole(c.n_gpus)} × ${seriesName(c)} (${c.system}), ${compact(c.tokens_to_train)} tokens`;
  const unfit = c.phases.filter((p) => !p.fits_in_memory).map((p) => p.phase);
  $("#verdict").textContent = unfit.length ? `Does not fit in memory: ${unfit.join(", ")}` : "";
  const body = c.phases.map((p) => {
    const l = p.parallelism, tr = element("tr");
    tr.append(cell(p.phase, p.phase + beyondMark(p, BEYOND_PHASE), "phase"), cell(p.n_gpus, whole(p.n_gpus), "n_gpus"), ...precision(p),
      element("td", fullLayout(l, false), { class: "text" }) /* the batch: a column of its own */, cell(l.seq_len, whole(l.seq_len), "seq_len"),
      cell(l.gbs, `${whole(l.gbs)} (${compact(l.gbs * l.seq_len)})`, "gbs"), ...campaignFigures(p));
    return tr;
  });
  const total = element("tr", null, { class: "total" });
  total.append(cell("total", "total", "phase"), cell(c.n_gpus, whole(c.n_gpus), "n_gpus"), ...precision(c),
    element("td", null, { class: "text" }), element("td"), element("td"), ...campaignFigures(c, true));
  const wide = element("div", null, { class: "wide campaign" });
  wide.append(table(["Phase", "GPUs", ...(c.precision ? [] : ["Precision"]), "Layout", "Sequence", "Batch (tokens)", "Tokens", "Step, s", "Days",
    "GPU-hours", "Cost", "Energy, MWh", "Goodput"], [...body, total], ["Layout"]));
  const tables = element("div", null, { class: "tables" });
  tables.append(summary(c, "The whole run"));
  $("#tables").replaceChildren(wide, ...phasesEvidence(phaseLines(c)), tables);
}

// A campaign's row of a comparison or a plan is its totals, its phases in the table below it: a plan's note listed
// all eleven of Llama 3.1 405B's layouts, 40 lines beside one row.
const phasesNote = (campaign) => `${counted(campaign.phases.length, "phase")}, each its own layout (below)`;

// The figures of a phase beside the same phase on the other systems: failure-free in a comparison (they sum to its
// Days and Cost), with losses in a plan (they sum to a candidate's days and cost, which count them).
const PHASE_FIGURES = {
  compare: [["time_to_train_days", "Days", number], ["gpu_hours", "GPU-hours", whole], ["cost_usd", "Cost", usd]],
  plan: [["time_to_train_with_losses_days", "Days with losses", number], ["gpu_hours_with_losses", "GPU-hours with losses", whole],
    ["cost_usd_with_losses", "Cost with losses", usd]],
};

// A campaign compared or planned, phase by phase: the rows of one phase together, one per system (`runs`: each
// system's name, its campaign and whether it misses the plan's goal), so that a planner reads a phase's GPUs, layout,
// days and cost across systems (405B's ramp on 1,024 GB300 beside 2,048 H100); each cell's key is the phase
// document's (`phases.KEY`).
function phasesTable(runs, heading) {
  const figures = PHASE_FIGURES[question], system = question === "plan" ? "Candidate" : "System";
  const rows = runs[0][1].phases.flatMap((_, i) => runs.map(([name, campaign, unmet], j) => {
    const p = campaign.phases[i], tr = element("tr", null, unmet ? { class: "infeasible" } : {});
    if (j === 0) tr.classList.add("phase-first");
    tr.append(j === 0 ? cell(p.phase, p.phase, "phases.phase") : element("td"), element("td", name + beyondMark(p, BEYOND_PHASE), { class: "name" }),
      cell(p.n_gpus, whole(p.n_gpus), "phases.n_gpus"), element("td", fullLayout(p.parallelism, false), { class: "text" }),
      ...figures.map(([key, , shown]) => cell(p[key], shown(p[key]), `phases.${key}`)));
    return tr;
  }));
  const box = element("div", null, { class: "wide phases" });
  box.append(element("h3", heading),
    table(["Phase", system, "GPUs", "Layout", ...figures.map(([, title]) => title)], rows, [system, "Layout"]),
    ...phasesEvidence(runs.flatMap(([name, campaign]) => phaseLines(campaign, name))));
  return box;
}

// A comparison's row's system and precision (none: a campaign whose phases' differ).
const systemOf = (p) => [p.system, p.precision].filter(Boolean).join(" ");

function drawCompare(rows) {
  const systems = new Set(rows.map(systemOf)).size;
  const sizes = new Set(rows.map((p) => p.n_gpus)).size;
  // Each system at a count of its own (`gb300@2048, h100-sxm@4096`) is no grid: "2 systems × 2 sizes" over two rows.
  const grid = rows.length === systems * sizes ? `${counted(systems, "system")} × ${counted(sizes, "size")}` : `${counted(systems, "system")} at their own sizes`;
  $("#title").textContent = `${modelName(rows[0])}, ${compact(rows[0].tokens_to_train)} tokens: ${grid}, ratios to the first row`;
  $("#verdict").textContent = "";
  const body = rows.map((p) => {
    const tr = element("tr");
    const layouts = (p.phases ? phasesNote(p) : fullLayout(p.parallelism)) + beyondMark(p);
    tr.append(element("td", systemOf(p)), cell(p.n_gpus, whole(p.n_gpus), "n_gpus"), element("td", layouts, { class: "text" }),
      cell(p.step_time_s, number(p.step_time_s), "step_time_s"), cell(p.tokens_per_s, number(p.tokens_per_s), "tokens_per_s"), cell(p.mfu_of_precision, percent(p.mfu_of_precision), "mfu_of_precision"),
      cell(p.usd_per_gpu_hour, usd(p.usd_per_gpu_hour), "usd_per_gpu_hour"), cell(p.time_to_train_days, number(p.time_to_train_days), "time_to_train_days", number(days(p.time_to_train_s_low)), number(days(p.time_to_train_s_high))),
      cell(p.time_to_train_with_losses_days, number(p.time_to_train_with_losses_days), "time_to_train_with_losses_days"),
      cell(p.cost_usd, usd(p.cost_usd), "cost_usd", usd(p.cost_usd_low), usd(p.cost_usd_high)),
      cell(p.speedup_vs_first, `${number(p.speedup_vs_first)}×`, "speedup_vs_first"), cell(p.perf_per_usd_vs_first, `${number(p.perf_per_usd_vs_first)}×`, "perf_per_usd_vs_first"));
    return tr;
  });
  const wide = element("div", null, { class: "wide" });
  wide.append(table(["System", "GPUs", "Layout", "Step, s", "Tokens/s", "MFU", "$/GPU-hour", "Days (80% range)", "Days with losses", "Cost (80% range)", "Speed-up", "Perf/$"], body, ["Layout"]));
  const named = rows.map((p) => [`${systemOf(p)} on ${whole(p.n_gpus)}`, p]);
  const campaigns = named.filter(([, p]) => p.phases).map(([name, p]) => [name, p, false]);
  $("#tables").replaceChildren(wide, ...rowsNote(named));
  if (campaigns.length) $("#phases").replaceChildren(phasesTable(campaigns, "Each phase side by side: days, GPU-hours and cost without losses, summing to each row's Days and Cost above"));
}

function drawPlan(report) {
  const goal = report.goal;
  const parts = [goal.deadline_days !== null ? `within ${plain(goal.deadline_days)} days` : null, goal.budget_usd !== null ? `within ${usd(goal.budget_usd)}` : null];
  $("#title").textContent = `Plan: train ${parts.filter(Boolean).join(" and ")}, with probability ${goal.confidence}`;
  const verdict = $("#verdict");
  verdict.replaceChildren();
  if (report.cheapest) verdict.append(element("span", "Feasible. ", { class: "yes" }), `Cheapest: ${report.cheapest}; fastest: ${report.fastest}. Days and costs count failures and the other losses of a real run.`);
  else verdict.append(element("span", "No candidate meets the goal.", { class: "no" }));
  const atConfidence = goal.confidence !== 0.5;
  const at = `at P${plain(100 * goal.confidence)}`;
  const body = report.candidates.map((c) => {
    const tr = element("tr", null, c.feasible ? {} : { class: "infeasible" });
    const name = element("td", c.candidate);
    const note = c.plan && c.plan.phases ? phasesNote(c.plan) : c.layout;
    if (note) name.append(element("div", note + beyondMark(c.plan), { class: "note" }));
    tr.append(name, element("td", c.feasible ? "meets the goal" : c.reason || "no plan", { class: "text" }),
      cell(c.n_gpus, whole(c.n_gpus), "n_gpus"),
      cell(c.time_to_train_days, number(c.time_to_train_days), "time_to_train_days", number(c.time_to_train_days_low), number(c.time_to_train_days_high)));
    if (atConfidence) tr.append(cell(c.time_to_train_days_at_confidence, number(c.time_to_train_days_at_confidence), "time_to_train_days_at_confidence"));
    tr.append(cell(c.cost_usd, usd(c.cost_usd), "cost_usd", usd(c.cost_usd_low), usd(c.cost_usd_high)));
    if (atConfidence) tr.append(cell(c.cost_usd_at_confidence, usd(c.cost_usd_at_confidence), "cost_usd_at_confidence"));
    tr.append(cell(c.p_meet_deadline, chance(c.p_meet_deadline), "p_meet_deadline"),
      cell(c.p_within_budget, chance(c.p_within_budget), "p_within_budget"));
    return tr;
  });
  const headings = ["Candidate and layout", "Verdict", "GPUs", "Days (80% range)", ...(atConfidence ? [`Days ${at}`] : []),
    "Cost (80% range)", ...(atConfidence ? [`Cost ${at}`] : []), "P(deadline)", "P(budget)"];
  const wide = element("div", null, { class: "wide" });
  wide.append(table(headings, body, ["Verdict"]));
  const campaigns = report.candidates.filter((c) => c.plan && c.plan.phases).map((c) => [`${c.candidate} on ${whole(c.n_gpus)}`, c.plan, !c.feasible]);
  $("#tables").replaceChildren(wide, ...rowsNote(report.candidates.map((c) => [`${c.candidate} on ${whole(c.n_gpus)}`, c.plan])));
  if (campaigns.length) $("#phases").replaceChildren(phasesTable(campaigns, "Each phase at the chosen count: days, GPU-hours and cost with losses, summing to each candidate's above"));
}

// Round values (1, 2, 5 times a power of ten) from the decade below `low` to the decade of `high`.
function roundValues(low, high) {
  const found = [];
  for (let power = Math.floor(Math.log10(low)) - 1; power <= Math.ceil(Math.log10(high)); power += 1) {
    for (const step of [1, 2, 5]) found.push(step * 10 ** power);
  }
  return found;
}

// The round values between `low` and `high`, for a logarithmic axis's labels.
function ticks(low, high) {
  const found = roundValues(low, high).filter((value) => value >= low && value <= high);
  return found.length ? found : [low, high];
}

// The round values at or just outside `low` and `high`: an axis ending on them labels both its ends (at exactly the
// data's, the 80% band ran into the top, and its highest label, 200, sat under a point at 408 days).
function roundedOut(low, high) {
  const found = roundValues(low, high);
  return [Math.max(...found.filter((v) => v <= low)), Math.min(...found.filter((v) => v >= high))];
}

// Time to train against GPU count, one line per system and precision, the 80% range as a band: drawn for answers
// with several counts of a system (a comparison over sizes).
function scalingChart(rows) {
  const series = new Map();
  for (const p of rows) {
    const name = seriesName(p);
    if (!series.has(name)) series.set(name, []);
    series.get(name).push([p.n_gpus, days(p.time_to_train_s), days(p.time_to_train_s_low), days(p.time_to_train_s_high)]);
  }
  if (![...series.values()].some((points) => points.length > 1)) return null;
  // As wide as the page leaves it, up to 540px (at 420px, the plot and its legend beside it ran 340px off the
  // screen): the legend is the page's own list, beside the plot where there is room, else under it.
  const width = Math.max(240, Math.min(540, $("#chart").clientWidth)), height = 300, left = 64, right = 24, top = 16, bottom = 44;
  const all = rows.map((p) => p.n_gpus);
  const values = [...series.values()].flat().flatMap(([, d, lo, hi]) => [d, lo, hi]).filter((v) => v > 0);
  const [x0, x1] = [Math.log2(Math.min(...all)), Math.log2(Math.max(...all))];
  const [bottomDays, topDays] = roundedOut(Math.min(...values), Math.max(...values));
  const [y0, y1] = [Math.log10(bottomDays), Math.log10(topDays)];
  const x = (n) => left + ((Math.log2(n) - x0) / (x1 - x0 || 1)) * (width - left - right);
  const y = (d) => top + (1 - (Math.log10(d) - y0) / (y1 - y0 || 1)) * (height - top - bottom);
  const svg = svgElement("svg", { width, height, role: "img", "aria-label": "time to train against GPU count" });
  svg.append(svgElement("line", { x1: left, y1: height - bottom, x2: width - right, y2: height - bottom, class: "axis" }),
    svgElement("line", { x1: left, y1: top, x2: left, y2: height - bottom, class: "axis" }));
  // A count is labelled where its label clears the last one (12px text: about 7px a character, and 8px between):
  // sixteen counts on a phone's 280px axis printed over each other. Each count keeps its points.
  let clear = -Infinity;
  for (const n of [...new Set(all)].sort((a, b) => a - b)) {
    const half = (7 * whole(n).length) / 2;
    if (x(n) - half < clear) continue;
    svg.append(svgElement("text", { x: x(n), y: height - bottom + 16, "text-anchor": "middle" }, whole(n)));
    clear = x(n) + half + 8;
  }
  for (const d of ticks(bottomDays, topDays)) {
    svg.append(svgElement("line", { x1: left, y1: y(d), x2: width - right, y2: y(d), class: "grid" }),
      svgElement("text", { x: left - 6, y: y(d) + 4, "text-anchor": "end" }, plain(d)));
  }
  svg.append(svgElement("text", { x: (left + width - right) / 2, y: height - 8, "text-anchor": "middle" }, "GPUs"),
    svgElement("text", { x: 14, y: top + (height - top - bottom) / 2, transform: `rotate(-90 14 ${top + (height - top - bottom) / 2})`, "text-anchor": "middle" }, "days to train"));
  const colours = ["#1f5fa8", "#d9822b", "#5b9e6f", "#9b6cb0", "#a8321f", "#6c8ebf", "#8c6d31", "#9aa5b1"];
  const legend = element("ul", null, { class: "legend" });
  [...series.entries()].forEach(([name, points], i) => {
    const colour = colours[i % colours.length];
    points.sort((a, b) => a[0] - b[0]);
    const band = [...points.map(([n, , lo]) => `${x(n)},${y(lo)}`), ...points.reverse().map(([n, , , hi]) => `${x(n)},${y(hi)}`)];
    points.reverse();
    svg.append(svgElement("polygon", { points: band.join(" "), fill: colour, opacity: 0.15 }),
      svgElement("polyline", { points: points.map(([n, d]) => `${x(n)},${y(d)}`).join(" "), fill: "none", stroke: colour, "stroke-width": 2 }));
    for (const [n, d] of points) svg.append(svgElement("circle", { cx: x(n), cy: y(d), r: 3, fill: colour }));
    const entry = element("li", name);
    entry.prepend(swatch(colour));
    legend.append(entry);
  });
  const box = element("div"), plot = element("div", null, { class: "plot" });
  plot.append(svg, legend);
  box.append(element("h3", "Scaling: days to train (80% range shaded)"), plot);
  return box;
}

// A campaign's phases compared or planned go under the scaling chart: above it, 44 rows (11 phases of 2 systems at
// 2 sizes) pushed the chart of the totals off the screen.
function draw(answer) {
  $("#phases").replaceChildren();
  if (question === "predict") (answer.phases ? drawCampaign : drawPredict)(answer);
  else if (question === "compare") drawCompare(answer);
  else drawPlan(answer);
  $("#result").hidden = false; // shown before the chart is drawn, which takes the width it is given
  const chart = question === "compare" ? scalingChart(answer) : null;
  $("#chart").replaceChildren(...(chart ? [chart] : []));
}

// ---- start
async function start() {
  const known = await (await fetch("/api/catalogue")).json();
  names = known.names;
  maxDeadlineDays = known.limits.deadline_s / 86400;
  const models = $("#model");
  for (const id of known.models) models.append(element("option", id, { value: id }));
  models.value = DEFAULT_MODEL;
  const scenarios = $("#scenario");
  for (const [name, description] of Object.entries(known.scenarios)) scenarios.append(element("option", name, { value: name, title: description }));
  for (const name of FROM_SCENARIO) {
    const input = $(`[name=${name}]`);
    input.dataset.hint = input.tagName === "SELECT" ? input.options[0].textContent : input.placeholder;
  }
  for (const chooser of [scenarios, $("#scenario_file")]) chooser.addEventListener("change", scenarioChosen);
  $("#model_file").addEventListener("change", modelFileChosen);
  models.addEventListener("change", modelPicked);
  // The precisions the server knows, not a list of the page's own: one it lacked was split off as a system.
  precisions = new Set(Object.values(known.accelerators).flat());
  const precision = $("[name=precision]");
  for (const name of precisions) precision.append(element("option", name, { value: name }));
  const systems = $("#systems");
  for (const id of [...Object.keys(known.accelerators), ...Object.keys(known.systems)]) systems.append(element("option", null, { value: id }));
  for (const button of document.querySelectorAll("#questions button")) button.addEventListener("click", () => showQuestion(button.dataset.question));
  for (const button of document.querySelectorAll("[data-format]")) button.addEventListener("click", () => download(button.dataset.format));
  $("#question").addEventListener("submit", run);
  const params = new URLSearchParams(location.search);
  showQuestion("predict");
  if (params.has("q")) {
    refill(params);
    run();
  }
}

start();
