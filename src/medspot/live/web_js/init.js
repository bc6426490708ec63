// medspot live: DOM-quiet watcher, installed before the page's own scripts (every frame).
(() => {
  if (window.__medspot) return;
  const state = { last: performance.now(), mutations: 0 };
  const touch = () => { state.last = performance.now(); state.mutations += 1; };
  new MutationObserver(touch).observe(document, {
    subtree: true, childList: true, attributes: true, characterData: true,
  });
  window.addEventListener('hashchange', touch);
  window.addEventListener('popstate', touch);
  window.__medspot = {
    idleMs: () => performance.now() - state.last,
    get mutations() { return state.mutations; },
  };
})();
