// The API reference: the server's OpenAPI schema as a list of routes, drawn with no library.
// Descriptions are the routes' docstrings: their RST ``literals`` are shown as code; a limit
// that is no limit (a 64-bit integer's range) is left out.

const NO_LIMIT = 2 ** 53;  // past this a bound is the type's range, not a rule of the route

function el(tag, text, cls) { const e = document.createElement(tag); if (text != null) e.textContent = text; if (cls) e.className = cls; return e; }
// "the ``sort`` column" -> the text with <code>sort</code>, built from text nodes (no markup).
function rst(text, tag = "p", cls = "muted") {
  const out = el(tag, null, cls);
  String(text).split(/``(.+?)``/g).forEach((part, i) => out.append(i % 2 ? el("code", part) : document.createTextNode(part)));
  return out;
}
function typeOf(schema) {
  if (!schema) return "";
  if (schema.$ref) return schema.$ref.split("/").pop();
  if (schema.anyOf) return schema.anyOf.map(typeOf).filter((t) => t !== "null").join(" | ") + (schema.anyOf.some((s) => s.type === "null") ? " (optional)" : "");
  if (schema.type === "array") return typeOf(schema.items) + "[]";
  return schema.type || "";
}
// 4294967295 -> "2³² − 1", 4294967276 -> "2³² − 20": a bound just under a power of two reads
// as one (a seed's range less the seeds a session adds to it).
const SUP = "⁰¹²³⁴⁵⁶⁷⁸⁹";
function bound(n) {
  const v = Number(n), k = Math.ceil(Math.log2(Math.abs(v) + 1)), below = 2 ** k - Math.abs(v);
  if (Math.abs(v) >= 65535 && below >= 1 && below <= 1000) return (v < 0 ? "−" : "") + "2" + String(k).split("").map((d) => SUP[d]).join("") + " − " + below;
  return v.toLocaleString("en-US");
}
function limits(schema) {
  const s = schema || {}, parts = [];
  for (const [k, sym] of [["minimum", "\u2265"], ["maximum", "\u2264"], ["exclusiveMinimum", ">"], ["exclusiveMaximum", "<"], ["minLength", "length \u2265"], ["maxLength", "length \u2264"]]) {
    if (s[k] != null && Math.abs(s[k]) < NO_LIMIT) parts.push(`${sym} ${bound(s[k])}`);
  }
  if (s.pattern) parts.push("pattern " + s.pattern);
  if (s.enum) parts.push("one of " + s.enum.join(", "));
  for (const sub of s.anyOf || []) { const l = limits(sub); if (l) parts.push(l); }
  return parts.join(", ");
}
function schemaTable(rows) {
  const t = el("table", null, "grid"), head = el("tr");
  for (const h of ["name", "in", "type", "limits", "description"]) head.append(el("th", h));
  t.append(el("thead")); t.tHead.append(head);
  const body = el("tbody");
  for (const r of rows) { const tr = el("tr"); r.forEach((v, i) => tr.append(i === 4 ? rst(v, "td", "wrap") : el("td", v))); body.append(tr); }
  t.append(body); const wrap = el("div", null, "scroll"); wrap.append(t); return wrap;
}
function bodyRows(spec, op) {
  const content = op.requestBody && op.requestBody.content && op.requestBody.content["application/json"];
  if (!content) return [];
  const name = typeOf(content.schema), model = spec.components.schemas[name] || content.schema;
  return Object.entries(model.properties || {}).map(([k, s]) => [k, "body", typeOf(s), limits(s), s.description || ""]);
}
function answer(op) {
  const ok = Object.entries(op.responses || {}).filter(([code]) => code.startsWith("2"));
  return ok.map(([code, r]) => { const schema = r.content?.["application/json"]?.schema; return `${code}: ${schema ? typeOf(schema) || "JSON" : r.description || ""}`; }).join("; ");
}
async function main() {
  const spec = await (await fetch("/openapi.json")).json();
  const out = document.getElementById("routes"); out.replaceChildren();
  for (const [path, ops] of Object.entries(spec.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      const sec = el("section", null, "route"); sec.dataset.route = method.toUpperCase() + " " + path;
      const h = el("h2"); h.append(el("span", method.toUpperCase(), "method " + method), document.createTextNode(path));
      sec.append(h);
      if (op.description || op.summary) sec.append(rst(op.description || op.summary));
      const rows = (op.parameters || []).map((p) => [p.name, p.in, typeOf(p.schema), limits(p.schema), p.description || ""]).concat(bodyRows(spec, op));
      if (rows.length) sec.append(schemaTable(rows));
      const a = answer(op);
      if (a) sec.append(el("p", "answers " + a, "muted"));
      out.append(sec);
    }
  }
}
main().catch((e) => { document.getElementById("routes").textContent = "could not read /openapi.json: " + e.message; });
