// medspot live: what a click at (x, y) hits, lifted to its nearest interactive ancestor.
([x, y]) => {
  const norm = (s) => (s || '').replace(/\s+/g, ' ').trim();
  let el = document.elementFromPoint(x, y);
  if (!el) return null;
  const interactive = 'a,button,input,select,textarea,label,li,[role],[data-cy],[onclick],canvas';
  el = el.closest(interactive) || el;
  const path = [];
  for (let e = el; e && e.nodeType === 1 && e !== document.documentElement; e = e.parentElement) {
    let part = e.tagName.toLowerCase();
    if (e.id) { path.unshift(part + '#' + e.id); break; }
    const sib = e.parentElement ? Array.from(e.parentElement.children).filter((c) => c.tagName === e.tagName) : [];
    if (sib.length > 1) part += ':nth-of-type(' + (sib.indexOf(e) + 1) + ')';
    path.unshift(part);
  }
  const r = el.getBoundingClientRect();
  const name = norm(el.innerText) || norm(el.getAttribute('aria-label')) || norm(el.getAttribute('title')) || norm(el.value);
  return { key: path.join(' > '), role: el.tagName.toLowerCase(), name: name.slice(0, 120),
           box: [r.left, r.top, r.right, r.bottom] };
}
