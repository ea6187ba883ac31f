// What a user came for, in reach (tests/server/test_page_views.py), evaluated in the page: every
// chart's title, legend and axis titles inside the drawn chart (above and below too) and the
// viewport, and not under its toolbar; every table's key column in view: a column past its
// box's edge is cut on a desktop,
// and on a phone allowed only when the first (key) column stays put (sticky) as the rest
// scrolls; the columns of a side-by-side table (each column one of the things compared) are
// all in view at every width.
() => {
  const out = { chart: [], column: [] };
  const vw = document.documentElement.clientWidth, phone = vw < 600;
  const SIDES = '#compare-table, #compare-metrics, #compare-config, #report-metrics';
  const shown = (e) => { const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0 && getComputedStyle(e).display !== 'none' && getComputedStyle(e).visibility !== 'hidden'; };
  const meets = (a, b) => a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1;
  for (const c of document.querySelectorAll('.js-plotly-plot')) {
    if (!shown(c)) continue;
    const svg = c.querySelector('.main-svg'), box = (svg || c).getBoundingClientRect(), id = c.id || '(chart)';
    const parts = [['title', '.gtitle'], ['x-axis title', '.xtitle'], ['y-axis title', '.ytitle'], ['right y-axis title', '.y2title'], ['legend', '.legend .traces']];
    for (const [what, sel] of parts) {
      for (const t of c.querySelectorAll(sel)) {
        const r = t.getBoundingClientRect();
        if (!r.width) continue;
        const text = (t.textContent || '').slice(0, 30);
        if (r.left < Math.max(box.left, 0) - 1 || r.right > Math.min(box.right, vw) + 1 || r.top < box.top - 1 || r.bottom > box.bottom + 1) out.chart.push(`${id}: ${what} cut (${text})`);
      }
    }
    const title = c.querySelector('.gtitle'), bar = c.querySelector('.modebar');
    if (title && bar && shown(bar) && meets(title.getBoundingClientRect(), bar.getBoundingClientRect())) out.chart.push(`${id}: the toolbar covers the title`);
  }
  for (const t of document.querySelectorAll('table.grid')) {
    const head = t.querySelector('thead');
    if (!shown(t) || !head || !shown(head)) continue;  // a table of cards has no columns
    const box = (t.closest('.scroll') || t.parentElement).getBoundingClientRect();
    const edge = Math.min(box.right, vw), ths = [...head.querySelectorAll('th')].filter(shown);
    const key = ths[0], sticky = key && getComputedStyle(key).position === 'sticky' && getComputedStyle(key).left !== 'auto';
    const sides = t.matches(SIDES);
    for (const th of ths) {
      if (th.getBoundingClientRect().right <= edge + 1) continue;
      if (phone && sticky && !sides) continue;  // scrolls beside its key column
      out.column.push(`#${t.id || '(table)'}: "${th.textContent.trim().slice(0, 30)}" cut at ${Math.round(edge)}`);
    }
  }
  return out;
}
