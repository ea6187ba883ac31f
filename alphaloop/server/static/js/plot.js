// plotly.js, served by the server from the installed plotly package (no network), run once
// when the first chart is drawn: after the next frame, so what is drawn already (tables, a
// preview) is painted before its second of parsing on a cold load.
import { el } from "./dom.js";

let loading = null;
export function plotlyReady() {
  if (window.Plotly) return Promise.resolve();
  loading = loading || new Promise((resolve, reject) => requestAnimationFrame(() => setTimeout(() => {
    const script = document.createElement("script");
    script.src = document.getElementById("plotly-js").href;
    script.onload = resolve; script.onerror = () => reject(new Error("plotly.js did not load"));
    document.head.append(script);
  }, 0)));
  return loading;
}

const FONT = { family: "system-ui, sans-serif", size: 12, color: "#1d2330" };
// The page's look for every chart: compact margins, the legend above the plot (it never takes
// the plot's width on a phone), 4 significant digits on hover.
// A title wrapped to lines of about `width` characters (plotly draws "<br>" as a line break).
function wrap(text, width) {
  const lines = [""];
  for (const word of String(text).split(" ")) {
    const last = lines[lines.length - 1];
    if (last && (last + " " + word).length > width) lines.push(word); else lines[lines.length - 1] = last ? last + " " + word : word;
  }
  return lines;
}

export function layout(extra = {}) {
  const narrow = window.innerWidth < 600;
  // on a phone a long title takes as many lines as it needs, never more than the width
  // (plotly centres a title's lines on its anchor: a title of n lines is padded down by n - 1
  // half lines, or its first line is drawn above the chart)
  const lines = extra.title ? wrap(extra.title, narrow ? Math.floor((window.innerWidth - 60) / 8.5) : 200) : [];
  if (extra.title) extra = { ...extra, title: lines.join("<br>") };
  const base = { l: narrow ? 48 : 64, r: 16, t: extra.title ? 46 + 18 * lines.length : 28, b: 48 };
  const margin = { ...base, ...(extra.margin || {}) };
  margin.t = Math.max(base.t, margin.t);
  if (narrow) margin.l = Math.min(margin.l, 100);
  return {
    font: FONT,
    legend: { orientation: "h", y: 1.01, yanchor: "bottom", x: 0, font: { size: 11 } },
    hoverlabel: { namelength: -1 }, paper_bgcolor: "#fff", plot_bgcolor: "#fff",
    ...extra,
    margin,
    title: extra.title ? { text: extra.title, font: { size: 14 }, x: 0, xanchor: "left", xref: "container", y: 1, yref: "container", yanchor: "top", pad: { t: 8 + 12 * (lines.length - 1), l: 8 } } : undefined,
  };
}

// A figure the server drew (plotly JSON), in the page's look: its title wrapped on a phone.
export function ours(fig) {
  const title = fig.layout?.title?.text ?? fig.layout?.title;
  const { title: _, margin: __, ...rest } = fig.layout || {};
  return { data: fig.data, layout: layout({ ...rest, title: title ? String(title).replace(/<[^>]+>/g, " ") : undefined }) };
}

// Counted on the plotted traces: plotly.js has decoded any binary-encoded arrays by then.
export function countPoints(div) {
  return (div.data || []).reduce((n, tr) => n + ((tr.x || tr.y || tr.dimensions?.[0]?.values || []).length || 0), 0);
}

// Draws fig into div (an element or id) at height px; div.dataset.points counts what it drew.
export async function plot(div, fig, height = 320) {
  await plotlyReady();
  const node = typeof div === "string" ? document.getElementById(div) : div;
  if (!node.isConnected) return;
  node.querySelector("canvas.preview")?.remove();
  // a legend of more than one row (long names, a narrow chart) takes room above the plot, not
  // the title's: rows estimated at 7 px a character and 40 px a swatch
  const lay = { ...fig.layout, autosize: true, height };
  const named = (fig.data || []).filter((t) => t.name && t.showlegend !== false && t.type !== "parcoords");
  if (lay.margin && lay.showlegend !== false && named.length > 1) {
    const width = (node.clientWidth || 600) - lay.margin.l - lay.margin.r;
    const rows = Math.ceil(named.reduce((w, t) => w + 7 * String(t.name).length + 40, 0) / Math.max(width, 100));
    lay.margin = { ...lay.margin, t: lay.margin.t + 20 * Math.max(0, rows - 1) };
  }
  Plotly.react(node, fig.data, lay, { responsive: true, displaylogo: false, modeBarButtonsToRemove: ["lasso2d", "select2d"] });
  node.dataset.points = String(countPoints(node));
}

// A date axis for daily data: dates, never hours. A span of a few days gets one tick a day; a
// single day is shown a day either side (plotly would zoom into its hours).
const DAY = 864e5;
export function dateAxis(dates, extra = {}) {
  const t = (dates || []).map((d) => Date.parse(d)).filter(Number.isFinite);
  const lo = t.length ? Math.min(...t) : NaN, hi = t.length ? Math.max(...t) : NaN;
  const axis = { type: "date", tickformat: "%Y-%m-%d", hoverformat: "%Y-%m-%d", ...extra };
  if (t.length && hi - lo < 10 * DAY) { axis.dtick = DAY; axis.tick0 = new Date(lo).toISOString().slice(0, 10); }
  if (t.length && hi - lo < DAY) axis.range = [new Date(lo - DAY).toISOString().slice(0, 10), new Date(hi + DAY).toISOString().slice(0, 10)];
  return axis;
}

export function chartBox(id, cls = "chart") { return el("div", { class: cls, id, dataset: { points: "0" } }); }
