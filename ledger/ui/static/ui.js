// Sort a table by a clicked heading, filter its rows by text, pick its columns, and show the
// runs a compare link names. Reads and changes the DOM only: no request leaves the page.
"use strict";
(function () {
  function cellValue(row, i) {
    var cell = row.cells[i];
    // A cell may carry the value to sort by (a duration's seconds) beside the text it shows.
    var text = !cell ? "" : cell.hasAttribute("data-sort") ? cell.getAttribute("data-sort") : cell.textContent.trim();
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
  // Column picker: a column ticked off is hidden in the heading and every row.
  document.querySelectorAll("input.col-toggle").forEach(function (box) {
    box.addEventListener("change", function () {
      var key = box.getAttribute("data-col");
      document.querySelectorAll('#runs [data-col="' + key + '"]').forEach(function (cell) {
        cell.classList.toggle("col-off", !box.checked);
      });
    });
  });
  // A table wider than the window hides config columns, then metric columns, the rightmost
  // first, until it fits (the picker shows them again): the id, name, status, tags and verdict
  // are never pushed off screen.
  var runs = document.getElementById("runs");
  if (runs) {
    var fits = function () {
      return document.documentElement.scrollWidth <= document.documentElement.clientWidth;
    };
    var order = [];
    ["p-", "m-last-", "duration"].forEach(function (prefix) {
      var shown = Array.prototype.filter.call(
        document.querySelectorAll("input.col-toggle"),
        function (b) { return b.checked && b.getAttribute("data-col").indexOf(prefix) === 0; });
      order = order.concat(shown.reverse());
    });
    while (!fits() && order.length > 0) {
      var toggle = order.shift();
      toggle.checked = false;
      toggle.dispatchEvent(new Event("change"));
    }
    runs.setAttribute("data-fits", fits() ? "yes" : "no");
  }
  // The tick heading ticks every run shown, or none when all are ticked.
  document.querySelectorAll("th.pick-all").forEach(function (th) {
    th.addEventListener("click", function (e) {
      e.stopPropagation();
      var picks = document.querySelectorAll("#runs tbody tr:not(.hidden) input.pick");
      var all = Array.prototype.every.call(picks, function (p) { return p.checked; });
      picks.forEach(function (p) { p.checked = !all; });
    });
  });
  // A static report's compare and parallel pages hold every reported run: ?run=ID&run=ID
  // (what ticking runs on the index sends) shows only those.
  var wanted = new URLSearchParams(window.location.search).getAll("run");
  document.querySelectorAll(".run-filter").forEach(function (area) {
    if (wanted.length === 0) { return; }
    area.querySelectorAll("[data-run]").forEach(function (el) {
      var run = el.getAttribute("data-run");
      if (run && wanted.indexOf(run) < 0) { el.classList.add("hidden"); }
    });
    area.setAttribute("data-shown", String(wanted.length));
  });
  var metric = document.getElementById("pc-metric");
  if (metric) {
    var choose = function () {
      document.querySelectorAll("figure.pc-box").forEach(function (f) {
        f.classList.toggle("hidden", f.getAttribute("data-metric") !== metric.value);
      });
    };
    var asked = new URLSearchParams(window.location.search).get("metric");
    if (asked !== null) {
      Array.prototype.forEach.call(metric.options, function (o) {
        if (o.value === asked) { metric.value = asked; }
      });
    }
    metric.addEventListener("change", choose);
    choose();
  }
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
