/**
 * A self-contained interactive API reference (no CDN): it fetches
 * `/openapi.json` and renders every operation with a "try it" form against
 * the base path chosen among the document's `servers`. The header and
 * operation descriptions are markdown (code spans, bold, links, paragraphs),
 * rendered as DOM nodes (never as HTML text).
 *
 * @module
 */

/** The `/docs` HTML page. */
export const DOCS_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Payments API sandbox – reference</title>
<style>
  body { font: 14px/1.45 system-ui, sans-serif; margin: 0; color: #1d2430; background: #f6f7f9; }
  header { background: #1d3557; color: #fff; padding: 16px 24px; }
  header h1 { margin: 0 0 4px; font-size: 22px; }
  header input { width: 340px; padding: 4px 6px; }
  main { padding: 16px 24px; max-width: 1100px; }
  h2 { margin: 24px 0 8px; font-size: 18px; border-bottom: 1px solid #ccd; }
  details { background: #fff; border: 1px solid #d8dce3; border-radius: 6px; margin: 6px 0; }
  summary { cursor: pointer; padding: 8px 12px; }
  .m { display: inline-block; min-width: 64px; font-weight: 700; color: #fff; border-radius: 4px;
       text-align: center; padding: 1px 6px; margin-right: 8px; font-size: 12px; }
  .get { background: #2a9d8f; } .post { background: #e76f51; } .delete { background: #9b2226; }
  .body { padding: 8px 12px 12px; border-top: 1px solid #eef; }
  textarea { width: 100%; min-height: 140px; font: 12px monospace; }
  pre { background: #0f172a; color: #e2e8f0; padding: 8px; overflow: auto; max-height: 320px; }
  label { display: block; margin: 4px 0; }
  label input { margin-left: 6px; }
  button { padding: 4px 12px; }
</style>
</head>
<body>
<header>
  <h1 id="title">Payments API sandbox</h1>
  <div id="desc"></div>
  <label>Bearer token <input id="token" placeholder="token printed at server start"></label>
  <label>Base path <select id="server"></select></label>
</header>
<main id="ops"><p>Loading /openapi.json…</p></main>
<script>
"use strict";
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k);
  return e;
}
function resolve(doc, s) {
  if (s && s.$ref) return resolve(doc, doc.components.schemas[s.$ref.split("/").pop()]);
  return s || {};
}
function example(doc, s, depth) {
  s = resolve(doc, s);
  if (depth > 4) return null;
  if (s.example !== undefined) return s.example;
  if (s.anyOf) return example(doc, s.anyOf[0], depth + 1);
  if (s.oneOf) return example(doc, s.oneOf[0], depth + 1);
  if (s.enum) return s.enum[0];
  if (s.const !== undefined) return s.const;
  if (s.type === "object" || s.properties) {
    const o = {};
    for (const k of s.required || []) o[k] = example(doc, s.properties[k], depth + 1);
    return o;
  }
  if (s.type === "array") return [];
  if (s.type === "boolean") return false;
  if (s.type === "integer" || s.type === "number") return 1;
  return "string";
}
// Markdown subset → DOM nodes: blank-line paragraphs, \`code\`, **bold**, [text](http…).
function inline(text) {
  const out = [];
  const re = /\x60([^\x60]+)\x60|\\*\\*([^*]+)\\*\\*|\\[([^\\]]+)\\]\\((https?:[^)\\s]+)\\)/g;
  let at = 0;
  for (let m; (m = re.exec(text)) !== null;) {
    if (m.index > at) out.push(text.slice(at, m.index));
    if (m[1] !== undefined) out.push(el("code", {}, m[1]));
    else if (m[2] !== undefined) out.push(el("strong", {}, m[2]));
    else out.push(el("a", { href: m[4], rel: "noopener" }, m[3]));
    at = re.lastIndex;
  }
  if (at < text.length) out.push(text.slice(at));
  return out;
}
function markdown(text) {
  const box = el("div", { class: "md" });
  for (const para of String(text || "").split(/\\n\\s*\\n/)) {
    if (para.trim()) box.append(el("p", {}, ...inline(para.trim())));
  }
  return box;
}
function render(doc) {
  document.getElementById("title").textContent = doc.info.title + " " + doc.info.version;
  document.getElementById("desc").replaceChildren(markdown(doc.info.description));
  const select = document.getElementById("server");
  for (const s of doc.servers || [{ url: "" }]) select.append(el("option", { value: s.url }, s.url));
  const root = document.getElementById("ops");
  root.textContent = "";
  const byTag = {};
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      const tag = (op.tags && op.tags[0]) || "Other";
      (byTag[tag] = byTag[tag] || []).push({ path, method, op });
    }
  }
  for (const [tag, ops] of Object.entries(byTag)) {
    root.append(el("h2", {}, tag));
    for (const { path, method, op } of ops) root.append(operation(doc, path, method, op));
  }
}
function operation(doc, path, method, op) {
  const d = el("details", { "data-op": op.operationId || "" });
  d.append(el("summary", {}, el("span", { class: "m " + method }, method.toUpperCase()),
    el("code", {}, path), " — " + (op.summary || "")));
  const body = el("div", { class: "body" });
  if (op.description) body.append(markdown(op.description));
  const inputs = {};
  for (const p of op.parameters || []) {
    const i = el("input", { placeholder: p.in + (p.required ? " (required)" : "") });
    inputs[p.in + ":" + p.name] = i;
    body.append(el("label", {}, p.name, i));
  }
  let ta = null;
  const rb = op.requestBody && op.requestBody.content && op.requestBody.content["application/json"];
  if (rb) {
    ta = el("textarea", {});
    ta.value = JSON.stringify(example(doc, rb.schema, 0), null, 2);
    body.append(el("div", {}, "Request body (JSON)"), ta);
  }
  const out = el("pre", {}, "");
  const btn = el("button", { type: "button" }, "Try it");
  btn.addEventListener("click", async () => {
    const own = op.servers && op.servers[0] ? op.servers[0].url : null;
    const base = own !== null ? own : document.getElementById("server").value;
    let url = (base.endsWith("/") ? base.slice(0, -1) : base) + path;
    const headers = {};
    for (const [key, i] of Object.entries(inputs)) {
      const [where, name] = key.split(":");
      if (where === "path") url = url.replace("{" + name + "}", encodeURIComponent(i.value));
      else if (where === "header" && i.value) headers[name] = i.value;
    }
    const tok = document.getElementById("token").value.trim();
    if (tok) headers["Authorization"] = "Bearer " + tok;
    if (ta) headers["Content-Type"] = "application/json";
    out.textContent = "…";
    try {
      const res = await fetch(url, { method: method.toUpperCase(), headers, body: ta ? ta.value : undefined });
      const text = await res.text();
      let shown = text;
      try { shown = JSON.stringify(JSON.parse(text), null, 2); } catch (_) { /* not JSON */ }
      out.textContent = res.status + " " + res.statusText + "\\n" + shown;
    } catch (e) {
      out.textContent = String(e);
    }
  });
  body.append(btn, out);
  d.append(body);
  return d;
}
fetch("/openapi.json").then((r) => r.json()).then(render).catch((e) => {
  document.getElementById("ops").textContent = "Could not load /openapi.json: " + e;
});
</script>
</body>
</html>
`;
