(function () {
  "use strict";
  var root = document.documentElement;
  var table = document.getElementById("checks-table");
  var filters = document.getElementById("filters");
  if (table && filters) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var q = document.getElementById("q");
    var oc = document.getElementById("oc");
    var shown = document.getElementById("shown");
    var apply = function () {
      var text = q.value.toLowerCase();
      var want = oc.value;
      var n = 0;
      rows.forEach(function (r) {
        var ok = (!want || r.getAttribute("data-outcome") === want) &&
          (!text || r.textContent.toLowerCase().indexOf(text) !== -1);
        r.hidden = !ok;
        if (ok) { n += 1; }
      });
      var fmt = shown.getAttribute("data-fmt") || "{shown} of {total} shown";
      shown.textContent = fmt.replace("{shown}", String(n)).replace("{total}", String(rows.length));
    };
    q.addEventListener("input", apply);
    oc.addEventListener("change", apply);
    var heads = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(heads, function (th) {
      var k = th.getAttribute("data-k");
      if (k === null) { return; }
      th.classList.add("sortable");
      th.tabIndex = 0;
      var dir = 1;
      var sort = function () {
        var i = parseInt(k, 10);
        var num = th.getAttribute("data-num") === "1";
        var key = function (r) {
          var c = r.cells[i];
          if (num) {
            var v = parseFloat(c.getAttribute("data-v"));
            return isNaN(v) ? -Infinity : v;
          }
          return c.textContent.trim().toLowerCase();
        };
        rows.sort(function (a, b) {
          var x = key(a), y = key(b);
          return x < y ? -dir : x > y ? dir : 0;
        });
        rows.forEach(function (r) { body.appendChild(r); });
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", dir > 0 ? "ascending" : "descending");
        dir = -dir;
      };
      th.addEventListener("click", sort);
      th.addEventListener("keydown", function (e) { if (e.key === "Enter") { sort(); } });
    });
    filters.hidden = false;
    apply();
  }
  window.addEventListener("beforeprint", function () {
    Array.prototype.forEach.call(document.querySelectorAll("details"), function (d) { d.open = true; });
  });
  root.setAttribute("data-report-js", "ok");
})();
