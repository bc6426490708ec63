// medspot live: DOM-quiet watcher, installed before the page's own scripts (every frame).
(() => {
  if (window.__medspot) return;
  const state = { last: performance.now(), mutations: 0 };
  const touch = () => { state.last = performance.now(); state.mutations += 1; };
  new MutationObserver(touch).observe(document, {
    subtree: true, childList: true, attributes: true, characterData: true,
  });
  // changes that are not DOM mutations: navigation, form values, scrolling
  for (const ev of ['hashchange', 'popstate', 'input', 'change', 'scroll']) {
    window.addEventListener(ev, touch, true);
  }
  window.__medspot = {
    idleMs: () => performance.now() - state.last,
    get mutations() { return state.mutations; },
  };
})();
