/* nucleus web page: chat, settings and the sampler inspector. Plain
 * JavaScript, no framework; talks only to the server that served it. */
"use strict";

const $ = (id) => document.getElementById(id);
const STORE = "nucleus.chat.v1";
const KEY_STORE = "nucleus.apikey";
const SET_STORE = "nucleus.settings.v1";
/* Settings the page leaves out: it shows one reply and inspects it (beam
 * search refuses inspect), and asks for its own top-N. */
const HIDDEN = new Set(["n", "beam_width", "length_penalty", "early_stopping",
  "top_logprobs"]);
const TOP_N = 10;

let chat = load(STORE, { system: "", messages: [] });
let settings = load(SET_STORE, {});
let contract = [];
let busy = null;       /* the AbortController of the reply in flight */
let failed = null;     /* why the last reply failed: shown with a Retry */
let tokensView = !!settings.__tokens; /* replies as token spans, not Markdown */
let selected = null;   /* {rec, i}: the record open in the inspector */
let attached = [];     /* data: URIs of the images the next message takes */
let vision = false;    /* the server takes images (/props modalities) */
const rowOf = new WeakMap(); /* message -> its <li> */

function load(key, dflt) {
  try { const v = JSON.parse(localStorage.getItem(key)); return v || dflt; }
  catch (e) { return dflt; }
}
function save() {
  try { localStorage.setItem(STORE, JSON.stringify(chat)); }
  catch (e) { /* quota: keep the text, drop the inspect records */
    const slim = { system: chat.system, messages: chat.messages.map((m) =>
      ({ role: m.role, content: m.content, images: m.images, reasoning: m.reasoning,
        meta: m.meta })) };
    try { localStorage.setItem(STORE, JSON.stringify(slim)); } catch (e2) { /* give up */ }
  }
}
function el(tag, props, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (k === "class") e.className = v;
    else if (k === "dataset") Object.assign(e.dataset, v);
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of kids) e.append(c);
  return e;
}
function headers() {
  const h = { "Content-Type": "application/json" };
  const key = $("apikey").value.trim();
  if (key) h.Authorization = "Bearer " + key;
  return h;
}
function fmt(p) { return p === null || p === undefined ? "" : Number(p).toFixed(4); }
function show(text) {
  return text.replace(/\n/g, "⏎\n").replace(/ /g, "\u00a0") || "∅";
}

/* ---- settings from GET /props ---- */
async function loadProps() {
  try {
    const r = await fetch("/props", { headers: headers() });
    const j = await r.json();
    if (!r.ok) throw new Error(j.error ? j.error.message : r.status);
    $("model").textContent = j.model + " · ctx " + j.n_ctx;
    vision = !!(j.modalities && j.modalities.vision);
    $("attach").hidden = !vision;
    contract = (j.params || []).filter((p) => !HIDDEN.has(p.name));
  } catch (e) {
    $("status").textContent = "GET /props failed: " + e.message;
  }
  renderSettings();
}
function renderSettings() {
  const f = $("settings");
  f.textContent = "";
  const rows = contract.concat([{ name: "seed", kind: "int", min: 0,
    max: 4294967295, default: null, help: "generator seed (empty: random)" }]);
  for (const p of rows) {
    const id = "set-" + p.name;
    const input = el("input", { id, name: p.name, title: p.help || "" });
    if (p.kind === "bool") {
      input.type = "checkbox";
      input.checked = settings[p.name] !== undefined ? !!settings[p.name] : !!p.default;
    } else {
      input.type = "number";
      if (p.max >= p.min) { input.min = p.min; input.max = p.max; }
      input.step = p.kind === "int" ? "1" : "any";
      if (p.default !== null) input.placeholder = String(p.default);
      if (settings[p.name] !== undefined) input.value = settings[p.name];
    }
    input.addEventListener("change", () => {
      if (p.kind === "bool") settings[p.name] = input.checked;
      else if (input.value === "") delete settings[p.name];
      else settings[p.name] = Number(input.value);
      localStorage.setItem(SET_STORE, JSON.stringify(settings));
    });
    const range = p.kind === "bool" || !(p.max >= p.min) ? "" :
      ` ${p.min_exclusive ? "(" : "["}${p.min}, ${p.max}]`;
    f.append(el("label", { for: id, title: p.help || "" }, p.name + range), input);
  }
  $("stopstr").value = settings.__stop || "";
}
$("stopstr").addEventListener("change", () => {
  settings.__stop = $("stopstr").value;
  localStorage.setItem(SET_STORE, JSON.stringify(settings));
});
function requestSettings() {
  const out = {};
  for (const [k, v] of Object.entries(settings)) if (!k.startsWith("__")) out[k] = v;
  const stops = ($("stopstr").value || "").split("\n").filter((s) => s.length);
  if (stops.length) out.stop = stops;
  return out;
}

/* ---- the conversation ---- */
/* A reply as Markdown, as llama-server's page shows it: marked, then
 * DOMPurify (model output is untrusted), then highlight.js on code blocks
 * (Debian's libjs-marked, node-dompurify and libjs-highlight.js, embedded
 * by the build). Plain text when they did not load. */
function markdown(text) {
  const body = el("div", { class: "body md" });
  if (!window.marked || !window.DOMPurify) {
    body.classList.remove("md");
    appendText(body, text);
    return body;
  }
  body.innerHTML = DOMPurify.sanitize(marked.parse(text,
    { gfm: true, headerIds: false, mangle: false }));
  if (window.hljs) body.querySelectorAll("pre code").forEach((c) => hljs.highlightBlock(c));
  return body;
}
/* A thinking model's reasoning (delta.reasoning_content), in a block that
 * is open while it streams and closed once the answer begins, unless the
 * reader opened or closed it. */
function thinkingBlock(m) {
  const open = m.thinkingOpen !== undefined ? m.thinkingOpen : !m.content;
  const summary = el("summary", {}, "Thinking");
  const d = el("details", { class: "thinking" }, summary,
    el("div", { class: "thought" }, m.reasoning));
  d.open = open;
  /* the reader's choice (a click, before the block toggles) */
  summary.addEventListener("click", () => { m.thinkingOpen = !d.open; });
  return d;
}
/* A message's images as thumbnails. */
function thumbs(images) {
  return el("div", { class: "thumbs" }, ...images.map((src, i) =>
    el("span", { class: "thumb" }, el("img", { src, alt: "image " + (i + 1) }))));
}
function renderBody(m) {
  const body = renderAnswer(m);
  if (m.images && m.images.length) body.prepend(thumbs(m.images));
  if (m.role === "assistant" && m.reasoning && !tokensView)
    body.prepend(thinkingBlock(m));
  return body;
}
function renderAnswer(m) {
  if (m.role === "assistant" && !tokensView) return markdown(m.content);
  const body = el("div", { class: "body" });
  if (m.role !== "assistant" || !m.tokens) {
    appendText(body, m.content);
    return body;
  }
  /* Each token a focusable span; text between ``` fences goes in <pre>. */
  let box = body, text = "", inCode = false;
  m.tokens.forEach((t, i) => {
    const span = el("span", { class: "tok", tabindex: "0", role: "button",
      dataset: { i: String(i) } }, t.text === "" ? "⟨end⟩" : t.text);
    if (t.text === "") span.classList.add("muted");
    const d = t.inspect && t.inspect.draft; /* speculative decoding */
    if (d) {
      span.classList.add(d.accepted ? "draft-kept" : "draft-rejected");
      span.title = d.accepted ? "drafted, kept" : `drafted “${show(d.text)}”, rejected`;
    }
    span.addEventListener("click", () => openInspector(m, i, span));
    span.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); openInspector(m, i, span); }
    });
    box.append(span);
    text += t.text;
    const code = ((text.match(/```/g) || []).length % 2) === 1;
    if (code !== inCode) {
      inCode = code;
      if (code) { const c = el("code"); body.append(el("pre", {}, c)); box = c; }
      else box = body;
    }
  });
  return body;
}
function appendText(body, text) {
  const parts = text.split("```");
  parts.forEach((p, i) => {
    if (i % 2) body.append(el("pre", {}, el("code", {}, p.replace(/^[\w+-]*\n/, ""))));
    else if (p) body.append(p);
  });
}
function render() {
  $("system").value = chat.system || "";
  const ol = $("messages");
  ol.textContent = "";
  chat.messages.forEach((m, idx) => {
    const tools = el("span", { class: "tools" });
    if (m.role === "user")
      tools.append(el("button", { type: "button", class: "edit", onclick: () => edit(idx) }, "Edit"));
    const li = el("li", { class: "msg " + m.role }, tools,
      el("div", { class: "who" }, m.role), renderBody(m));
    if (m.meta) li.append(el("div", { class: "meta" }, m.meta));
    rowOf.set(m, li);
    ol.append(li);
  });
  const last = chat.messages[chat.messages.length - 1];
  if (failed && !busy && last && last.role === "user")
    ol.append(el("li", { class: "msg error", role: "alert" },
      el("span", { class: "err" }, "The reply failed: " + failed + " "),
      el("button", { id: "retry", type: "button", onclick: retry }, "Retry")));
}
function retry() {
  if (busy) return;
  failed = null;
  reply();
}
function setTokensView(on) {
  tokensView = on;
  settings.__tokens = on;
  localStorage.setItem(SET_STORE, JSON.stringify(settings));
  $("view-tokens").setAttribute("aria-pressed", String(on));
  render();
}
function edit(idx) {
  if (busy) return;
  failed = null;
  $("input").value = chat.messages[idx].content;
  attached = (chat.messages[idx].images || []).slice();
  renderAttached();
  chat.messages = chat.messages.slice(0, idx);
  save(); render();
  $("input").focus();
}
function apiMessages() {
  const out = [];
  if (chat.system.trim()) out.push({ role: "system", content: chat.system });
  for (const m of chat.messages) {
    /* images first, then the text, as llama-mtmd-cli orders a turn */
    const o = { role: m.role, content: m.images && m.images.length
      ? [...m.images.map((url) => ({ type: "image_url", image_url: { url } })),
         { type: "text", text: m.content }]
      : m.content };
    if (m.reasoning) o.reasoning_content = m.reasoning; /* the template keeps or drops it */
    out.push(o);
  }
  return out;
}

/* Reads an SSE body, calling onEvent(json) for each data line. */
async function readSSE(resp, onEvent) {
  const reader = resp.body.getReader();
  const dec = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let cut;
    while ((cut = buf.search(/\r?\n\r?\n/)) >= 0) {
      const block = buf.slice(0, cut);
      buf = buf.slice(cut).replace(/^\r?\n\r?\n/, "");
      const data = block.split(/\r?\n/).filter((l) => l.startsWith("data:"))
        .map((l) => l.slice(5).replace(/^ /, "")).join("\n");
      if (!data || data === "[DONE]") continue;
      onEvent(JSON.parse(data), data);
    }
  }
}

async function reply() {
  failed = null;
  const msg = { role: "assistant", content: "", tokens: [], meta: "" };
  chat.messages.push(msg);
  render();
  const li = rowOf.get(msg);
  const ctrl = new AbortController();
  busy = ctrl;
  $("stop").disabled = false; $("send").disabled = true; $("regen").disabled = true;
  $("status").textContent = "generating…";
  const req = Object.assign(requestSettings(), { messages: apiMessages().slice(0, -1),
    stream: true, inspect: { top_n: TOP_N } });
  let t0 = 0, finish = null, error = null, pending = false;
  /* At most one redraw per 40 ms however fast tokens come. */
  const redraw = () => {
    if (pending) return;
    pending = true;
    setTimeout(() => {
      pending = false;
      if (li.isConnected) li.querySelector(".body").replaceWith(renderBody(msg));
    }, 40);
  };
  try {
    const r = await fetch("/v1/chat/completions", { method: "POST", headers: headers(),
      body: JSON.stringify(req), signal: ctrl.signal });
    if (!r.ok) {
      const j = await r.json().catch(() => ({}));
      throw new Error(j.error ? j.error.message : "HTTP " + r.status);
    }
    await readSSE(r, (ev, raw) => {
      if (ev.error) throw new Error(ev.error.message);
      const c = ev.choices && ev.choices[0];
      if (!c) return;
      const text = (c.delta && c.delta.content) || "";
      const thought = (c.delta && c.delta.reasoning_content) || "";
      /* A chunk's inspect holds its token's record (a list of one). Seeds
       * are 64-bit: keep their digits, which a JS number would round. */
      const recs = Array.isArray(c.inspect) ? c.inspect : c.inspect ? [c.inspect] : [];
      const seeds = [...raw.matchAll(/"seed":(-?\d+)/g)].map((x) => x[1]);
      recs.forEach((rec, k) => { if (seeds[k]) rec.draw.seed_digits = seeds[k]; });
      if (recs.length || text || thought) {
        if (!t0) t0 = performance.now();
        msg.tokens.push({ text: thought + text, inspect: recs[0] || null });
        for (const rec of recs.slice(1)) msg.tokens.push({ text: "", inspect: rec });
        msg.content += text;
        if (thought) msg.reasoning = (msg.reasoning || "") + thought;
        redraw();
      }
      if (c.finish_reason) finish = c.finish_reason;
    });
  } catch (e) {
    if (e.name === "AbortError") finish = "stopped";
    else error = e.message;
  }
  const secs = t0 ? (performance.now() - t0) / 1000 : 0;
  const n = msg.tokens.length;
  /* Rate after the first token (its time is the prompt's). */
  msg.meta = `${n} tokens · ${secs > 0 && n > 1 ? ((n - 1) / secs).toFixed(1) : "–"} tokens/s · finish: ${finish || (error ? "error" : "?")}`;
  if (error) msg.meta += " · " + error;
  busy = null;
  $("stop").disabled = true; $("send").disabled = false; $("regen").disabled = false;
  $("status").textContent = error ? "error: " + error : "";
  if (error && !msg.content) { /* nothing came: the message waits for Retry */
    chat.messages.pop();
    failed = error;
  }
  save(); render();
}

$("composer").addEventListener("submit", (ev) => {
  ev.preventDefault();
  if (busy) return;
  const text = $("input").value;
  if (!text.trim() && !attached.length) return;
  const m = { role: "user", content: text };
  if (attached.length) m.images = attached;
  chat.messages.push(m);
  $("input").value = "";
  attached = [];
  renderAttached();
  save();
  reply();
});
$("input").addEventListener("keydown", (ev) => {
  if (ev.key === "Enter" && !ev.shiftKey) { ev.preventDefault(); $("composer").requestSubmit(); }
});
/* ---- images: attached (button) or pasted, sent as data: URIs ---- */
function renderAttached() {
  const box = $("attachments");
  box.textContent = "";
  attached.forEach((src, i) => box.append(el("span", { class: "thumb" },
    el("img", { src, alt: "attached image " + (i + 1) }),
    el("button", { type: "button", title: "Remove", "aria-label": "Remove image " + (i + 1),
      onclick: () => { attached.splice(i, 1); renderAttached(); } }, "×"))));
}
function addImages(files) {
  for (const f of files) {
    if (!f.type.startsWith("image/")) continue;
    const r = new FileReader();
    r.onload = () => { attached.push(r.result); renderAttached(); };
    r.readAsDataURL(f);
  }
}
$("attach").addEventListener("click", () => $("image-file").click());
$("image-file").addEventListener("change", (ev) => {
  addImages(ev.target.files);
  ev.target.value = "";
});
$("input").addEventListener("paste", (ev) => {
  const files = [...(ev.clipboardData ? ev.clipboardData.files : [])];
  if (!vision || !files.some((f) => f.type.startsWith("image/"))) return;
  ev.preventDefault();
  addImages(files);
});
$("stop").addEventListener("click", () => { if (busy) busy.abort(); });
document.addEventListener("keydown", (ev) => {
  if (ev.key === "Escape" && busy) { ev.preventDefault(); busy.abort(); }
});
$("regen").addEventListener("click", () => {
  if (busy) return;
  while (chat.messages.length && chat.messages[chat.messages.length - 1].role === "assistant")
    chat.messages.pop();
  if (!chat.messages.length) return;
  save();
  reply();
});
$("newchat").addEventListener("click", () => {
  if (busy) busy.abort();
  chat = { system: chat.system, messages: [] };
  failed = null;
  attached = [];
  renderAttached();
  save(); render(); closeInspector();
});
$("system").addEventListener("change", () => { chat.system = $("system").value; save(); });
$("view-tokens").addEventListener("click", () => setTokensView(!tokensView));
$("view-tokens").setAttribute("aria-pressed", String(tokensView));
$("insp-close").addEventListener("click", () => closeInspector());
$("apikey").value = localStorage.getItem(KEY_STORE) || "";
$("apikey").addEventListener("change", () => {
  localStorage.setItem(KEY_STORE, $("apikey").value);
  loadProps();
});

/* ---- the inspector ---- */
function bars(a, b) {
  const cell = el("td", { class: "bars" });
  cell.append(el("div", { class: "bar raw" }), el("div", { class: "bar final" }));
  cell.children[0].style.width = (100 * a).toFixed(2) + "%";
  cell.children[1].style.width = (100 * b).toFixed(2) + "%";
  return cell;
}
/* Digits enough to tell an interval's ends apart (4 at least). */
function digits(lo, hi) {
  const w = hi - lo;
  return w > 0 ? Math.min(12, Math.max(4, Math.ceil(-Math.log10(w)) + 1)) : 4;
}
/* The draw on the cumulative distribution, as the sampler walked it: the
 * listed candidates' intervals [lo, hi) in walk order (gaps: the rest of
 * the kept set, which the walk passes too), a marker at u, the drawn
 * token's segment highlighted. */
function showDraw(rec) {
  const d = rec.draw;
  const drawn = rec.candidates.find((c) => c.id === d.id);
  const name = drawn ? show(drawn.text) : String(d.id);
  const key = ` (seed ${d.seed_digits || d.seed}, step ${d.step})`;
  const box = $("insp-draw"), strip = $("insp-cdf"), note = $("insp-cdf-note");
  box.dataset.id = String(d.id);
  box.dataset.method = d.method || "";
  strip.textContent = "";
  strip.hidden = note.hidden = d.method !== "inverse_cdf";
  if (d.method === "greedy") {
    box.textContent = `Greedy (temperature 0): the argmax “${name}”, no uniform number drawn${key}`;
    return;
  }
  if (d.method !== "inverse_cdf") { /* a record from before the walk was kept */
    box.textContent = `Draw: u = ${Number(d.uniform).toFixed(4)} → “${name}”${key}`;
    return;
  }
  const n = digits(d.cdf_lo, d.cdf_hi);
  const u = Number(d.uniform);
  box.dataset.u = String(d.uniform);
  box.dataset.lo = String(d.cdf_lo);
  box.dataset.hi = String(d.cdf_hi);
  const where = d.clamped ? `ran past the end (rounding); the last token [${d.cdf_lo.toFixed(n)}, ${d.cdf_hi.toFixed(n)})`
    : `fell in [${d.cdf_lo.toFixed(n)}, ${d.cdf_hi.toFixed(n)})`;
  box.textContent = `u = ${u.toFixed(Math.max(4, n))} ${where} → “${name}”${key}`;
  const text = new Map(rec.candidates.map((c) => [c.id, show(c.text)]));
  for (const w of d.walk || []) {
    const seg = el("span", { class: "seg" + (w.id === d.id ? " drawn" : ""),
      dataset: { id: String(w.id), lo: String(w.lo), hi: String(w.hi) },
      title: `${text.get(w.id) || w.id} [${w.lo.toFixed(4)}, ${w.hi.toFixed(4)})` });
    seg.style.left = (100 * w.lo).toFixed(4) + "%";
    seg.style.width = (100 * (w.hi - w.lo)).toFixed(4) + "%";
    strip.append(seg);
  }
  const mark = el("span", { class: "mark", dataset: { u: String(d.uniform) } });
  mark.style.left = (100 * u).toFixed(4) + "%";
  strip.append(mark);
  strip.setAttribute("aria-label", box.textContent);
  note.textContent = (d.order === "token_id" ? "Walk: every token by id (nothing truncated)"
    : d.order === "candidates" ? "Walk: the candidates as listed"
      : "Walk: the kept set in the sampler's order") +
    `; ${(d.walk || []).length} listed, gaps are the rest of the kept set.`;
}
/* Speculative decoding: what a drafter proposed at this position, and
 * whether the model's own sampling kept it. */
function showDraft(rec) {
  const p = $("insp-spec"), d = rec.draft;
  p.hidden = !d;
  p.dataset.draft = d ? (d.accepted ? "kept" : "rejected") : "";
  if (!d) { p.textContent = ""; return; }
  const drawn = rec.candidates.find((c) => c.id === rec.draw.id);
  p.textContent = d.accepted
    ? `Drafted “${show(d.text)}” (speculative decoding): kept, the model's sampling agreed.`
    : `Drafted “${show(d.text)}” (speculative decoding): rejected, the model's sampling gave “${drawn ? show(drawn.text) : rec.draw.id}”.`;
}
function closeInspector() {
  selected = null;
  $("inspector").classList.remove("open");
  $("insp-body").hidden = true; $("insp-empty").hidden = false;
}
function openInspector(m, i, span) {
  document.querySelectorAll(".tok.sel").forEach((s) => s.classList.remove("sel"));
  span.classList.add("sel");
  const rec = m.tokens[i].inspect;
  selected = { rec, i };
  $("inspector").classList.add("open"); /* a narrow window: over the page */
  $("insp-empty").hidden = !!rec; $("insp-body").hidden = !rec;
  if (!rec) { $("insp-empty").textContent = "No inspect record for this token."; return; }
  $("insp-title").textContent = `Token ${i}: “${show(m.tokens[i].text)}”`;
  $("insp-stages").textContent = rec.stages.join(" → ");
  showDraft(rec);
  const tb = $("insp-table").querySelector("tbody");
  tb.textContent = "";
  for (const c of rec.candidates) {
    const tr = el("tr", { dataset: { id: String(c.id), raw: String(c.raw_prob),
      final: String(c.final_prob), removed: c.removed_by || "" } },
    el("td", {}, show(c.text)), el("td", { class: "num" }, fmt(c.raw_prob)),
    el("td", { class: "num" }, fmt(c.final_prob)),
    el("td", { class: "cutmark" }, c.removed_by ? "✂ " + c.removed_by : ""),
    bars(c.raw_prob, c.final_prob));
    if (c.removed_by) tr.classList.add("cut");
    if (c.id === rec.draw.id) tr.classList.add("drawn");
    tb.append(tr);
  }
  showDraw(rec);
  const s = requestSettings();
  for (const k of ["temperature", "top_k", "top_p", "min_p"]) {
    const p = contract.find((q) => q.name === k);
    const v = s[k] !== undefined ? s[k] : p ? p.default : undefined;
    if (v !== undefined) $("wi-" + k).value = v;
  }
  $("wi-table").querySelector("tbody").textContent = "";
  $("wi-status").textContent = "";
  whatIf(0);
}
async function whatIf(nDraws) {
  if (!selected) return;
  const rec = selected.rec;
  const body = { candidates: rec.candidates.map((c) => ({ id: c.id, logit: c.logit })),
    seed: "SEED", n_draws: nDraws };
  for (const k of ["temperature", "top_k", "top_p", "min_p"]) {
    const v = $("wi-" + k).value;
    if (v !== "") body[k] = Number(v);
  }
  $("wi-status").textContent = "running…";
  try {
    const seed = rec.draw.seed_digits || String(rec.draw.seed);
    const r = await fetch("/sample", { method: "POST", headers: headers(),
      body: JSON.stringify(body).replace('"seed":"SEED"', '"seed":' + seed) });
    const j = await r.json();
    if (!r.ok) throw new Error(j.error ? j.error.message : "HTTP " + r.status);
    const kept = new Set(j.kept);
    const counts = new Map((j.histogram || []).map((h) => [h.id, h.count]));
    const tb = $("wi-table").querySelector("tbody");
    tb.textContent = "";
    for (const c of j.candidates) {
      const n = counts.get(c.id) || 0;
      const tr = el("tr", { dataset: { id: String(c.id), kept: kept.has(c.id) ? "1" : "0",
        final: String(c.final_prob), count: String(n) } },
      el("td", {}, show(c.text || String(c.id))), el("td", { class: "num" }, fmt(c.final_prob)),
      el("td", {}, kept.has(c.id) ? "✓" : "✂ " + (c.removed_by || "")),
      el("td", { class: "num" }, nDraws ? String(n) : ""),
      bars(c.final_prob, nDraws ? n / nDraws : 0));
      if (!kept.has(c.id)) tr.classList.add("cut");
      tb.append(tr);
    }
    $("wi-status").textContent = `${kept.size} of ${j.candidates.length} survive (${j.stages.join(" → ")})` +
      (nDraws ? `; ${nDraws} draws` : "");
  } catch (e) {
    $("wi-status").textContent = "POST /sample failed: " + e.message;
  }
}
$("whatif").addEventListener("submit", (ev) => { ev.preventDefault(); whatIf(0); });
$("wi-hist").addEventListener("click", () => whatIf(200));

render();
loadProps();
