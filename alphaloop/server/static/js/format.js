// How every number, date and status is written on the page: one place, so a figure reads the
// same in every view (and as the command line prints it: 4 significant digits, fractions as
// percentages, money with thousands separators, dates as YYYY-MM-DD).

const DASH = "\u2013";

// A measure to `sig` significant digits (default 4): 0.1155380762 -> "0.1155", 1 -> "1.000".
export function num(x, sig = 4) {
  if (x == null || x === "" || Number.isNaN(Number(x))) return DASH;
  const v = Number(x);
  if (!Number.isFinite(v)) return v > 0 ? "\u221e" : "-\u221e";
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-4 || a >= 1e6)) return v.toExponential(sig - 1);
  // at most 4 decimals: a column of objectives lines up (0.0007220 reads 0.0007)
  const digits = a === 0 ? 0 : Math.min(4, Math.max(0, sig - 1 - Math.floor(Math.log10(a))));
  return v.toFixed(digits);
}
// A count: 2262 -> "2,262".
export function count(x) { return x == null ? DASH : Number(x).toLocaleString("en-US", { maximumFractionDigits: 0 }); }
// A signed number: "+0.16", "-0.20".
export function signed(x, sig = 3) { return x == null ? DASH : (x > 0 ? "+" : "") + num(x, sig); }
// A fraction as a percentage: 0.187 -> "18.7%".
export function pct(x, digits = 1) {
  if (x == null || !Number.isFinite(Number(x))) return DASH;
  return (100 * Number(x)).toFixed(digits) + "%";
}
export function signedPct(x, digits = 2) { return x == null ? DASH : (x > 0 ? "+" : "") + pct(x, digits); }
// Money, whole units with thousands separators: 97509.195 -> "97,509".
export function money(x, digits = 0) {
  if (x == null || !Number.isFinite(Number(x))) return DASH;
  return Number(x).toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
}
export function signedMoney(x, digits = 0) { return x == null ? DASH : (x > 0 ? "+" : "") + money(x, digits); }
// A journal timestamp (ISO 8601, UTC) as "2026-11-28 06:25 UTC"; a date stays a date.
export function when(iso) {
  if (!iso) return DASH;
  const s = String(iso);
  return s.length <= 10 ? s : s.slice(0, 10) + " " + s.slice(11, 16) + " UTC";
}
export function seconds(s) {
  if (s == null) return DASH;
  if (s < 60) return num(s, 3) + " s";
  if (s < 3600) return num(s / 60, 3) + " min";
  return num(s / 3600, 3) + " h";
}

// The metrics a trial carries, in the command line's order, each with its unit.
export const METRICS = [
  ["sharpe", "Sharpe", num], ["sortino", "Sortino", num], ["calmar", "Calmar", num],
  ["annual_return", "annual return", (v) => pct(v, 2)], ["total_return", "total return", (v) => pct(v, 2)],
  ["volatility", "volatility", (v) => pct(v, 2)], ["max_drawdown", "max drawdown", (v) => pct(v, 2)],
  ["cvar_95", "CVaR 95% (daily)", (v) => pct(v, 2)], ["annual_turnover", "annual turnover", (v) => num(v, 3)],
  ["hit_rate", "hit rate", (v) => pct(v, 1)], ["profit_factor", "profit factor", (v) => num(v, 3)],
  ["n_days", "days", count],
];
const METRIC_BY_NAME = Object.fromEntries(METRICS.map(([k, label, f]) => [k, { label, f }]));
export function metricLabel(name) { return METRIC_BY_NAME[name]?.label ?? name.replace(/_/g, " "); }
export function metric(name, value) { return (METRIC_BY_NAME[name]?.f ?? num)(value); }

// A knob's value: integers as they are, floats to 4 significant digits.
export function knob(value) {
  if (typeof value !== "number") return String(value ?? DASH);
  return Number.isInteger(value) && Math.abs(value) < 1e6 ? value.toLocaleString("en-US") : num(value);
}

// The one status vocabulary (the server's, alphaloop.journal.status): each with its colour.
export const STATUSES = ["running", "keep", "discard", "raced out", "ran", "crash", "timeout", "invalid"];
export function statusClass(status) { return "status status-" + String(status).replace(/\s+/g, "-"); }

// "-0.20 Sharpe (p 0.90)": the pick against a reference on TEST, or why there is none.
export function versus(c) {
  if (!c) return DASH;
  if (c.note) return c.note;
  return `${signed(c.difference, 2)} Sharpe (p ${num(c.p_value, 2)})${c.beats ? " \u2713" : ""}`;
}
// {"labelled": 3, "unlabelled": 1} -> "3 labelled, 1 unlabelled"
export function counts(v) {
  if (v == null || typeof v !== "object") return String(v ?? 0);
  return Object.entries(v).map(([k, n]) => `${typeof n === "object" ? counts(n) : n} ${k.replace(/_/g, " ")}`).join(", ");
}
export { DASH };
