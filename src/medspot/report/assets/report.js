// medspot report: filters on the task pages. No network, no data read from elsewhere.
(function () {
  "use strict";
  function apply() {
    var selects = document.querySelectorAll("select[data-filter]");
    var tasks = document.querySelectorAll(".task");
    var shown = 0;
    tasks.forEach(function (t) {
      var ok = true;
      selects.forEach(function (s) {
        var want = s.value;
        if (want === "") { return; }
        var have = (t.getAttribute("data-" + s.getAttribute("data-filter")) || "").split(" ");
        if (have.indexOf(want) < 0) { ok = false; }
      });
      t.classList.toggle("hidden", !ok);
      if (ok) { shown += 1; }
    });
    var count = document.getElementById("shown-count");
    if (count) { count.textContent = shown + " of " + tasks.length + " tasks shown"; }
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("select[data-filter]").forEach(function (s) {
      s.addEventListener("change", apply);
    });
    apply();
  });
})();
