// Sort a table by a clicked heading and filter its rows by text. Reads and reorders the
// DOM only: no request leaves the page.
"use strict";
(function () {
  function cellValue(row, i) {
    var text = row.cells[i] ? row.cells[i].textContent.trim() : "";
    var num = Number(text);
    return text !== "" && !isNaN(num) ? num : text.toLowerCase();
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    var body = table.tBodies[0];
    table.querySelectorAll("thead th").forEach(function (th, i) {
      th.addEventListener("click", function () {
        var asc = th.getAttribute("data-sort") !== "asc";
        table.querySelectorAll("thead th").forEach(function (o) { o.removeAttribute("data-sort"); });
        th.setAttribute("data-sort", asc ? "asc" : "desc");
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = cellValue(a, i), y = cellValue(b, i);
          if (typeof x !== typeof y) { x = String(x); y = String(y); }
          return (x < y ? -1 : x > y ? 1 : 0) * (asc ? 1 : -1);
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
  var box = document.getElementById("quickfilter");
  if (box) {
    box.addEventListener("input", function () {
      var q = box.value.toLowerCase();
      document.querySelectorAll("table.sortable tbody tr").forEach(function (r) {
        r.classList.toggle("hidden", q !== "" && r.textContent.toLowerCase().indexOf(q) < 0);
      });
    });
  }
})();
// Tells a test (and a curious reader of the DOM) that the script ran under the page's policy.
document.documentElement.setAttribute("data-ui", "ready");
