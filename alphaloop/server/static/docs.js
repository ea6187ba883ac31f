// The API reference: the server's OpenAPI schema as a list of routes, drawn with no library.
"use strict";

function el(tag, text, cls) { const e = document.createElement(tag); if (text != null) e.textContent = text; if (cls) e.className = cls; return e; }
function typeOf(schema) {
  if (!schema) return "";
  if (schema.$ref) return schema.$ref.split("/").pop();
  if (schema.anyOf) return schema.anyOf.map(typeOf).join(" | ");
  if (schema.type === "array") return typeOf(schema.items) + "[]";
  return schema.type || "";
}
function limits(schema) {
  const s = schema || {}, parts = [];
  for (const [k, sym] of [["minimum", ">="], ["maximum", "<="], ["exclusiveMinimum", ">"], ["exclusiveMaximum", "<"]]) if (s[k] != null) parts.push(sym + " " + s[k]);
  if (s.pattern) parts.push("pattern " + s.pattern);
  if (s.enum) parts.push("one of " + s.enum.join(", "));
  return parts.join(", ");
}
function schemaTable(rows) {
  const t = el("table", null, "grid"), head = el("tr");
  for (const h of ["name", "in", "type", "limits", "description"]) head.append(el("th", h));
  t.append(el("thead")); t.tHead.append(head);
  const body = el("tbody"); for (const r of rows) { const tr = el("tr"); for (const v of r) tr.append(el("td", v)); body.append(tr); }
  t.append(body); return el("div", null, "scroll").appendChild(t).parentNode;
}
function bodyRows(spec, op) {
  const content = op.requestBody && op.requestBody.content && op.requestBody.content["application/json"];
  if (!content) return [];
  const name = typeOf(content.schema), model = spec.components.schemas[name] || content.schema;
  return Object.entries(model.properties || {}).map(([k, s]) => [k, "body", typeOf(s) || typeOf(s.anyOf && s.anyOf[0]), limits(s), s.description || ""]);
}
async function main() {
  const spec = await (await fetch("/openapi.json")).json();
  const out = document.getElementById("routes"); out.replaceChildren();
  for (const [path, ops] of Object.entries(spec.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      const sec = el("section"); sec.dataset.route = method.toUpperCase() + " " + path;
      sec.append(el("h2", method.toUpperCase() + " " + path));
      if (op.description || op.summary) sec.append(el("p", op.description || op.summary, "muted"));
      const rows = (op.parameters || []).map((p) => [p.name, p.in, typeOf(p.schema), limits(p.schema), p.description || ""]).concat(bodyRows(spec, op));
      if (rows.length) sec.append(schemaTable(rows));
      out.append(sec);
    }
  }
}
main().catch((e) => { document.getElementById("routes").textContent = "could not read /openapi.json: " + e.message; });
