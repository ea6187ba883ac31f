// What every view is checked for (tests/server/test_page_views.py), evaluated in the page: the
// elements that stick out of their panel (or the page), buttons out of sight in a table, a
// chart's titles out of the chart, and numbers printed with more than 6 significant digits.
() => {
  const out = { overflow: [], hidden: [], digits: [], missing: [] };
  const vw = document.documentElement.clientWidth;
  if (document.documentElement.scrollWidth > vw) out.overflow.push('page ' + document.documentElement.scrollWidth);
  const name = (e) => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + (typeof e.className === 'string' && e.className ? '.' + e.className.split(' ')[0] : '');
  for (const e of document.querySelectorAll('main *, header *')) {
    if (e.closest('.js-plotly-plot') && !e.classList.contains('js-plotly-plot')) continue;
    const r = e.getBoundingClientRect();
    if (!r.width || !r.height) continue;
    const box = e.closest('.scroll') && e.closest('.scroll') !== e ? e.closest('.scroll') : e.parentElement.closest('.panel, section, header, main, .kpi');
    if (!box) continue;
    const b = box.getBoundingClientRect();
    if (box.classList.contains('scroll')) {
      if (e.matches('button, a.button, input, select') && (r.right > b.right + 1 || r.left < b.left - 1)) out.hidden.push(name(e) + ' ' + Math.round(r.right) + '>' + Math.round(b.right));
      continue;
    }
    if (r.right > b.right + 1 || r.left < b.left - 1) out.overflow.push(name(e) + ' ' + Math.round(r.right) + '>' + Math.round(b.right) + ' in ' + name(box));
    if (getComputedStyle(e).overflowX === 'hidden' && e.scrollWidth > e.clientWidth + 1 && !e.closest('.js-plotly-plot')) out.overflow.push('cut ' + name(e));
  }
  // a chart's title and axis titles within the chart
  for (const t of document.querySelectorAll('.js-plotly-plot .gtitle, .js-plotly-plot .xtitle, .js-plotly-plot .ytitle')) {
    const r = t.getBoundingClientRect(), b = t.closest('.js-plotly-plot').getBoundingClientRect();
    if (r.width && (r.right > b.right + 1 || r.left < b.left - 1)) out.overflow.push('chart title ' + t.textContent.slice(0, 40));
  }
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const p = n.parentElement;
    if (!p || p.closest('.mono, pre, code, textarea, script, style, option, #toast') || p.closest('[hidden]')) continue;
    // a value that was missing, printed as such
    if (/\b(undefined|NaN)\b|^\s*null\s*$/.test(n.textContent)) out.missing.push(name(p) + ': ' + n.textContent.slice(0, 60));
    const text = n.textContent.replace(/[sw]-\d{8}-\d{6}-\w+/g, ' ').replace(/\d{4}-\d{2}-\d{2}/g, ' ').replace(/\d{1,2}:\d{2}(:\d{2})?/g, ' ').replace(/#\d+/g, ' ');
    for (const m of text.matchAll(/\d[\d,]*(\.\d+)?(e[-+]?\d+)?/gi)) {
      // significant digits: no leading zeros, nor an integer's trailing ones (1,000,000 has 1)
      let mantissa = m[0].split(/e/i)[0];
      if (!mantissa.includes('.')) mantissa = mantissa.replace(/0+$/, '');
      mantissa = mantissa.replace(/[,.]/g, '').replace(/^0+/, '');
      if (mantissa.length > 6) out.digits.push(m[0] + ' in ' + name(p) + ': ' + n.textContent.slice(0, 60));
    }
  }
  return out;
}
