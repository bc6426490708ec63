// medspot live: the box of the nth visible, hit-testable element matching a locator.
(loc) => {
  const norm = (s) => (s || '').replace(/\s+/g, ' ').trim();
  // an element's names: its visible text, then aria-label, title, value, alt (icon buttons)
  const namesOf = (el) => [el.innerText, el.getAttribute('aria-label'), el.getAttribute('title'),
    typeof el.value === 'string' ? el.value : '', el.getAttribute('alt')].map(norm).filter((n) => n);
  let els;
  if (loc.css) els = Array.from(document.querySelectorAll(loc.css));
  else if (loc.data_cy) els = Array.from(document.querySelectorAll('[data-cy]'));
  else if (loc.role) els = Array.from(document.getElementsByTagName(loc.role));
  else els = Array.from(document.body.querySelectorAll('*'));
  if (loc.data_cy) els = els.filter((e) => e.getAttribute('data-cy') === loc.data_cy);
  if (loc.role) els = els.filter((e) => e.tagName.toLowerCase() === loc.role.toLowerCase());
  const structural = !!(loc.css || loc.data_cy || loc.role);
  const textOk = (el) => {
    if (loc.text === undefined && loc.contains === undefined) return true;
    const raw = el.textContent || '';
    const needle = loc.text !== undefined ? loc.text : loc.contains;
    if (!raw.includes(needle) && !el.getAttribute('aria-label') && !el.getAttribute('title') &&
        typeof el.value !== 'string' && !el.getAttribute('alt')) return false;
    const names = namesOf(el);
    return loc.text !== undefined ? names.includes(norm(loc.text))
      : names.some((n) => n.includes(norm(loc.contains)));
  };
  els = els.filter(textOk);
  if (!structural && (loc.text !== undefined || loc.contains !== undefined)) {
    // the innermost matches: an element none of whose matching descendants is also listed
    const set = new Set(els);
    els = els.filter((e) => !Array.from(e.querySelectorAll('*')).some((d) => set.has(d)));
  }
  const vw = window.innerWidth, vh = window.innerHeight;
  const hits = [];
  for (const el of els) {
    const r = el.getBoundingClientRect();
    if (r.width < 1 || r.height < 1) continue;
    const st = getComputedStyle(el);
    if (st.visibility === 'hidden' || st.display === 'none' || Number(st.opacity) === 0) continue;
    const cx = r.left + r.width / 2, cy = r.top + r.height / 2;
    if (cx < 0 || cy < 0 || cx >= vw || cy >= vh) continue;
    const hit = document.elementFromPoint(cx, cy);
    if (!hit || !(hit === el || el.contains(hit))) continue;
    hits.push([Math.max(0, r.left), Math.max(0, r.top), Math.min(vw, r.right), Math.min(vh, r.bottom)]);
  }
  return hits.length > loc.nth ? hits[loc.nth] : null;
}
